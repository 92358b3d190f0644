//! `count_if(c)`: state `t` = the number of rows whose condition is true (FALSE and NULL
//! count nothing). A change adds Σ sign over its rows whose condition is true; invertible,
//! so it is also maintained inside aggregate subqueries.

use super::{added, Aggregator, StateCol};
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
        vec![StateCol::count(t(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        vec![call("count_if", arg.into_iter().collect()).big_int()]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let cond = arg.expect("count_if(c) has an argument");
        let signed = case(cond, mult, Expr::Int(0));
        vec![(t(slot), or_zero(call("sum", vec![signed])).big_int())]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        vec![added(s, d, &t(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        bare(t(slot))
    }
    fn invertible(&self) -> bool {
        true
    }
}
