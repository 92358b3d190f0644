//! An aggregate subquery whose aggregates depend on the order rows are read in (`FROM (SELECT
//! k, string_agg(v, ',' ORDER BY v) AS s FROM t GROUP BY k) x JOIN …`): the value before a
//! change cannot be computed again from the rows as they were, so the subquery's rows are kept
//! by the view. A grouped query whose keys are all among its columns has the rows of the window
//! query `SELECT DISTINCT k, string_agg(v, ',' ORDER BY v) OVER (PARTITION BY k) AS s FROM t`
//! (each aggregate over its whole partition, the group, the same on every row of it, HAVING
//! as QUALIFY), which is kept as a window subquery (`kept_window`): a refresh recomputes the
//! groups the change touches.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions_mut, Distinct, Expr, GroupByExpr, Query, Select, SelectItem, SetExpr,
    WindowSpec, WindowType,
};

use super::super::plan::{Block, Item, ItemFrom, Rel};
use super::super::text::ident;
use super::super::user_expr::UserExpr;
use super::from::column_of;
use super::support::fn_name;
use super::{Analyzer, Scope, R};

impl Analyzer<'_> {
    /// `s` as a block reading its rows kept by the view, and its column names; None when `s`
    /// does not have the form above.
    pub(super) fn kept_groups(
        &mut self,
        s: &Select,
        scope: &Scope,
    ) -> R<Option<(Rel, Vec<String>)>> {
        let Some(w) = self.as_window(s) else {
            return Ok(None);
        };
        let q: Query = crate::ir::plain_query(SetExpr::Select(Box::new(w)));
        let Some((source, names)) = self.kept_window(&q, scope)? else {
            return Ok(None);
        };
        let alias = "_mv_kg";
        let block = Block {
            items: vec![Item {
                alias: ident(alias),
                from: ItemFrom::Source(source),
            }],
            select: names
                .iter()
                .map(|c| UserExpr::new(column_of(alias, c)))
                .collect(),
            names: names.clone(),
            filter: None,
            exists: Vec::new(),
            guards: Vec::new(),
        };
        Ok(Some((Rel::Block(block), names)))
    }

    /// `s` as the window query with its rows, when its GROUP BY keys are plain expressions all
    /// selected and each column has a name of its own.
    fn as_window(&self, s: &Select) -> Option<Select> {
        let GroupByExpr::Expressions(keys, modifiers) = &s.group_by else {
            return None;
        };
        let plain = keys.is_empty()
            || !modifiers.is_empty()
            || s.distinct.is_some()
            || s.qualify.is_some()
            || !s.named_window.is_empty();
        if plain {
            return None;
        }
        let mut columns = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::ExprWithAlias { expr, .. } => columns.push(expr),
                SelectItem::UnnamedExpr(
                    e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_)),
                ) => columns.push(e),
                _ => return None,
            }
        }
        let text = |e: &Expr| e.to_string().to_lowercase();
        if !keys
            .iter()
            .all(|k| columns.iter().any(|c| text(c) == text(k)))
        {
            return None;
        }
        let spec = WindowSpec {
            window_name: None,
            partition_by: keys.clone(),
            order_by: Vec::new(),
            window_frame: None,
        };
        let mut out = s.clone();
        let over = |e: &mut Expr| {
            if let Expr::Function(f) = e {
                if f.over.is_none() && self.aggregates.contains(&fn_name(&f.name)) {
                    f.over = Some(WindowType::WindowSpec(spec.clone()));
                }
            }
            ControlFlow::<()>::Continue(())
        };
        let _ = visit_expressions_mut(&mut out.projection, over);
        let _ = visit_expressions_mut(&mut out.having, over);
        out.qualify = out.having.take();
        out.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
        out.distinct = Some(Distinct::Distinct);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::compile::tests::compiled_alone as compiled;

    /// An order-bound aggregate in a grouped subquery is kept as the window query with its
    /// rows (one per group, duplicates removed per partition); without every key among its
    /// columns, or with a column DuckDB would name, the view still recomputes.
    #[test]
    fn order_bound_groups_are_kept_as_a_distinct_window() {
        let q = "SELECT x.k, u.w FROM (SELECT k, string_agg(g, ',' ORDER BY v) AS s FROM t \
                 GROUP BY k HAVING count(*) > 1) x, u WHERE x.k = u.k";
        let c = compiled(q, 2);
        assert_eq!(c.full_reason, None);
        let [w] = c.plan.windows.as_slice() else {
            panic!("{:?}", c.plan.windows)
        };
        assert!(w.window.distinct && w.window.qualify.is_some());
        assert_eq!(w.window.functions, ["count", "string_agg"]);
        for recomputed in [
            "SELECT x.s FROM (SELECT string_agg(g, ',' ORDER BY v) AS s FROM t GROUP BY k) x",
            "SELECT x.k FROM (SELECT k, string_agg(g, ',' ORDER BY v) FROM t GROUP BY k) x, u \
             WHERE x.k = u.k",
        ] {
            let reason = compiled(recomputed, 1).full_reason;
            assert_eq!(
                reason.as_deref(),
                Some("string_agg() in an aggregate subquery")
            );
        }
    }
}
