//! `sum(x)` and `avg(x)`: state `s` = Σ x and `n` = the number of non-NULL x (shared by the
//! SUM and AVG of one argument). A change adds Σ x·sign and Σ sign over non-NULL x; a group
//! whose `n` is 0 has a NULL sum. Invertible for exact types (the compiler refuses floating
//! point, whose sums taken back need not cancel).

use super::count::n;
use super::{added, nonnull_change, Aggregator, StateCol};
use crate::ir::{bare, call, case, col, Expr, Op};

/// `sum(x)`, or `avg(x)` when `mean`.
pub struct SumOrMean {
    mean: bool,
}

pub const SUM: SumOrMean = SumOrMean { mean: false };
pub const AVG: SumOrMean = SumOrMean { mean: true };

fn s(slot: usize) -> String {
    format!("s_{slot}")
}

impl Aggregator for SumOrMean {
    fn name(&self) -> &'static str {
        if self.mean {
            "avg"
        } else {
            "sum"
        }
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![StateCol::value(s(slot)), StateCol::count(n(slot))]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let arg: Vec<Expr> = arg.into_iter().collect();
        vec![call("sum", arg.clone()), call("count", arg)]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let arg = arg.expect("sum(x) has an argument");
        vec![
            (s(slot), call("sum", vec![arg.clone() * mult.clone()])),
            (n(slot), nonnull_change(arg, mult)),
        ]
    }
    fn combine(&self, slot: usize, st: &'static str, d: &'static str) -> Vec<Expr> {
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
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        let empty = col(d, n(slot)).eq(Expr::Int(0));
        vec![case(empty, Expr::Null, col(d, s(slot))), col(d, n(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        let empty = bare(n(slot)).eq(Expr::Int(0));
        let value = if self.mean {
            // A DOUBLE quotient, as avg gives, whatever `/` does with integers.
            bare(s(slot)).cast("DOUBLE").bin(Op::Div, bare(n(slot)))
        } else {
            bare(s(slot))
        };
        case(empty, Expr::Null, value)
    }
    fn invertible(&self) -> bool {
        true
    }
}
