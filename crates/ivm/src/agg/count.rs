//! `count(x)`: state `n` = the number of non-NULL arguments. A change adds Σ sign over its
//! rows with a non-NULL argument; invertible.

use super::{added, nonnull_change, Aggregator, StateCol};
use crate::ir::{bare, call, Expr};

pub struct Count;

pub(super) fn n(slot: usize) -> String {
    format!("n_{slot}")
}

impl Aggregator for Count {
    fn name(&self) -> &'static str {
        "count"
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::count(n(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        vec![call("count", arg.into_iter().collect())]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let arg = arg.expect("count(x) has an argument");
        vec![(n(slot), nonnull_change(arg, mult))]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        vec![added(s, d, &n(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        bare(n(slot))
    }
    fn invertible(&self) -> bool {
        true
    }
}
