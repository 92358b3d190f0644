//! `var_samp`, `var_pop`, `stddev_samp`, `stddev_pop` (and `variance`, `stddev`) of exact
//! values (integers cast to HUGEINT by the compiler, decimals as they are): state `e` = Σ x,
//! `q` = Σ x² and `n` = the number of non-NULL x, all exact. A change adds Σ x·sign, Σ x²·sign
//! and Σ sign over its non-NULL x; invertible. The value is the exact `n·q − e²` rounded once
//! to DOUBLE, over `n·(n−1)` (sample) or `n²` (population), its square root for a deviation.
//! DuckDB's own computes in doubles as it reads the rows, so the two may differ in the low
//! digits, the view's being the exact one. Should `n·q − e²` overflow its exact type, the
//! value is computed in doubles instead. Floating-point arguments are kept whole.

use super::count::n;
use super::{added, nonnull_change, Aggregator, StateCol};
use crate::ir::{bare, call, case, col, or_zero, Expr, Op};

/// A variance, or with `root` a standard deviation; of the population or of a sample.
pub struct Moments {
    name: &'static str,
    population: bool,
    root: bool,
}

pub const VAR_SAMP: Moments = Moments {
    name: "var_samp",
    population: false,
    root: false,
};
pub const VAR_POP: Moments = Moments {
    name: "var_pop",
    population: true,
    root: false,
};
pub const STDDEV_SAMP: Moments = Moments {
    name: "stddev_samp",
    population: false,
    root: true,
};
pub const STDDEV_POP: Moments = Moments {
    name: "stddev_pop",
    population: true,
    root: true,
};

fn e(slot: usize) -> String {
    format!("e_{slot}")
}

fn q(slot: usize) -> String {
    format!("q_{slot}")
}

fn square(x: Expr) -> Expr {
    x.clone() * x
}

fn double(x: Expr) -> Expr {
    x.cast("DOUBLE")
}

impl Aggregator for Moments {
    fn name(&self) -> &'static str {
        self.name
    }
    fn state(&self, slot: usize) -> Vec<StateCol> {
        vec![
            StateCol::value(e(slot)),
            StateCol::value(q(slot)),
            StateCol::count(n(slot)),
        ]
    }
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr> {
        let x = arg.expect("a variance has an argument");
        vec![
            call("sum", vec![x.clone()]),
            call("sum", vec![square(x.clone())]),
            call("count", vec![x]),
        ]
    }
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)> {
        let x = arg.expect("a variance has an argument");
        vec![
            (e(slot), call("sum", vec![x.clone() * mult.clone()])),
            (q(slot), call("sum", vec![square(x.clone()) * mult.clone()])),
            (n(slot), nonnull_change(x, mult)),
        ]
    }
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr> {
        // Sums of a group without values are read through `n`, so NULL counts as 0 here.
        let sum = |c: String| or_zero(col(s, c.clone())) + or_zero(col(d, c));
        vec![sum(e(slot)), sum(q(slot)), added(s, d, &n(slot))]
    }
    fn value(&self, slot: usize) -> Expr {
        let (n, e, q) = (bare(n(slot)), bare(e(slot)), bare(q(slot)));
        let exact = call(
            "try",
            vec![double(n.clone() * q.clone() - square(e.clone()))],
        );
        let approx = call(
            "greatest",
            vec![
                double(q) * double(n.clone()) - square(double(e)),
                Expr::Int(0),
            ],
        );
        let numerator = call("coalesce", vec![exact, approx]);
        let others = if self.population {
            n.clone()
        } else {
            n.clone() - Expr::Int(1)
        };
        let variance = numerator.bin(Op::Div, double(n.clone()) * double(others));
        let value = if self.root {
            call("sqrt", vec![variance])
        } else {
            variance
        };
        let least = if self.population { 1 } else { 2 };
        case(n.bin(Op::Lt, Expr::Int(least)), Expr::Null, value)
    }
    fn invertible(&self) -> bool {
        true
    }
}
