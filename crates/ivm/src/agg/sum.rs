//! `sum(x)` and `avg(x)`: state `s` = Σ x and `n` = the number of non-NULL x (shared by the
//! SUM and AVG of one argument). A change adds Σ x·sign and Σ sign over non-NULL x; a group
//! whose `n` is 0 has a NULL sum. Invertible for exact types (the compiler refuses floating
//! point, whose sums taken back need not cancel).

use super::count::n;
use super::{added, nonnull_change, Aggregator, StateCol};
use crate::ir::{bare, call, case, col, Expr, Op};

pub struct Sum;
pub struct Avg;

fn s(slot: usize) -> String {
    format!("s_{slot}")
}

fn state(slot: usize) -> Vec<StateCol> {
    vec![StateCol::value(s(slot)), StateCol::count(n(slot))]
}

fn rows_state(arg: Option<Expr>) -> Vec<Expr> {
    let arg: Vec<Expr> = arg.into_iter().collect();
    vec![call("sum", arg.clone()), call("count", arg)]
}

fn change_state(slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
    let arg = arg.expect("sum(x) has an argument");
    vec![
        (s(slot), call("sum", vec![arg.clone() * mult.clone()])),
        (n(slot), nonnull_change(arg, mult)),
    ]
}

fn combine(slot: usize, st: &'static str, d: &'static str) -> Vec<Expr> {
    let (sc, nc) = (s(slot), n(slot));
    let sum = Expr::Case {
        whens: vec![
            (added(st, d, &nc).eq(Expr::Int(0)), Expr::Null),
            (col(st, &sc).is_null(), col(d, &sc)),
            (col(d, &sc).is_null(), col(st, &sc)),
        ],
        otherwise: Box::new(added(st, d, &sc)),
    };
    vec![sum, added(st, d, &nc)]
}

/// A new group's sum is NULL until a non-NULL value arrives.
fn insert(slot: usize, d: &'static str) -> Vec<Expr> {
    let empty = col(d, n(slot)).eq(Expr::Int(0));
    vec![case(empty, Expr::Null, col(d, s(slot))), col(d, n(slot))]
}

fn empty(slot: usize) -> Expr {
    bare(n(slot)).eq(Expr::Int(0))
}

impl Aggregator for Sum {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        state(slot)
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        rows_state(arg)
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        change_state(slot, arg, mult)
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        combine(slot, s, d)
    }
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        insert(slot, d)
    }
    fn value(&self, slot: usize) -> Expr {
        case(empty(slot), Expr::Null, bare(s(slot)))
    }
    fn invertible(&self) -> bool {
        true
    }
}

impl Aggregator for Avg {
    fn name(&self) -> &'static str {
        "avg"
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        state(slot)
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        rows_state(arg)
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        change_state(slot, arg, mult)
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        combine(slot, s, d)
    }
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        insert(slot, d)
    }
    fn value(&self, slot: usize) -> Expr {
        let mean = bare(s(slot)).bin(Op::Div, bare(n(slot)));
        case(empty(slot), Expr::Null, mean)
    }
    fn invertible(&self) -> bool {
        true
    }
}
