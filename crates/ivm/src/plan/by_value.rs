//! Distinct aggregates kept by value (`agg::by_value`): the table `_duckmv.dv_<id>_<slot>` holds,
//! per group, each distinct non-NULL value of one argument (`_mv_v`) with the number of the
//! group's rows that have it (`_mv_n`); the COUNT, SUM and AVG(DISTINCT) of that argument share
//! it, named by the first one's slot. A refresh nets the change per group and value, reads
//! the counts stored for those values only, and turns each count that leaves or reaches 0 into
//! a transition of the group's distinct set; the change per group carries the transitions' COUNT
//! and SUM state beside the other aggregates'. After that the netted change is merged into the
//! table, a value whose count falls to 0 leaving it.

use crate::agg::by_value::ByValue;
use crate::agg::AggFn;
use crate::ir::{self, Action, Cte, Expr, From, GroupBy, Item, JoinKind, Name, Op, Query, Select};
use crate::ir::{Stmt, When};
use crate::ops::{group_cols, keys_of, rel_cur, rel_delta};

use super::aggregate::{named, Joined};
use super::{Aggregate, Plan};

/// The table of the distinct values of slot `slot` of view `id`.
pub fn values_table(id: i64, slot: usize) -> String {
    format!("_duckmv.dv_{id}_{slot}")
}

/// The distinct aggregates of `a` kept by value, with their rule.
fn by_value(a: &Aggregate) -> Vec<(&AggFn, &'static ByValue)> {
    a.state_fns()
        .filter_map(|f| crate::agg::of(f).by_value().map(|b| (f, b)))
        .collect()
}

/// One table of values: the first aggregate of its argument (whose slot names it), and every
/// distinct aggregate of that argument.
pub struct Values<'a> {
    pub first: &'a AggFn,
    pub fns: Vec<(&'a AggFn, &'static ByValue)>,
}

/// The tables of values of `a`, one per argument of its distinct aggregates kept by value.
pub fn values_of(a: &Aggregate) -> Vec<Values<'_>> {
    let mut out: Vec<Values> = Vec::new();
    for (f, rule) in by_value(a) {
        match out.iter_mut().find(|v| v.first.arg == f.arg) {
            Some(v) => v.fns.push((f, rule)),
            None => out.push(Values {
                first: f,
                fns: vec![(f, rule)],
            }),
        }
    }
    out
}

/// The table keeping the change rows of the aggregate's input for the length of a refresh: the
/// change per group and the merges into the values' tables read them, and computing them (a
/// join's delta terms) can cost more than both.
pub fn change_table(id: i64) -> String {
    format!("_duckmv.r_{id}")
}

/// The change rows as the change table keeps them: `SELECT * FROM _duckmv.r_<id>`.
pub(super) fn kept_change(plan: &Plan) -> Query {
    let all = Select::new(
        vec![Item::Star],
        vec![named(&change_table(plan.id), "_mv_r")],
    );
    Query::select(all)
}

/// Fills the change table with the change rows (None without distinct aggregates kept by
/// value, or without change).
pub fn keep_change_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<Stmt> {
    if values_of(a).is_empty() {
        return None;
    }
    let raw = rel_delta(&plan.sources, &a.input_rel(), changed)?;
    Some(Stmt::insert(Name::of(&change_table(plan.id)), raw))
}

/// The change table's shape (used once, at CREATE): the change with every source changed;
/// None when the aggregate needs no change table.
pub fn change_shape_sql(plan: &Plan, a: &Aggregate) -> Option<Query> {
    if values_of(a).is_empty() {
        return None;
    }
    let all = vec![true; plan.sources.len()];
    rel_delta(&plan.sources, &a.input_rel(), &all)
}

/// `_mv_v` and `_mv_n`: a value and a row count, after the group keys.
const VALUE: &str = "_mv_v";
const COUNT: &str = "_mv_n";

/// `SELECT keys, arg AS _mv_v, <count> AS _mv_n FROM rows AS _mv_r WHERE arg IS NOT NULL GROUP
/// BY keys, arg [HAVING <count> <> 0]`: rows counted per group and value, `count` over them.
fn per_value(a: &Aggregate, f: &AggFn, rows: From, count: Expr, netted: bool) -> Query {
    let arg = ir::col(
        "_mv_r",
        f.arg.clone().expect("a distinct aggregate has an argument"),
    );
    let mut items: Vec<Item> = keys_of(a, "_mv_r")
        .into_iter()
        .map(|k| Item::Expr(k, None))
        .collect();
    items.push(Item::named(arg.clone(), VALUE));
    items.push(Item::named(count.clone(), COUNT));
    let mut s = Select::new(items, vec![rows]).filtered([arg.clone().is_not_null()]);
    let mut keys = keys_of(a, "_mv_r");
    keys.push(arg);
    s.group_by = GroupBy::Exprs(keys);
    if netted {
        s.having = vec![count.bin(Op::NotEq, Expr::Int(0))];
    }
    Query::select(s)
}

/// The change rows `rows` (as `_mv_r`) netted per group and value.
fn netted(a: &Aggregate, f: &AggFn, rows: From) -> Query {
    let net = ir::call("sum", vec![ir::col("_mv_r", "_mv_mult")]).big_int();
    per_value(a, f, rows, net, true)
}

/// The distinct values of the current input, counted: the table's contents.
pub fn values_state_sql(plan: &Plan, a: &Aggregate, f: &AggFn) -> Query {
    let rows = From::query(rel_cur(&plan.sources, &a.input_rel()), "_mv_r");
    per_value(a, f, rows, Expr::CountStar.big_int(), false)
}

/// Whether value `_mv_c` stored as `_mv_o` goes in (+1) or out (−1) of its group's set.
fn transition() -> Expr {
    let old = ir::or_zero(ir::col("_mv_o", COUNT));
    let new = old.clone() + ir::col("_mv_c", COUNT);
    let zero = || Expr::Int(0);
    Expr::Case {
        whens: vec![
            (
                old.clone().eq(zero()).and(new.clone().bin(Op::Gt, zero())),
                Expr::Int(1),
            ),
            (
                old.bin(Op::Gt, zero()).and(new.bin(Op::LtEq, zero())),
                Expr::Int(-1),
            ),
        ],
        otherwise: Box::new(zero()),
    }
}

/// `_mv_t<slot>`: per group, the transitions of the values of `v` over the change `_mv_raw`:
/// their count `_mv_dn`, and their sum `_mv_ds`.
fn transitions(plan: &Plan, a: &Aggregate, v: &Values) -> Cte {
    let keys = group_cols(a);
    let change = netted(a, v.first, named("_mv_raw", "_mv_r"));
    let stored = named(&values_table(plan.id, v.first.slot), "_mv_o");
    let on = ir::all([
        ir::same_cols("_mv_o", "_mv_c", &keys),
        ir::col("_mv_o", VALUE).bin(Op::Same, ir::col("_mv_c", VALUE)),
    ]);
    let from = From::query(change, "_mv_c").join(JoinKind::Left, stored, on);
    let mut items: Vec<Item> = keys_of(a, "_mv_c")
        .into_iter()
        .map(|k| Item::Expr(k, None))
        .collect();
    let count = ir::call("sum", vec![transition()]);
    items.push(Item::named(ir::or_zero(count).big_int(), "_mv_dn"));
    if v.fns.iter().any(|(_, rule)| rule.sums()) {
        let sum = ir::call("sum", vec![transition() * ir::col("_mv_c", VALUE)]);
        items.push(Item::named(sum, "_mv_ds"));
    }
    let mut s = Select::new(items, vec![from]);
    if a.groups > 0 {
        s.group_by = GroupBy::Exprs(keys_of(a, "_mv_c"));
    }
    Cte {
        name: format!("_mv_t{}", v.first.slot),
        query: Query::select(s),
        materialized: false,
    }
}

/// The sum's and the count's state column of `f` (no sum for COUNT).
fn state_names(f: &AggFn, rule: &ByValue) -> (Option<String>, String) {
    let mut names: Vec<String> = crate::agg::Aggregator::state(rule, f.slot)
        .into_iter()
        .map(|c| c.name)
        .collect();
    let n = names.pop().expect("a count");
    (names.pop(), n)
}

/// Adds each distinct aggregate's transitions to the change per group `joined` (over `_mv_raw`).
pub(super) fn add_transitions(plan: &Plan, a: &Aggregate, joined: &mut Joined) {
    let keys = group_cols(a);
    for v in values_of(a) {
        let cte = transitions(plan, a, &v);
        let t = cte.name.clone();
        joined.ctes.push(cte);
        for (f, rule) in &v.fns {
            let (s, n) = state_names(f, rule);
            let count = ir::or_zero(ir::col(t.clone(), "_mv_dn"));
            joined.cols.push(Item::named(count, n));
            if let Some(s) = s {
                joined
                    .cols
                    .push(Item::named(ir::col(t.clone(), "_mv_ds"), s));
            }
        }
        joined.join(&t, &keys);
    }
}

/// The MERGE of the change's netted values into each distinct aggregate's table; run after
/// the change per group has read the counts before it.
pub fn values_merge_sql(plan: &Plan, a: &Aggregate) -> Vec<Stmt> {
    let keys = group_cols(a);
    values_of(a)
        .into_iter()
        .map(|v| {
            let change = netted(a, v.first, named(&change_table(plan.id), "_mv_r"));
            let after = ir::col("_mv_s", COUNT) + ir::col("_mv_d", COUNT);
            let mut values = keys_of(a, "_mv_d");
            values.extend([ir::col("_mv_d", VALUE), ir::col("_mv_d", COUNT)]);
            let on = ir::all([
                ir::same_cols("_mv_s", "_mv_d", &keys),
                ir::col("_mv_s", VALUE).bin(Op::Same, ir::col("_mv_d", VALUE)),
            ]);
            Stmt::Merge {
                into: Name::of(&values_table(plan.id, v.first.slot)),
                alias: "_mv_s".into(),
                using: From::query(change, "_mv_d"),
                on,
                whens: vec![
                    When {
                        matched: true,
                        cond: Some(after.clone().bin(Op::LtEq, Expr::Int(0))),
                        action: Action::Delete,
                    },
                    When {
                        matched: true,
                        cond: None,
                        action: Action::Update(vec![(COUNT.to_string(), after)]),
                    },
                    When {
                        matched: false,
                        cond: Some(ir::col("_mv_d", COUNT).bin(Op::Gt, Expr::Int(0))),
                        action: Action::Insert(values),
                    },
                ],
            }
        })
        .collect()
}

/// Empties and fills each distinct aggregate's table from the current input (a recompute).
pub fn values_refill_sql(plan: &Plan, a: &Aggregate) -> Vec<Stmt> {
    values_of(a)
        .into_iter()
        .flat_map(|v| {
            let table = Name::of(&values_table(plan.id, v.first.slot));
            [
                Stmt::delete_all(table.clone()),
                Stmt::insert(table, values_state_sql(plan, a, v.first)),
            ]
        })
        .collect()
}
