//! `count(DISTINCT x)`, `sum(DISTINCT x)`, `avg(DISTINCT x)`: state `v` = the value itself.
//! Whether a changed row adds or removes a distinct value depends on the group's other rows,
//! so every group the change touches is recomputed from the base data; groups it does not
//! touch keep their stored value, which is what makes the refresh incremental. Not invertible.
//! Views created before `by_value` keep this rule, and so do floating-point values.

use super::{Aggregator, StateCol};
use crate::ir::{bare, call_distinct, col, Expr};

pub struct Distinct {
    function: &'static str,
    label: &'static str,
}

pub const COUNT: Distinct = Distinct {
    function: "count",
    label: "count(distinct)",
};
pub const SUM: Distinct = Distinct {
    function: "sum",
    label: "sum(distinct)",
};
pub const AVG: Distinct = Distinct {
    function: "avg",
    label: "avg(distinct)",
};

fn v(slot: usize) -> String {
    format!("v_{slot}")
}

impl Aggregator for Distinct {
    fn name(&self) -> &'static str {
        self.label
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::value(v(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        vec![call_distinct(
            self.function,
            arg.expect("a distinct aggregate has an argument"),
        )]
    }
    /// The change carries nothing: the touched group is recomputed.
    fn change_state(&self, _slot: usize, _arg: Option<Expr>, _mult: Expr) -> Vec<(String, Expr)> {
        Vec::new()
    }
    fn combine(&self, slot: usize, s: &'static str, _d: &'static str) -> Vec<Expr> {
        vec![col(s, v(slot))]
    }
    fn insert(&self, _slot: usize, _d: &'static str) -> Vec<Expr> {
        vec![Expr::Null]
    }
    fn value(&self, slot: usize) -> Expr {
        bare(v(slot))
    }
    fn recompute_when(&self, _slot: usize, _s: &'static str, _d: &'static str) -> Option<Expr> {
        Some(Expr::Bool(true))
    }
    fn invertible(&self) -> bool {
        false
    }
}
