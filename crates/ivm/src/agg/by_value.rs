//! `count(DISTINCT x)`, `sum(DISTINCT x)`, `avg(DISTINCT x)` of a view's own aggregate, kept
//! by value: beside the storage, a table holds each group's distinct values with how many rows
//! have each (`plan::by_value`). A change nets its rows per group and value; a value whose count
//! goes from 0 to more enters the group's distinct set (+1), one whose count falls to 0 leaves
//! it (−1). Over those transitions the state is COUNT's (`n` = the distinct values) or SUM's
//! (`s` = their sum, `n`), combined as theirs are, so no group is read again:
//!
//! ```text
//! Δn(g) = Σ_v [c(g,v) = 0 < c'(g,v)] − [c(g,v) > 0 = c'(g,v)]      (c' = c + Σ mult)
//! Δs(g) = Σ_v v · (same sign)
//! ```
//!
//! Invertible. Floating-point values stay with `distinct` (their sums taken back drift).

use super::count::Count;
use super::sum::{SumOrMean, AVG, SUM};
use super::{Aggregator, StateCol};
use crate::ir::{call_distinct, Expr};

/// The distinct form of an aggregate whose state is that of `over`.
pub struct ByValue {
    over: &'static dyn Aggregator,
    function: &'static str,
    label: &'static str,
}

pub const COUNT: ByValue = ByValue {
    over: &Count,
    function: "count",
    label: "count(distinct)",
};
pub const SUM_DISTINCT: ByValue = ByValue {
    over: &SUM as &SumOrMean,
    function: "sum",
    label: "sum(distinct)",
};
pub const AVG_DISTINCT: ByValue = ByValue {
    over: &AVG as &SumOrMean,
    function: "avg",
    label: "avg(distinct)",
};

impl ByValue {
    /// Whether the state keeps the sum of the distinct values, not only their count.
    pub fn sums(&self) -> bool {
        self.function != "count"
    }
}

impl Aggregator for ByValue {
    fn name(&self) -> &'static str {
        self.label
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        self.over.state(slot)
    }
    /// COUNT's or SUM's state of the distinct values.
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let arg = arg.expect("a distinct aggregate has an argument");
        let count = call_distinct("count", arg.clone());
        if self.sums() {
            vec![call_distinct("sum", arg), count]
        } else {
            vec![count]
        }
    }
    /// The transitions are not aggregates of the change's rows: `plan::by_value` joins them in.
    fn change_state(&self, _slot: usize, _arg: Option<Expr>, _mult: Expr) -> Vec<(String, Expr)> {
        Vec::new()
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        self.over.combine(slot, s, d)
    }
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        self.over.insert(slot, d)
    }
    fn value(&self, slot: usize) -> Expr {
        self.over.value(slot)
    }
    fn invertible(&self) -> bool {
        true
    }
    fn by_value(&self) -> Option<&ByValue> {
        Some(self)
    }
}
