//! `bool_and(x)` and `bool_or(x)`: state `t` = the number of true arguments and `f` = the number
//! of false ones. A change adds Σ sign over its true and its false arguments (NULLs count in
//! neither); the value is NULL when both are 0, else `f = 0` (and) or `t > 0` (or). Counts,
//! so invertible and exact; the distinct forms have the same value.

use super::{added, Aggregator, StateCol};
use crate::ir::{bare, call, case, or_zero, Expr, Op};

/// `bool_and(x)`, or `bool_or(x)` when `any`.
pub struct Boolean {
    any: bool,
}

pub const AND: Boolean = Boolean { any: false };
pub const OR: Boolean = Boolean { any: true };

fn t(slot: usize) -> String {
    format!("t_{slot}")
}

fn f(slot: usize) -> String {
    format!("f_{slot}")
}

/// `coalesce(sum(CASE WHEN arg = value THEN weight ELSE 0 END), 0)::BIGINT`.
fn counted(arg: &Expr, value: bool, weight: Expr) -> Expr {
    let hit = arg.clone().eq(Expr::Bool(value));
    or_zero(call("sum", vec![case(hit, weight, Expr::Int(0))])).big_int()
}

impl Aggregator for Boolean {
    fn name(&self) -> &'static str {
        if self.any {
            "bool_or"
        } else {
            "bool_and"
        }
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::count(t(slot)), StateCol::count(f(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let arg = arg.expect("bool_and(x) has an argument");
        vec![
            counted(&arg, true, Expr::Int(1)),
            counted(&arg, false, Expr::Int(1)),
        ]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let arg = arg.expect("bool_and(x) has an argument");
        vec![
            (t(slot), counted(&arg, true, mult.clone())),
            (f(slot), counted(&arg, false, mult)),
        ]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        vec![added(s, d, &t(slot)), added(s, d, &f(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        let none = (bare(t(slot)) + bare(f(slot))).eq(Expr::Int(0));
        let value = if self.any {
            bare(t(slot)).bin(Op::Gt, Expr::Int(0))
        } else {
            bare(f(slot)).eq(Expr::Int(0))
        };
        case(none, Expr::Null, value)
    }
    fn invertible(&self) -> bool {
        true
    }
}
