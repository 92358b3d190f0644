//! Aggregates behind one trait, one file per kind.
//!
//! A grouped aggregate view stores, per group, `_mv_count` (the group's rows) and each
//! aggregate's state columns. A refresh consolidates the change per group into the same state
//! (from signed rows), then combines stored and change state. An aggregate whose value the
//! combination cannot know (a deleted minimum, a distinct count) names the condition under which
//! the group is recomputed from the base data instead. One whose state before a change is the
//! state after minus the change's is invertible: only those can be read as a relation
//! (`plan::SubAgg`), whose old rows are taken back.
//!
//! A new aggregate is a file here, one arm in [`of`] and one row in [`SUPPORTED`]. An aggregate
//! without one is maintained by `whole`, which recomputes the groups a change touches. The state
//! column names are an aggregate's own (each prefixed by a letter and its slot); the storage
//! and work tables of existing views depend on them, so a kind's columns never change.

pub mod arg;
mod boolean;
pub mod by_value;
mod count;
mod count_if;
mod count_star;
mod distinct;
mod extreme;
pub mod kept;
mod moments;
mod sum;
mod whole;

use serde::{Deserialize, Serialize};

use crate::ir::Expr;
use crate::user_expr::UserExpr;

/// The kinds stored in a plan (their names are part of the catalog's JSON).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggKind {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BoolAnd,
    BoolOr,
    CountIf,
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
    /// `arg_min(a, b)`: the MIN of `{v: b, a: a}` (`arg`).
    ArgMin,
    /// `arg_max(a, b)`: the MAX of `{v: b, a: a}`.
    ArgMax,
    /// Any other deterministic aggregate, kept as its whole call (`AggFn::call`).
    Whole,
}

/// One aggregate call of a view; its state lives in storage columns named by its aggregator
/// and its slot.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct AggFn {
    pub kind: AggKind,
    /// `_a<j>`, the input column holding the argument (None for COUNT(*)).
    pub arg: Option<String>,
    pub slot: usize,
    /// `kind(DISTINCT arg)`.
    #[serde(default)]
    pub distinct: bool,
    /// For [`AggKind::Whole`]: the call, each column it reads an input-column hole
    /// ([`crate::user_expr::Hole::Input`]) `j` standing for `_a<j+1>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<UserExpr>,
    /// For MIN/MAX: whether the state keeps the group's first values (`kept`) rather than
    /// the extreme alone. Views created before kept candidates existed have `false`, and
    /// storage without the list.
    #[serde(default)]
    pub kept: bool,
    /// For COUNT/SUM/AVG(DISTINCT): whether the view keeps each group's distinct values with
    /// their row counts (`by_value`) rather than recomputing the groups a change touches.
    /// Views created before that have `false`, and no table of values.
    #[serde(default)]
    pub by_value: bool,
}

impl AggFn {
    /// The name `duckmv.views` shows for it.
    pub fn label(&self) -> String {
        match self.call.as_ref().map(UserExpr::ast) {
            Some(sqlparser::ast::Expr::Function(f)) => f.name.to_string().to_lowercase(),
            _ => of(self).name().to_string(),
        }
    }
}

/// A state column of the storage.
pub struct StateCol {
    pub name: String,
    /// Whether a group without rows has 0 here (counts) rather than NULL (sums).
    pub zero_when_empty: bool,
}

impl StateCol {
    fn count(name: String) -> StateCol {
        StateCol {
            name,
            zero_when_empty: true,
        }
    }
    fn value(name: String) -> StateCol {
        StateCol {
            name,
            zero_when_empty: false,
        }
    }
}

/// What the refresh needs of one aggregate. `slot` names its columns; expressions over the
/// stored state read alias `s`, over the consolidated change alias `d`.
pub trait Aggregator: Sync {
    /// Its SQL name, as `duckmv.views` shows it.
    fn name(&self) -> &'static str;
    /// The storage's state columns.
    fn state(&self, slot: usize) -> Vec<StateCol>;
    /// Each state column, aggregated over input rows whose argument is `arg`.
    fn rows_state(&self, arg: Option<Expr>) -> Vec<Expr>;
    /// The change's columns: the state of signed rows (`mult` their sign), then any column the
    /// combination or the recompute test reads besides.
    fn change_state(&self, slot: usize, arg: Option<Expr>, mult: Expr) -> Vec<(String, Expr)>;
    /// Each state column after the change `d` is applied to the stored `s`.
    fn combine(&self, slot: usize, s: &'static str, d: &'static str) -> Vec<Expr>;
    /// Each state column of a group the change creates.
    fn insert(&self, slot: usize, d: &'static str) -> Vec<Expr> {
        let names = self.state(slot).into_iter().map(|c| c.name);
        names.map(|n| crate::ir::col(d, n)).collect()
    }
    /// The aggregate's value from the (unqualified) storage columns.
    fn value(&self, slot: usize) -> Expr;
    /// When the combined state may be wrong and the group must be recomputed; None: never.
    fn recompute_when(&self, _slot: usize, _s: &'static str, _d: &'static str) -> Option<Expr> {
        None
    }
    /// Whether the state before a change is the state after minus the change's.
    fn invertible(&self) -> bool;
    /// Whether change rows that cancel (a row inserted and deleted again) leave the state as
    /// it was without being summed away first: then a view of such aggregates over one table
    /// reads its change as logged (`capture::consolidates`).
    fn nets_its_change(&self) -> bool {
        self.invertible()
    }
    /// For kept extremes: the order of the values kept (the change's list is computed apart,
    /// by `plan::kept`).
    fn kept(&self) -> Option<&kept::Kept> {
        None
    }
    /// For distinct aggregates kept by value: their rule (the change's transitions are
    /// computed apart, by `plan::by_value`).
    fn by_value(&self) -> Option<&by_value::ByValue> {
        None
    }
}

/// The aggregator of one call.
pub fn of(f: &AggFn) -> &'static dyn Aggregator {
    match (f.kind, f.distinct) {
        (AggKind::CountStar, _) => &count_star::CountStar,
        (AggKind::Count, false) => &count::Count,
        (AggKind::Sum, false) => &sum::SUM,
        (AggKind::Avg, false) => &sum::AVG,
        // The extreme of the distinct values is the extreme of all of them.
        (AggKind::Min, _) if f.kept => &kept::MIN,
        (AggKind::Max, _) if f.kept => &kept::MAX,
        (AggKind::Min, _) => &extreme::MIN,
        (AggKind::Max, _) => &extreme::MAX,
        (AggKind::ArgMin, _) if f.kept => &kept::ARG_MIN,
        (AggKind::ArgMax, _) if f.kept => &kept::ARG_MAX,
        (AggKind::ArgMin, _) => &extreme::ARG_MIN,
        (AggKind::ArgMax, _) => &extreme::ARG_MAX,
        (AggKind::Count, true) if f.by_value => &by_value::COUNT,
        (AggKind::Sum, true) if f.by_value => &by_value::SUM_DISTINCT,
        (AggKind::Avg, true) if f.by_value => &by_value::AVG_DISTINCT,
        (AggKind::Count, true) => &distinct::COUNT,
        (AggKind::Sum, true) => &distinct::SUM,
        (AggKind::Avg, true) => &distinct::AVG,
        // Whether some or every value is true does not depend on duplicates.
        (AggKind::BoolAnd, _) => &boolean::AND,
        (AggKind::BoolOr, _) => &boolean::OR,
        (AggKind::CountIf, _) => &count_if::CountIf,
        (AggKind::VarSamp, _) => &moments::VAR_SAMP,
        (AggKind::VarPop, _) => &moments::VAR_POP,
        (AggKind::StddevSamp, _) => &moments::STDDEV_SAMP,
        (AggKind::StddevPop, _) => &moments::STDDEV_POP,
        (AggKind::Whole, _) => &whole::Whole,
    }
}

/// The aggregate functions maintained incrementally, by the name a query calls them, and
/// whether their DISTINCT form is.
pub const SUPPORTED: &[(&str, AggKind, bool)] = &[
    ("count", AggKind::Count, true),
    ("sum", AggKind::Sum, true),
    ("avg", AggKind::Avg, true),
    ("mean", AggKind::Avg, true),
    ("min", AggKind::Min, true),
    ("max", AggKind::Max, true),
    ("bool_and", AggKind::BoolAnd, true),
    ("bool_or", AggKind::BoolOr, true),
    ("count_if", AggKind::CountIf, false),
    ("var_samp", AggKind::VarSamp, false),
    ("variance", AggKind::VarSamp, false),
    ("var_pop", AggKind::VarPop, false),
    ("stddev_samp", AggKind::StddevSamp, false),
    ("stddev", AggKind::StddevSamp, false),
    ("stddev_pop", AggKind::StddevPop, false),
    ("arg_min", AggKind::ArgMin, false),
    ("argmin", AggKind::ArgMin, false),
    ("min_by", AggKind::ArgMin, false),
    ("arg_max", AggKind::ArgMax, false),
    ("argmax", AggKind::ArgMax, false),
    ("max_by", AggKind::ArgMax, false),
];

/// Whether `kind` is `arg_min`/`arg_max`, whose two arguments are kept as one struct (`arg`).
pub fn is_arg(kind: AggKind) -> bool {
    matches!(kind, AggKind::ArgMin | AggKind::ArgMax)
}

/// Whether `kind` is a variance or standard deviation (`moments`): its argument must be
/// exact, and an integer one is widened to HUGEINT so that its square cannot overflow.
pub fn is_moment(kind: AggKind) -> bool {
    matches!(
        kind,
        AggKind::VarSamp | AggKind::VarPop | AggKind::StddevSamp | AggKind::StddevPop
    )
}

/// The kind a function name calls, and whether DISTINCT is maintained for it.
pub fn kind_of(name: &str) -> Option<(AggKind, bool)> {
    SUPPORTED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, k, d)| (*k, *d))
}

/// `CAST(coalesce(sum(CASE WHEN arg IS NULL THEN 0 ELSE mult END), 0) AS BIGINT)`: the change
/// of the non-NULL count.
fn nonnull_change(arg: Expr, mult: Expr) -> Expr {
    let signed = crate::ir::case(arg.is_null(), Expr::Int(0), mult);
    crate::ir::or_zero(crate::ir::call("sum", vec![signed])).big_int()
}

/// `s.c + d.c`.
fn added(s: &'static str, d: &'static str, c: &str) -> Expr {
    crate::ir::col(s, c) + crate::ir::col(d, c)
}

#[cfg(test)]
mod tests;
