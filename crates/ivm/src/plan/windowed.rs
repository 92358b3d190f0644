//! Window functions: storage (`_p1.._pk`, `c1..cn`), the view's rows each with the partition
//! key they came from, one storage row per view row.
//!
//! Delta rule: every window function of the view partitions by at least the keys `_p`, so a
//! partition's rows depend only on the input rows of that partition. Let P be the partitions
//! (values of `_p`) of the input's change ΔI, both signs. Then
//! `Δview = window(I_new restricted to P) − window(I_old restricted to P)`, and the rows of
//! every other partition stay. A refresh records P in the work table, deletes the stored rows
//! of P and inserts the window query over the current input restricted to P: its cost follows
//! the touched partitions, not the table. Ties in a window's ORDER BY are broken as DuckDB
//! breaks them when the partition is recomputed, as in any run of the query.

use super::aggregate::named;
use super::{positional, rel_cur, rel_delta, storage, work, Block, Plan, Rel, Windowed};
use crate::ir::{self, user, Expr, From, Item, Name, Query, Select, Stmt};
use crate::user_expr::Hole;

pub(super) fn keys(w: &Windowed) -> Vec<String> {
    (1..=w.keys).map(|i| format!("_p{i}")).collect()
}

/// The view's rows over the current input rows `_mv_i` that pass `filter`, each after its
/// partition key: the storage's rows.
fn rows_sql(plan: &Plan, w: &Windowed, filter: Vec<Expr>) -> Query {
    let names = positional(plan.columns.len());
    window_rows(plan, w, &names, &plan.types, filter)
}

/// The window query's rows over the current input rows `_mv_i` that pass `filter`, each after
/// its partition key, its columns called `names` and cast to `types`.
pub(super) fn window_rows(
    plan: &Plan,
    w: &Windowed,
    names: &[String],
    types: &[String],
    filter: Vec<Expr>,
) -> Query {
    let mut cols: Vec<Item> = keys(w)
        .into_iter()
        .map(|k| Item::Expr(ir::col("_mv_i", k), None))
        .collect();
    let input_col = |j: usize| ir::col("_mv_i", format!("_i{}", j + 1)).to_ast();
    for ((e, c), t) in w.select.iter().zip(names).zip(types) {
        cols.push(Item::named(
            user(&e.filled(Hole::Input, input_col)).cast(t),
            c.clone(),
        ));
    }
    let input = rel_cur(&plan.sources, &Rel::Block(w.input.clone()));
    let mut s = Select::new(cols, vec![From::query(input, "_mv_i")]).filtered(filter);
    // DISTINCT applies after QUALIFY; the partition key columns keep it within partitions.
    s.distinct = w.distinct;
    s.qualify = w
        .qualify
        .as_ref()
        .map(|q| user(&q.filled(Hole::Input, input_col)));
    Query::select(s)
}

/// The storage's rows from the current base data (to populate or recompute).
pub fn windowed_state_sql(plan: &Plan, w: &Windowed) -> Query {
    rows_sql(plan, w, Vec::new())
}

/// The input block with only its partition keys selected: what the change needs to say.
fn keys_block(w: &Windowed) -> Block {
    Block {
        select: w.input.select[..w.keys].to_vec(),
        names: keys(w),
        ..w.input.clone()
    }
}

/// The partitions the change touches, each once.
pub(super) fn touched(plan: &Plan, w: &Windowed, changed: &[bool]) -> Option<Query> {
    let d = rel_delta(&plan.sources, &Rel::Block(keys_block(w)), changed)?;
    let cols = keys(w)
        .into_iter()
        .map(|k| Item::Expr(ir::col("_mv_d", k), None))
        .collect();
    let mut s = Select::new(cols, vec![From::query(d, "_mv_d")]);
    s.distinct = true;
    Some(Query::select(s))
}

/// Fills the work table with the touched partitions; None when no source it reads changed.
pub fn windowed_touched_sql(plan: &Plan, w: &Windowed, changed: &[bool]) -> Option<Stmt> {
    let t = touched(plan, w, changed)?;
    Some(Stmt::insert(Name::of(&work(plan.id)), t))
}

/// The work table's shape (used once, at CREATE).
pub fn windowed_work_shape_sql(plan: &Plan, w: &Windowed) -> Query {
    let all = vec![true; plan.sources.len()];
    let t = touched(plan, w, &all).expect("a window view reads a source");
    let mut s = Select::new(vec![Item::Star], vec![From::query(t, "_mv_t")]);
    s.limit = Some(0);
    Query::select(s)
}

/// `rel` is in a touched partition.
fn in_touched(plan: &Plan, w: &Windowed, rel: &str) -> Expr {
    in_partitions(named(&work(plan.id), "_mv_w"), w, rel)
}

/// `rel` is in one of the partitions `set` (read as `_mv_w`) holds.
pub(super) fn in_partitions(set: From, w: &Windowed, rel: &str) -> Expr {
    let any = Select::new(vec![Item::Expr(Expr::Int(1), None)], vec![set])
        .filtered([ir::same_cols(rel, "_mv_w", &keys(w))]);
    ir::exists(Query::select(any))
}

/// The stored rows of the touched partitions, as `_mv_s` (for the views downstream).
pub fn windowed_touched_rel(plan: &Plan, w: &Windowed) -> From {
    let rows = Select::new(vec![Item::Star], vec![named(&storage(plan.id), "_mv_s")])
        .filtered([in_touched(plan, w, "_mv_s")]);
    From::query(Query::select(rows), "_mv_s")
}

/// Deletes the stored rows of the touched partitions.
pub fn windowed_clear_sql(plan: &Plan, w: &Windowed) -> Stmt {
    Stmt::Delete {
        from: Name::of(&storage(plan.id)),
        alias: Some("_mv_s".into()),
        filter: vec![in_touched(plan, w, "_mv_s")],
    }
}

/// Inserts the touched partitions' rows, recomputed over the current input.
pub fn windowed_fill_sql(plan: &Plan, w: &Windowed) -> Stmt {
    Stmt::Insert {
        into: Name::of(&storage(plan.id)),
        columns: keys(w)
            .into_iter()
            .chain(positional(plan.columns.len()))
            .collect(),
        query: rows_sql(plan, w, vec![in_touched(plan, w, "_mv_i")]),
    }
}
