//! A window query read as a FROM item beside other relations (`SELECT … FROM (SELECT k, v,
//! row_number() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x JOIN u ON … WHERE x.rn =
//! 1`), kept by the view as rows of its own: `_duckmv.win_<id>_<n>` holds them, each after its
//! partition key (`_p1.._pk`), and the view's query reads them as a source whose change is
//! `_duckmv.wd_<id>_<n>`, so the rest of the view is maintained by whatever rule its query has.
//!
//! Rule, as for a view of window functions (`windowed`): every window function of the query
//! partitions by at least the keys `_p`, so a partition's rows depend only on the input rows of
//! that partition. With P the partitions the input's change touches (both signs),
//! `Δrows = window(I_new restricted to P) − window(I_old restricted to P)`, and the second term
//! is what the view keeps for P. A refresh writes the kept rows of P with −1 and the query over
//! the current input restricted to P with +1 as the change, then replaces the kept rows of P by
//! the new ones. Rows of a partition that did not move appear with both signs; the view's rule
//! takes them as they come (a join or aggregate over them nets to nothing).

use serde::{Deserialize, Serialize};

use super::windowed::{in_partitions, keys, touched, window_rows};
use super::{Plan, Windowed};
use crate::ir::{self, Cte, Expr, From, Item, Name, Op, Query, Select, Stmt};

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct SubWindow {
    /// The source the view's query reads the window query's rows as (its columns are theirs).
    pub source: usize,
    /// The window query over its input, as a window view keeps it.
    pub window: Windowed,
    /// The window query's column types.
    pub types: Vec<String>,
}

/// The table holding the window query's rows (its source's relation).
pub fn win_table<'p>(plan: &'p Plan, sw: &SubWindow) -> &'p str {
    &plan.sources[sw.source].relation
}

/// The table holding their change in a refresh, with `_mv_mult` (its source's change).
pub fn win_change<'p>(plan: &'p Plan, sw: &SubWindow) -> &'p str {
    plan.sources[sw.source]
        .delta
        .as_deref()
        .expect("a kept window query's source has a change table")
}

impl SubWindow {
    /// Which of the plan's sources the window query reads.
    pub fn reads(&self, sources: usize) -> Vec<bool> {
        let mut out = vec![false; sources];
        super::recursive::mark(&self.window.input, &mut out);
        out
    }
}

/// The window query's rows among the current input rows that pass `filter`.
fn rows(plan: &Plan, sw: &SubWindow, filter: Vec<Expr>) -> Query {
    let names = &plan.sources[sw.source].columns;
    window_rows(plan, &sw.window, names, &sw.types, filter)
}

/// All of the window query's rows, each after its partition key: the kept rows from scratch
/// (and, at CREATE, their table's shape).
pub fn window_rows_sql(plan: &Plan, sw: &SubWindow) -> Query {
    rows(plan, sw, Vec::new())
}

/// `INSERT INTO wd` the kept rows of the partitions the change touches with −1 and those
/// partitions' rows now with +1; None when the window query reads no changed source.
pub fn window_change_sql(plan: &Plan, sw: &SubWindow, changed: &[bool]) -> Option<Stmt> {
    let partitions = touched(plan, &sw.window, changed)?;
    let set = || From::table(Name::of("_mv_t"), "_mv_w");
    let mult = |m: i64| Item::named(Expr::Int(m).big_int(), "_mv_mult");
    let kept = From::table(Name::of(win_table(plan, sw)), "_mv_s");
    let old = Select::new(vec![Item::Star, mult(-1)], vec![kept]).filtered([in_partitions(
        set(),
        &sw.window,
        "_mv_s",
    )]);
    let now = rows(plan, sw, vec![in_partitions(set(), &sw.window, "_mv_i")]);
    let new = Select::new(vec![Item::Star, mult(1)], vec![From::query(now, "_mv_r")]);
    let change = Query::With {
        ctes: vec![Cte {
            name: "_mv_t".into(),
            query: partitions,
            materialized: false,
        }],
        body: Box::new(Query::union_all(vec![
            Query::select(old),
            Query::select(new),
        ])),
    };
    Some(Stmt::insert(Name::of(win_change(plan, sw)), change))
}

/// `DELETE FROM win` the rows of the partitions whose old rows the change holds.
pub fn window_clear_sql(plan: &Plan, sw: &SubWindow) -> Stmt {
    let old = From::table(Name::of(win_change(plan, sw)), "_mv_w");
    let any = Select::new(vec![Item::Expr(Expr::Int(1), None)], vec![old]).filtered([
        ir::col("_mv_w", "_mv_mult").bin(Op::Lt, Expr::Int(0)),
        ir::same_cols("_mv_s", "_mv_w", &keys(&sw.window)),
    ]);
    Stmt::Delete {
        from: Name::of(win_table(plan, sw)),
        alias: Some("_mv_s".into()),
        filter: vec![ir::exists(Query::select(any))],
    }
}

/// `INSERT INTO win` the change's new rows.
pub fn window_fill_sql(plan: &Plan, sw: &SubWindow) -> Stmt {
    let columns: Vec<String> = keys(&sw.window)
        .into_iter()
        .chain(plan.sources[sw.source].columns.iter().cloned())
        .collect();
    let items = columns
        .iter()
        .map(|c| Item::Expr(ir::bare(c.clone()), None))
        .collect();
    let change = From::Table {
        name: Name::of(win_change(plan, sw)),
        alias: None,
    };
    let new =
        Select::new(items, vec![change]).filtered([ir::bare("_mv_mult").bin(Op::Gt, Expr::Int(0))]);
    Stmt::Insert {
        into: Name::of(win_table(plan, sw)),
        columns,
        query: Query::select(new),
    }
}

/// `DELETE FROM win; INSERT INTO win <all rows>`.
pub fn window_refill_sql(plan: &Plan, sw: &SubWindow) -> [Stmt; 2] {
    let win = Name::of(win_table(plan, sw));
    [
        Stmt::delete_all(win.clone()),
        Stmt::insert(win, window_rows_sql(plan, sw)),
    ]
}
