//! Conjuncts of a block's filter that read only a kept window query's columns (`WHERE x.rn =
//! 1` over `(SELECT …, row_number() OVER (…) AS rn FROM t) x`) join that query's QUALIFY: the
//! view then keeps only the rows the block can read (one per key, not the whole table), and
//! the block still tests them. QUALIFY runs after the window functions, as the block's filter
//! does, so the rows that pass are the same. Only for a query read by one inner item so far:
//! an outer join's padding could pass a filter its kept rows fail, and another reader of the
//! same rows would lose some. A later reader of the same text gets rows of its own.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions_mut, Expr, Ident, InTarget};

use super::super::plan::{ItemFrom, Windowed};
use super::super::text::unquoted;
use super::super::user_expr::UserExpr;
use super::{Analyzer, BlockFrom};

impl Analyzer<'_> {
    /// Moves into each kept window query read by an item of `out` the `preds` over it alone.
    pub(super) fn push_into_windows(&mut self, out: &BlockFrom, preds: &[Expr]) {
        for item in &out.items {
            let ItemFrom::Source(src) = item.from else {
                continue;
            };
            let Some(k) = self.windows.iter().position(|w| w.source == src) else {
                continue;
            };
            if self.window_reads.get(&src) != Some(&1) {
                continue;
            }
            let alias = unquoted(&item.alias);
            let cols = &self.sources[src].columns;
            let w = &self.windows[k].window;
            let pushed: Vec<Expr> = preds
                .iter()
                .filter_map(|p| over_window(p, &alias, cols, w))
                .collect();
            if pushed.is_empty() {
                continue;
            }
            self.window_sources.retain(|_, s| *s != src);
            let w = &mut self.windows[k].window;
            let before = w.qualify.take().map(|q| q.ast().clone());
            w.qualify = UserExpr::all(before.into_iter().chain(pushed));
        }
    }
}

/// `p` with each `alias.column` replaced by the window query's expression for that column;
/// None when `p` reads anything else (another relation, an unqualified name, a subquery).
fn over_window(p: &Expr, alias: &str, cols: &[String], w: &Windowed) -> Option<Expr> {
    let mut out = p.clone();
    let done = visit_expressions_mut(&mut out, |e: &mut Expr| {
        let replaced = match e {
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [a, c] if a.value.eq_ignore_ascii_case(alias) => column(&c.value, cols, w),
                _ => None,
            },
            Expr::Identifier(Ident { .. })
            | Expr::Subquery(_)
            | Expr::Exists { .. }
            | Expr::In {
                target: InTarget::Subquery(_),
                ..
            } => None,
            _ => return ControlFlow::Continue(()),
        };
        match replaced {
            Some(r) => {
                *e = r;
                ControlFlow::Continue(())
            }
            None => ControlFlow::Break(()),
        }
    });
    done.is_continue().then_some(out)
}

/// The window query's expression for its column `name`, nested; None when no column or more
/// than one has that name.
fn column(name: &str, cols: &[String], w: &Windowed) -> Option<Expr> {
    let mut at = cols
        .iter()
        .enumerate()
        .filter(|(_, c)| c.eq_ignore_ascii_case(name));
    match (at.next(), at.next()) {
        (Some((i, _)), None) => Some(Expr::Nested(Box::new(w.select.get(i)?.ast().clone()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::compile::tests::compiled;

    fn qualify(q: &str) -> Option<String> {
        let c = compiled(q, 2);
        assert_eq!(c.full_reason, None, "{q}");
        let [w] = c.plan.windows.as_slice() else {
            panic!("{q}: {:?}", c.plan.windows)
        };
        w.window.qualify.as_ref().map(|e| e.ast().to_string())
    }

    /// The conjunct over the window query alone is pushed, as its expression; one reading
    /// another relation is not; nor is anything under an outer join or for a shared query.
    #[test]
    fn filters_over_a_kept_window_alone_become_its_qualify() {
        let window = "(SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) AS rn FROM t)";
        let q = format!("SELECT x.k, u.w FROM {window} x, u WHERE x.k = u.k AND x.rn = 1");
        let pushed = qualify(&q).expect("x.rn = 1 pushed");
        assert!(
            pushed.contains("row_number") && pushed.contains(") = 1"),
            "{pushed}"
        );
        assert!(!pushed.contains("u."), "{pushed}");
        let q = format!("SELECT x.k, u.w FROM {window} x JOIN u ON x.k = u.k AND x.rn < u.w");
        assert_eq!(qualify(&q), None);
        let q = format!("SELECT u.k, x.rn FROM u LEFT JOIN {window} x ON u.k = x.k WHERE x.rn = 1");
        assert_eq!(qualify(&q), None);
        let q = format!(
            "WITH w AS {window} SELECT a.k, b.rn FROM w AS a, w AS b WHERE a.k = b.k AND a.rn = 1"
        );
        assert_eq!(qualify(&q), None);
    }
}
