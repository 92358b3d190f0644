//! `count(*)`: the group's row count, which every aggregate view stores anyway as
//! `_mv_count` (Σ of the change's signs is added to it). No state of its own; invertible.

use super::{Aggregator, StateCol};
use crate::ir::{bare, Expr};

pub struct CountStar;

impl Aggregator for CountStar {
    fn name(&self) -> &'static str {
        "count"
    }
    fn state(&self, _slot: usize) -> Vec<StateCol> {
        Vec::new()
    }
    fn rows_state(&self, _arg: Option<Expr>) -> Vec<Expr> {
        Vec::new()
    }
    fn change_state(&self, _slot: usize, _arg: Option<Expr>, _mult: Expr) -> Vec<(String, Expr)> {
        Vec::new()
    }
    fn combine(&self, _slot: usize, _s: &'static str, _d: &'static str) -> Vec<Expr> {
        Vec::new()
    }
    fn value(&self, _slot: usize) -> Expr {
        bare("_mv_count")
    }
    fn invertible(&self) -> bool {
        true
    }
}
