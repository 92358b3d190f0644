//! Named windows (`WINDOW w AS (PARTITION BY g ORDER BY v)`, `OVER w`, `OVER (w ROWS …)`)
//! written into the OVER clauses that name them, so the window analysis sees every spec where
//! it is used. A reference to a named window takes its PARTITION BY, its ORDER BY unless the
//! reference has its own, and its frame unless the reference has its own, as SQL defines it; a
//! named window may itself build on another.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Ident, NamedWindowExpr, Select, VisitMut, VisitorMut, WindowSpec, WindowType,
};

use super::reasons::Why;
use super::{full, R};

/// `s` with every named window inlined and its WINDOW clause gone.
pub(super) fn inline(s: &Select) -> R<Select> {
    if s.named_window.is_empty() {
        return Ok(s.clone());
    }
    let mut out = s.clone();
    out.named_window.clear();
    let mut inliner = Inliner { s, failed: false };
    let _ = out.projection.visit(&mut inliner);
    let _ = out.qualify.visit(&mut inliner);
    if inliner.failed {
        return full(Why::NamedWindow);
    }
    Ok(out)
}

struct Inliner<'s> {
    s: &'s Select,
    failed: bool,
}

impl Inliner<'_> {
    /// The spec a named window stands for, following the windows it builds on; None when it
    /// is not defined (or the chain does not end).
    fn named(&self, name: &Ident, depth: usize) -> Option<WindowSpec> {
        if depth > self.s.named_window.len() {
            return None;
        }
        let def = self
            .s
            .named_window
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(&name.value))?;
        match &def.1 {
            NamedWindowExpr::NamedWindow(other) => self.named(other, depth + 1),
            NamedWindowExpr::WindowSpec(spec) => self.resolved(spec, depth + 1),
        }
    }

    /// `spec` with the named window it builds on (if any) written in.
    fn resolved(&self, spec: &WindowSpec, depth: usize) -> Option<WindowSpec> {
        let Some(base) = &spec.window_name else {
            return Some(spec.clone());
        };
        let base = self.named(base, depth)?;
        Some(WindowSpec {
            window_name: None,
            partition_by: base.partition_by,
            order_by: if spec.order_by.is_empty() {
                base.order_by
            } else {
                spec.order_by.clone()
            },
            window_frame: spec.window_frame.clone().or(base.window_frame),
        })
    }
}

impl VisitorMut for Inliner<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let spec = match &f.over {
            Some(WindowType::NamedWindow(name)) => self.named(name, 0),
            Some(WindowType::WindowSpec(spec)) if spec.window_name.is_some() => {
                self.resolved(spec, 0)
            }
            _ => return ControlFlow::Continue(()),
        };
        match spec {
            Some(spec) => f.over = Some(WindowType::WindowSpec(spec)),
            None => self.failed = true,
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::SetExpr;

    use super::inline;
    use crate::text::parse_query;

    fn inlined(q: &str) -> Option<String> {
        let SetExpr::Select(s) = *parse_query(q).unwrap().body else {
            panic!("not a select: {q}");
        };
        inline(&s).ok().map(|s| s.to_string())
    }

    #[test]
    fn references_take_the_named_spec_and_keep_their_own_parts() {
        let out = inlined(
            "SELECT rank() OVER w AS r, sum(v) OVER (w2 ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) \
             FROM t WINDOW w AS (PARTITION BY g ORDER BY v), w2 AS (w ORDER BY k)",
        )
        .unwrap();
        assert_eq!(
            out,
            "SELECT rank() OVER (PARTITION BY g ORDER BY v) AS r, sum(v) OVER (PARTITION BY g \
             ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t"
        );
    }

    #[test]
    fn an_undefined_or_circular_name_is_refused() {
        assert_eq!(
            inlined("SELECT rank() OVER x FROM t WINDOW w AS (ORDER BY v)"),
            None
        );
        assert_eq!(
            inlined("SELECT rank() OVER a FROM t WINDOW a AS b, b AS a"),
            None
        );
    }
}
