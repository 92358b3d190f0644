//! `min(x)` and `max(x)`: state `m` = the extreme. A change keeps the extreme of its inserted
//! values (`m`) and of its deleted ones (`x`); the new extreme is the extreme of the stored one
//! and the inserted one, unless a deleted value reaches it: then only the group's other rows
//! know, and the group is recomputed. Not invertible.

use super::{Aggregator, StateCol};
use crate::ir::{bare, call, col, Expr, Op};

pub struct Extreme {
    name: &'static str,
    /// `min` or `max`.
    function: &'static str,
    /// `least` or `greatest`.
    pick: &'static str,
    /// A deleted value `x` reaches the extreme `e` when `x op e`.
    reaches: Op,
    /// The field of the extreme the aggregate shows (`agg::arg`).
    field: Option<&'static str>,
}

pub const MIN: Extreme = Extreme {
    name: "min",
    function: "min",
    pick: "least",
    reaches: Op::LtEq,
    field: None,
};
pub const MAX: Extreme = Extreme {
    name: "max",
    function: "max",
    pick: "greatest",
    reaches: Op::GtEq,
    field: None,
};
pub const ARG_MIN: Extreme = Extreme {
    name: "arg_min",
    field: Some(super::arg::ARG),
    ..MIN
};
pub const ARG_MAX: Extreme = Extreme {
    name: "arg_max",
    field: Some(super::arg::ARG),
    ..MAX
};

fn m(slot: usize) -> String {
    format!("m_{slot}")
}
fn x(slot: usize) -> String {
    format!("x_{slot}")
}

/// `CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE pick(a, b) END`.
fn pick_of(pick: &'static str, a: Expr, b: Expr) -> Expr {
    Expr::Case {
        whens: vec![
            (a.clone().is_null(), b.clone()),
            (b.clone().is_null(), a.clone()),
        ],
        otherwise: Box::new(call(pick, vec![a, b])),
    }
}

impl Aggregator for Extreme {
    fn name(&self) -> &'static str {
        self.name
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::value(m(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        vec![call(self.function, arg.into_iter().collect())]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let arg: Vec<Expr> = arg.into_iter().collect();
        let inserted = mult.clone().bin(Op::Gt, Expr::Int(0));
        let deleted = mult.bin(Op::Lt, Expr::Int(0));
        vec![
            (m(slot), call(self.function, arg.clone()).filter(inserted)),
            (x(slot), call(self.function, arg).filter(deleted)),
        ]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        vec![pick_of(self.pick, col(s, m(slot)), col(d, m(slot)))]
    }
    fn value(&self, slot: usize) -> Expr {
        super::arg::shown(bare(m(slot)), self.field)
    }
    /// Rows inserted and deleted within one change count on both sides, so the test compares
    /// the deleted extreme with the extreme after the insertions.
    fn recompute_when(&self, slot: usize, s: &'static str, d: &'static str) -> Option<Expr> {
        let (stored, inserted) = (col(s, m(slot)), col(d, m(slot)));
        let both_empty = stored.clone().is_null().and(inserted.clone().is_null());
        let after = call(
            self.pick,
            vec![
                call("coalesce", vec![stored.clone(), inserted.clone()]),
                call("coalesce", vec![inserted, stored]),
            ],
        );
        let deleted = col(d, x(slot));
        let reached = deleted.clone().bin(self.reaches, after);
        Some(deleted.is_not_null().and(both_empty.or(reached)))
    }
    fn invertible(&self) -> bool {
        false
    }
}
