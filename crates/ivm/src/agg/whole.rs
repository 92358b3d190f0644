//! Any other deterministic aggregate (`string_agg(x, ', ' ORDER BY x)`, `stddev_samp(x)`,
//! `arg_max(a, b)`, `median(x)`, `list(x)`, …): state `w` = its value. Its value after a
//! change cannot be computed from the value before, so every group the change touches is
//! recomputed from the base data, as for distinct counts; the groups it does not touch keep
//! their value, so a refresh costs what the touched groups cost. Not invertible.
//!
//! The call is kept whole (`AggFn::call`), with each column it reads an input column of the
//! aggregate (a hole the refresh fills), so arguments, ORDER BY, FILTER and DISTINCT inside
//! it mean what they meant.

use super::{Aggregator, StateCol};
use crate::ir::{bare, col, Expr};

pub struct Whole;

fn w(slot: usize) -> String {
    format!("w_{slot}")
}

impl Aggregator for Whole {
    fn name(&self) -> &'static str {
        "recomputed per group"
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::value(w(slot))]
    }
    /// `call` is the call itself over the input rows (see `plan::aggregate`).
    fn rows_state(&self, call: Option<Expr>) -> Vec<Expr> {
        vec![call.expect("a whole aggregate's call")]
    }
    /// The change carries nothing: the touched group is recomputed.
    fn change_state(&self, _slot: usize, _arg: Option<Expr>, _mult: Expr) -> Vec<(String, Expr)> {
        Vec::new()
    }
    fn combine(&self, slot: usize, s: &'static str, _d: &'static str) -> Vec<Expr> {
        vec![col(s, w(slot))]
    }
    fn insert(&self, _slot: usize, _d: &'static str) -> Vec<Expr> {
        vec![Expr::Null]
    }
    fn value(&self, slot: usize) -> Expr {
        bare(w(slot))
    }
    fn recompute_when(&self, _slot: usize, _s: &'static str, _d: &'static str) -> Option<Expr> {
        Some(Expr::Bool(true))
    }
    fn invertible(&self) -> bool {
        false
    }
}
