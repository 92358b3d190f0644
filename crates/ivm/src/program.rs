//! REFRESH as a program: the statements one refresh of a view runs, built from its plan and
//! the set of its sources with pending changes, kept with the cached plan (one per set), run
//! by [`run`] and printed by `EXPLAIN REFRESH MATERIALIZED VIEW`.
//!
//! Building is pure: the same plan, changed set and downstream log give the same program, so
//! a program is cached for as long as its plan is.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::capture;
use super::ir::{self, Expr, From, Item, Name, Query, Select, Stmt};
use super::plan::{self, Body, Plan};
use super::{IvmError, Sql};

mod kept;
mod recompute;
use kept::{recursion_change, window_change};
pub use recompute::{recompute, Replace};

/// What one refresh runs, in order.
#[derive(Debug, PartialEq)]
pub struct Program {
    pub steps: Vec<Step>,
    /// How `duckmv.views.last_refresh_mode` records it.
    pub mode: &'static str,
}

#[derive(Debug, PartialEq)]
pub enum Step {
    /// A statement; `counted`: its row count adds to the refresh's. `ends`: the sources whose
    /// log ends (as the refresh's probe read them) are its parameters, in order.
    Run {
        what: &'static str,
        sql: String,
        counted: bool,
        ends: Vec<usize>,
    },
    /// A statement computing rows from the whole of the view's sources (a recompute's), planned
    /// at each run rather than from a kept plan: its run costs far more than its planning, and a
    /// fresh plan uses what the tables' statistics say now, which a kept plan is made without
    /// (`engine::kept_plan` in the server). Row counts add to the refresh's when `counted`.
    Fresh {
        what: &'static str,
        sql: String,
        counted: bool,
    },
    /// A query of one number that adds to the refresh's row count: the rows a swap replaces.
    Count { what: &'static str, sql: String },
    /// `then` runs only when the query `probe` returns true.
    When {
        what: &'static str,
        probe: String,
        then: Vec<Step>,
    },
}

/// A step running `stmt`, printed once here: the program is built once and run many times.
fn run(what: &'static str, stmt: impl std::fmt::Display, counted: bool) -> Step {
    Step::Run {
        what,
        sql: stmt.to_string(),
        counted,
        ends: Vec::new(),
    }
}

/// The incremental refresh for the sources flagged in `changed`; `lost`: a table the view's
/// recursive query reads lost rows; `downstream` is the log of views that read this one.
pub fn incremental(plan: &Plan, changed: &[bool], lost: bool, downstream: Option<&str>) -> Program {
    if plan.limit.is_some() {
        if let Some(d) = downstream {
            return top_rows_fed(plan, changed, lost, d);
        }
    }
    let (body, uses_work) = match &plan.body {
        Body::Bag { rel, distinct } => bag(plan, rel, *distinct, changed, downstream),
        Body::Aggregate(a) => aggregate(plan, a, changed, downstream),
        Body::Windowed(w) => windowed(plan, w, changed, downstream),
        Body::Full { .. } => return recompute(plan, Replace::Delete, downstream),
    };
    let mut steps = recursion_change(plan, changed, lost);
    let gained = !steps.is_empty();
    let (windows, emptied) = window_change(plan, changed);
    steps.extend(windows);
    steps.extend(body);
    if gained {
        let sql = Stmt::delete_all(Name::of(&plan::rec_change(plan.id)));
        steps.push(run("empty the recursive query's gain", sql, false));
    }
    steps.extend(emptied);
    if uses_work {
        let sql = Stmt::delete_all(Name::of(&plan::work(plan.id)));
        steps.push(run("empty the work table", sql, false));
    }
    if changed.iter().any(|c| *c) {
        steps.push(advance(plan));
    }
    Program {
        steps,
        mode: "incremental",
    }
}

fn bag(
    plan: &Plan,
    rel: &plan::Rel,
    distinct: bool,
    changed: &[bool],
    downstream: Option<&str>,
) -> (Vec<Step>, bool) {
    let Some(delta) = plan::bag_delta_sql(plan, rel, changed) else {
        return (Vec::new(), false);
    };
    let Some(d) = downstream else {
        // Nobody needs the change kept: merge it straight from the deltas.
        let merge = plan::bag_merge_sql(plan, From::query(delta, "_mv_d"));
        return (
            vec![run(
                "merge the consolidated change into the storage",
                merge,
                true,
            )],
            false,
        );
    };
    let work = Name::of(&plan::work(plan.id));
    let change = if distinct {
        plan::distinct_transitions_sql(plan)
    } else {
        let cols = plan::positional(plan.columns.len())
            .into_iter()
            .chain(["_mv_count".to_string()])
            .map(|c| Item::Expr(ir::bare(c), None))
            .collect();
        let all = From::Table {
            name: work.clone(),
            alias: None,
        };
        Query::select(Select::new(cols, vec![all]))
    };
    let steps = vec![
        run(
            "consolidate the change into the work table",
            Stmt::insert(work.clone(), delta),
            false,
        ),
        run(
            "feed the change to the views that read this one",
            capture::append_sql(d, &change.to_string()),
            false,
        ),
        run(
            "merge the change into the storage",
            plan::bag_merge_sql(plan, From::table(work, "_mv_d")),
            true,
        ),
    ];
    (steps, true)
}

fn aggregate(
    plan: &Plan,
    a: &plan::Aggregate,
    changed: &[bool],
    downstream: Option<&str>,
) -> (Vec<Step>, bool) {
    if downstream.is_none() && a.groups > 0 && !plan::agg_may_recompute(a) {
        // Sums and counts need neither the old state nor a recompute flag: one MERGE from the
        // deltas.
        let Some(delta) = plan::agg_delta_sql(plan, a, changed) else {
            return (Vec::new(), false);
        };
        let merge = plan::agg_apply_sql(plan, a, From::query(delta, "_mv_d"));
        let mut steps: Vec<Step> = keep_change(plan, a, changed).collect();
        steps.push(run(
            "merge the change per group into the storage",
            merge,
            true,
        ));
        steps.extend(count_values(plan, a));
        return (steps, false);
    }
    let Some(fill) = plan::agg_fill_work_sql(plan, a, changed) else {
        return (Vec::new(), false);
    };
    let work = Name::of(&plan::work(plan.id));
    let affected = plan::agg_affected_rel(plan, a);
    let feed = |sign: i64| {
        downstream.map(|d| {
            let rows = plan::output_sql(plan, affected.clone());
            capture::append_sql(d, &signed(rows, sign).to_string())
        })
    };
    let mut steps: Vec<Step> = keep_change(plan, a, changed).collect();
    steps.push(run(
        "consolidate the change per group into the work table",
        fill,
        false,
    ));
    steps.extend(count_values(plan, a));
    if let Some(old) = feed(-1) {
        steps.push(run(
            "feed the touched groups' old rows downstream",
            old,
            false,
        ));
    }
    steps.push(run(
        "combine the change with the stored groups",
        plan::agg_apply_sql(plan, a, From::table(work.clone(), "_mv_d")),
        true,
    ));
    if plan::agg_may_recompute(a) {
        let then = plan::agg_recompute_sql(plan, a)
            .into_iter()
            .map(|sql| run("recompute the flagged groups from the base data", sql, true))
            .collect();
        steps.push(Step::When {
            what: "when the change flagged groups whose state it cannot know",
            probe: flagged(work).to_string(),
            then,
        });
    }
    if let Some(new) = feed(1) {
        steps.push(run(
            "feed the touched groups' new rows downstream",
            new,
            false,
        ));
    }
    (steps, true)
}

/// For distinct aggregates kept by value: the change rows kept in a table, which the change
/// per group and the merges into the values' counts read.
fn keep_change(plan: &Plan, a: &plan::Aggregate, changed: &[bool]) -> impl Iterator<Item = Step> {
    let keep = plan::keep_change_sql(plan, a, changed);
    keep.into_iter()
        .map(|sql| run("keep the change rows for the distinct values", sql, false))
}

/// For distinct aggregates kept by value: the change's values merged into their counts, once
/// the change per group has read the counts before it, and the change rows let go.
fn count_values(plan: &Plan, a: &plan::Aggregate) -> Vec<Step> {
    let mut steps: Vec<Step> = plan::values_merge_sql(plan, a)
        .into_iter()
        .map(|sql| {
            run(
                "merge the change into the distinct values' counts",
                sql,
                false,
            )
        })
        .collect();
    if !steps.is_empty() {
        let sql = Stmt::delete_all(Name::of(&plan::change_table(plan.id)));
        steps.push(run("empty the kept change rows", sql, false));
    }
    steps
}

/// `SELECT *, sign FROM (rows)`: rows with the sign they enter a log with.
fn signed(rows: Query, sign: i64) -> Query {
    Query::select(Select::new(
        vec![Item::Star, Item::Expr(Expr::Int(sign), None)],
        vec![From::query(rows, "_mv_o")],
    ))
}

/// `SELECT EXISTS (SELECT 1 FROM work WHERE _mv_rc)`: whether the change flagged groups.
fn flagged(work: Name) -> Query {
    let any = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![From::Table {
            name: work,
            alias: None,
        }],
    )
    .filtered([ir::bare("_mv_rc")]);
    Query::select(Select::new(
        vec![Item::Expr(ir::exists(Query::select(any)), None)],
        Vec::new(),
    ))
}

/// A top-k view with views downstream: they read its top rows, not the whole result the
/// storage keeps, so they get the top rows before the refresh with −1 and after it with +1
/// (k rows each way; what did not change cancels in their consolidation).
fn top_rows_fed(plan: &Plan, changed: &[bool], lost: bool, downstream: &str) -> Program {
    let mut inner = incremental(plan, changed, lost, None);
    if inner.steps.is_empty() {
        return inner;
    }
    let out = plan::output_view(plan.id);
    let old = capture::append_sql(downstream, &format!("SELECT *, -1 FROM {out}"));
    let new = capture::append_sql(downstream, &format!("SELECT *, 1 FROM {out}"));
    inner.steps.insert(
        0,
        run("feed the top rows before the change downstream", old, false),
    );
    inner.steps.push(run(
        "feed the top rows after the change downstream",
        new,
        false,
    ));
    inner
}

/// Window functions: the touched partitions are found, their rows deleted and computed again
/// (see `plan::windowed`); views downstream get the old rows with −1 and the new with +1.
fn windowed(
    plan: &Plan,
    w: &plan::Windowed,
    changed: &[bool],
    downstream: Option<&str>,
) -> (Vec<Step>, bool) {
    let Some(touched) = plan::windowed_touched_sql(plan, w, changed) else {
        return (Vec::new(), false);
    };
    let feed = |sign: i64| {
        downstream.map(|d| {
            let rows = plan::output_sql(plan, plan::windowed_touched_rel(plan, w));
            capture::append_sql(d, &signed(rows, sign).to_string())
        })
    };
    let mut steps = vec![run(
        "find the partitions the change touches",
        touched,
        false,
    )];
    steps.extend(feed(-1).map(|sql| {
        run(
            "feed the touched partitions' old rows downstream",
            sql,
            false,
        )
    }));
    steps.push(run(
        "delete the touched partitions' rows",
        plan::windowed_clear_sql(plan, w),
        true,
    ));
    steps.push(run(
        "compute the touched partitions again from the base data",
        plan::windowed_fill_sql(plan, w),
        true,
    ));
    steps.extend(feed(1).map(|sql| {
        run(
            "feed the touched partitions' new rows downstream",
            sql,
            false,
        )
    }));
    (steps, true)
}

/// Moves the view past what it read: to the last pending positions its refresh's probe saw in
/// this transaction's snapshot (the program writes no log it reads).
///
/// Every source's reader moves, not only those of the sources read: one with nothing pending
/// keeps its position (its end is not past it). So two refreshes of the same view that write
/// anything always update the same rows, and DuckDB lets only one of them commit: what keeps
/// a view's own log appended by one refresh at a time (see `capture`). A view with no logged
/// source updates its catalog row instead, for the same reason.
fn advance(plan: &Plan) -> Step {
    match capture::advance_to_ends_sql(plan) {
        Some((sql, ends)) => Step::Run {
            what: "move the view past the changes read",
            sql,
            counted: false,
            ends,
        },
        None => run(
            "claim the view for this transaction",
            format!(
                "UPDATE _duckmv.views SET populated = populated WHERE id = {}",
                plan.id
            ),
            false,
        ),
    }
}

/// Runs the program with where each source's reader moves (None: it stays); the rows its
/// counted statements changed.
pub fn execute(
    db: &mut dyn Sql,
    steps: &[Step],
    log_ends: &[Option<i64>],
) -> Result<u64, IvmError> {
    let mut rows = 0;
    for step in steps {
        match step {
            Step::Run {
                sql, counted, ends, ..
            } => {
                let n = db.exec_hot(sql, &capture::end_params(ends, log_ends)?)?;
                if *counted {
                    rows += n;
                }
            }
            Step::Fresh { sql, counted, .. } => {
                let n = db.exec(sql)?;
                if *counted {
                    rows += n;
                }
            }
            Step::Count { sql, .. } => {
                let r = db.query_hot(sql, &[])?;
                let n = r.first().and_then(|r| r[0].as_deref()).unwrap_or("0");
                rows += n.parse::<u64>().unwrap_or(0);
            }
            Step::When { probe, then, .. } => {
                let r = db.query_hot(probe, &[])?;
                if r.first().and_then(|r| r[0].as_deref()) == Some("true") {
                    rows += execute(db, then, log_ends)?;
                }
            }
        }
    }
    Ok(rows)
}

/// The program as the lines `EXPLAIN REFRESH` shows: each step numbered with what it does,
/// its statement indented below.
pub fn lines(steps: &[Step], indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Run { what, sql, .. }
            | Step::Fresh { what, sql, .. }
            | Step::Count { what, sql } => {
                out.push(format!("{pad}{}. {what}", i + 1));
                out.push(format!("{pad}     {sql}"));
            }
            Step::When { what, probe, then } => {
                out.push(format!("{pad}{}. {what}:", i + 1));
                out.push(format!("{pad}     {probe}"));
                lines(then, indent + 5, out);
            }
        }
    }
}

/// Which program: incremental for a changed set, or a recompute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// The sources with pending changes, and whether a table the view's recursive query reads
    /// lost rows.
    Incremental {
        changed: Vec<bool>,
        lost: bool,
    },
    Recompute {
        replace: Replace,
    },
}

/// A program's key with the log of the views downstream.
type Built = HashMap<(Key, Option<String>), Arc<Program>>;

/// The programs built for one cached plan.
#[derive(Default)]
pub struct Programs(Mutex<Built>);

impl Programs {
    /// The program for `key`, built on first use.
    pub fn get(&self, plan: &Plan, key: Key, downstream: Option<&str>) -> Arc<Program> {
        let k = (key, downstream.map(str::to_string));
        let mut map = self.0.lock();
        if let Some(p) = map.get(&k) {
            return p.clone();
        }
        let program = Arc::new(match &k.0 {
            Key::Incremental { changed, lost } => incremental(plan, changed, *lost, downstream),
            Key::Recompute { replace } => recompute(plan, *replace, downstream),
        });
        map.insert(k, program.clone());
        program
    }
}

// A view row is cloned when read from the catalog; its programs are rebuilt on demand.
impl Clone for Programs {
    fn clone(&self) -> Self {
        Programs::default()
    }
}

impl std::fmt::Debug for Programs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Programs({} built)", self.0.lock().len())
    }
}

#[cfg(test)]
mod tests;
