//! `count_if(c)`: state `t` = the number of rows whose condition is true and `n` = the number
//! whose condition is not NULL. DuckDB's `count_if` skips NULL conditions and is NULL when
//! none is left (like `sum` over 0/1), which is what a `FILTER` folded into the argument
//! relies on; so a group whose `n` is 0 shows NULL. A change adds Σ sign over its rows whose
//! condition is true, and Σ sign over the non-NULL ones; invertible, so it is also
//! maintained inside aggregate subqueries.

use super::count::n;
use super::{added, nonnull_change, Aggregator, StateCol};
use crate::ir::{bare, call, case, or_zero, Expr};

pub struct CountIf;

fn t(slot: usize) -> String {
    format!("t_{slot}")
}

impl Aggregator for CountIf {
    fn name(&self) -> &'static str {
        "count_if"
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::count(t(slot)), StateCol::count(n(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let arg: Vec<Expr> = arg.into_iter().collect();
        vec![
            or_zero(call("count_if", arg.clone())).big_int(),
            call("count", arg).big_int(),
        ]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let cond = arg.expect("count_if(c) has an argument");
        let signed = case(cond.clone(), mult.clone(), Expr::Int(0));
        vec![
            (t(slot), or_zero(call("sum", vec![signed])).big_int()),
            (n(slot), nonnull_change(cond, mult)),
        ]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        vec![added(s, d, &t(slot)), added(s, d, &n(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        let empty = bare(n(slot)).eq(Expr::Int(0));
        case(empty, Expr::Null, bare(t(slot)))
    }
    fn invertible(&self) -> bool {
        true
    }
}
