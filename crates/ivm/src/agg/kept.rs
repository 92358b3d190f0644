//! `min(x)` and `max(x)` of a view's own aggregate, with candidates kept: state `k` = the first
//! [`KEPT`] values of the group in the aggregate's order (a sorted list, a value repeated as
//! often as it occurs), `o` = whether the group may have values past them. The extreme is the
//! list's first value.
//!
//! The list is always a prefix of the group's values in order, and a change keeps it one
//! (`plan::kept` computes it): a value before or at the list's last enters it, one past the last
//! enters only a list that holds the whole group (`o` false, so nothing is past it); a deleted
//! value at or before the last leaves it, one past it is not in it. The new list is then cut to
//! [`KEPT`] values (setting `o`). So a deleted extreme is answered by the next value kept; only a
//! group whose list runs empty while `o` says more values exist is recomputed from the base
//! data, which refills its list. Deleting the extreme of a group thus costs a scan of the base
//! data once per [`KEPT`] deletions at most, not once per deletion. Not invertible.

use super::{Aggregator, StateCol};
use crate::ir::{bare, call, col, Expr, Op};

/// How many values a group keeps.
pub const KEPT: i64 = 8;

pub struct Kept {
    name: &'static str,
    /// The function that keeps values in order: `min` or `max`.
    pub function: &'static str,
    /// Whether the aggregate's order is descending (`max`).
    pub descending: bool,
    /// The field of the kept value the aggregate shows: `arg_min(a, b)` keeps the structs
    /// `{v: b, a: a}` (`agg::arg`) and shows the first one's `a`.
    field: Option<&'static str>,
}

pub const MIN: Kept = Kept {
    name: "min",
    function: "min",
    descending: false,
    field: None,
};
pub const MAX: Kept = Kept {
    name: "max",
    function: "max",
    descending: true,
    field: None,
};
pub const ARG_MIN: Kept = Kept {
    name: "arg_min",
    function: "min",
    descending: false,
    field: Some(super::arg::ARG),
};
pub const ARG_MAX: Kept = Kept {
    name: "arg_max",
    function: "max",
    descending: true,
    field: Some(super::arg::ARG),
};

/// The list column of `slot`.
pub fn k(slot: usize) -> String {
    format!("k_{slot}")
}
/// The "more values may exist" column of `slot`.
pub fn o(slot: usize) -> String {
    format!("o_{slot}")
}
/// The change's column saying whether it rewrites the list of `slot`'s group.
pub fn r(slot: usize) -> String {
    format!("r_{slot}")
}

impl Kept {
    /// A value `v` is at or before the list's last `last` when `v op last`.
    pub fn not_past(&self) -> Op {
        if self.descending {
            Op::GtEq
        } else {
            Op::LtEq
        }
    }
}

impl Aggregator for Kept {
    fn name(&self) -> &'static str {
        self.name
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::value(k(slot)), StateCol::value(o(slot))]
    }
    /// `min(x, 8)` / `max(x, 8)`: DuckDB's first values in order, repeated values repeated,
    /// NULLs left out, NULL over no values.
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let arg = arg.expect("min/max have an argument");
        let first = call(self.function, vec![arg.clone(), Expr::Int(KEPT)]);
        let more = call("count", vec![arg]).bin(Op::Gt, Expr::Int(KEPT));
        vec![first, more]
    }
    /// The change's list and flag are not aggregates of its rows: `plan::kept` joins them in.
    fn change_state(&self, _slot: usize, _arg: Option<Expr>, _mult: Expr) -> Vec<(String, Expr)> {
        Vec::new()
    }
    /// A change that rewrites the group's list brings the list and flag; others keep them.
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        let rewrites = crate::ir::call("coalesce", vec![col(d, r(slot)), Expr::Bool(false)]);
        [k(slot), o(slot)]
            .into_iter()
            .map(|c| crate::ir::case(rewrites.clone(), col(d, &c), col(s, &c)))
            .collect()
    }
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        let open = crate::ir::call("coalesce", vec![col(d, o(slot)), Expr::Bool(false)]);
        vec![col(d, k(slot)), open]
    }
    fn value(&self, slot: usize) -> Expr {
        super::arg::shown(
            call("list_extract", vec![bare(k(slot)), Expr::Int(1)]),
            self.field,
        )
    }
    /// The change rewrote the list, it ran empty, and more values may exist.
    fn recompute_when(&self, slot: usize, _s: &'static str, d: &'static str) -> Option<Expr> {
        let len = crate::ir::or_zero(call("len", vec![col(d, k(slot))]));
        let empty = len.eq(Expr::Int(0));
        Some(col(d, r(slot)).and(col(d, o(slot))).and(empty))
    }
    fn invertible(&self) -> bool {
        false
    }
    /// The rows that matter to a list are netted per group and value (`plan::kept`), so a
    /// value deleted and inserted again leaves the list as it was.
    fn nets_its_change(&self) -> bool {
        true
    }
    fn kept(&self) -> Option<&Kept> {
        Some(self)
    }
}
