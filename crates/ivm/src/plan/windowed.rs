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

use super::{positional, rel_cur, rel_delta, storage, work, Block, Plan, Rel, Windowed};
use crate::text::{ident, null_safe_eq};
use crate::user_expr::Hole;

fn keys(w: &Windowed) -> Vec<String> {
    (1..=w.keys).map(|i| format!("_p{i}")).collect()
}

/// The view's rows over the current input rows `_mv_i` that pass `filter`, each after its
/// partition key: the storage's rows.
fn rows_sql(plan: &Plan, w: &Windowed, filter: &str) -> String {
    let mut cols: Vec<String> = keys(w).iter().map(|k| format!("_mv_i.{k}")).collect();
    let input_col = |j: usize| crate::ir::col("_mv_i", format!("_i{}", j + 1)).to_ast();
    for ((e, c), t) in w
        .select
        .iter()
        .zip(positional(plan.columns.len()))
        .zip(&plan.types)
    {
        cols.push(format!(
            "CAST(({}) AS {t}) AS {c}",
            e.filled(Hole::Input, input_col)
        ));
    }
    let qualify = match &w.qualify {
        Some(q) => format!(" QUALIFY {}", q.filled(Hole::Input, input_col)),
        None => String::new(),
    };
    format!(
        "SELECT {} FROM ({}) AS _mv_i{filter}{qualify}",
        cols.join(", "),
        rel_cur(&plan.sources, &Rel::Block(w.input.clone()))
    )
}

/// The storage's rows from the current base data (to populate or recompute).
pub fn windowed_state_sql(plan: &Plan, w: &Windowed) -> String {
    rows_sql(plan, w, "")
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
fn touched(plan: &Plan, w: &Windowed, changed: &[bool]) -> Option<String> {
    let d = rel_delta(&plan.sources, &Rel::Block(keys_block(w)), changed)?;
    let cols: Vec<String> = keys(w).iter().map(|k| format!("_mv_d.{k}")).collect();
    Some(format!(
        "SELECT DISTINCT {} FROM ({d}) AS _mv_d",
        cols.join(", ")
    ))
}

/// Fills the work table with the touched partitions; None when no source it reads changed.
pub fn windowed_touched_sql(plan: &Plan, w: &Windowed, changed: &[bool]) -> Option<String> {
    let t = touched(plan, w, changed)?;
    Some(format!("INSERT INTO {} {t}", work(plan.id)))
}

/// The work table's shape (used once, at CREATE).
pub fn windowed_work_shape_sql(plan: &Plan, w: &Windowed) -> String {
    let all = vec![true; plan.sources.len()];
    let t = touched(plan, w, &all).expect("a window view reads a source");
    format!("SELECT * FROM ({t}) AS _mv_t LIMIT 0")
}

/// `rel` (aliased `_mv_s`) is in a touched partition.
fn in_touched(plan: &Plan, w: &Windowed, rel: &str) -> String {
    format!(
        " WHERE EXISTS (SELECT 1 FROM {} AS _mv_w WHERE {})",
        work(plan.id),
        null_safe_eq(rel, "_mv_w", &keys(w))
    )
}

/// The stored rows of the touched partitions (for the views downstream).
pub fn windowed_touched_rel(plan: &Plan, w: &Windowed) -> String {
    format!(
        "(SELECT * FROM {} AS _mv_s{})",
        storage(plan.id),
        in_touched(plan, w, "_mv_s")
    )
}

/// Deletes the stored rows of the touched partitions.
pub fn windowed_clear_sql(plan: &Plan, w: &Windowed) -> String {
    format!(
        "DELETE FROM {} AS _mv_s{}",
        storage(plan.id),
        in_touched(plan, w, "_mv_s")
    )
}

/// Inserts the touched partitions' rows, recomputed over the current input.
pub fn windowed_fill_sql(plan: &Plan, w: &Windowed) -> String {
    let cols: Vec<String> = keys(w)
        .into_iter()
        .chain(positional(plan.columns.len()))
        .collect();
    format!(
        "INSERT INTO {} ({}) {}",
        storage(plan.id),
        cols.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", "),
        rows_sql(plan, w, &in_touched(plan, w, "_mv_i"))
    )
}
