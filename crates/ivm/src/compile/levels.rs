//! Visiting an expression's parts with how many subqueries deep each is: a block rewrites the
//! parts of its own level (depth 0) and leaves those inside its subqueries, which are blocks of
//! their own, to them.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, VisitMut, VisitorMut};

/// Calls `f` on every expression inside `node`, after its own parts (so a part `f` replaces is
/// not visited again), with its depth in subqueries.
pub(super) fn visit<T: VisitMut>(node: &mut T, f: impl FnMut(&mut Expr, usize)) {
    let mut v = ByDepth { f, depth: 0 };
    let _ = node.visit(&mut v);
}

struct ByDepth<F> {
    f: F,
    depth: usize,
}

impl<F: FnMut(&mut Expr, usize)> VisitorMut for ByDepth<F> {
    type Break = ();
    fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        (self.f)(e, self.depth);
        ControlFlow::Continue(())
    }
}
