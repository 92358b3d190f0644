//! A full refresh: the storage computed again from the view's definition. Views downstream get
//! the old rows with −1 and the new ones with +1.
//!
//! A large storage is rebuilt beside the old one and swapped in (`CREATE TABLE … AS`, `DROP`,
//! `RENAME`), at the cost of `CREATE TABLE … AS` of the state query: deleting every stored row
//! instead costs DuckDB a mark per row and their write-ahead log entries at commit (8 ms plus
//! 23 ms at commit for 1.55M checkpointed rows, measured). A small one is emptied and filled:
//! the count, `DROP` and `RENAME` of a swap (0.5–0.7 ms each) cost more than deleting a few
//! thousand rows (a 25-row view's full refresh: 4 ms deleting, 5.7 ms swapping). Readers keep
//! seeing the old table until the refresh commits (DuckDB's catalog has snapshots); a second
//! refresh of the view meanwhile fails on the new table's name with 40001, as two refreshes of
//! one view fail at commit otherwise.
//!
//! The statements that compute rows from the sources are planned at each run ([`Step::Fresh`]):
//! with the tables' statistics, V1's (TPC-H Q1's aggregate over 6M rows) took 56–70 ms
//! in-process against 80–85 ms without them, as a kept plan is made, and planning it costs a few
//! milliseconds.

use super::{advance, run, Program, Step};
use crate::capture;
use crate::ir::{Name, Stmt};
use crate::plan::{self, Body, Plan};

/// What a recompute does with the rows it replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Replace {
    /// None are there: the view was not populated, its storage is empty.
    Nothing,
    /// Delete them, then insert the new rows.
    Delete,
    /// Build the new rows in a table of their own and put it in the storage's place.
    Swap,
}

/// The program recomputing the storage; `downstream` is the log of the views that read it.
pub fn recompute(plan: &Plan, replace: Replace, downstream: Option<&str>) -> Program {
    let out = plan::output_view(plan.id);
    let mut steps = Vec::new();
    if let (true, Some(d)) = (replace != Replace::Nothing, downstream) {
        let old = capture::append_sql(d, &format!("SELECT *, -1 FROM {out}"));
        steps.push(run("feed the old rows downstream", old, false));
    }
    steps.extend(side_tables(plan));
    match replace {
        Replace::Swap => steps.extend(swap(plan)),
        Replace::Nothing | Replace::Delete => steps.extend(delete_and_fill(plan)),
    }
    steps.push(advance(plan));
    if let Some(d) = downstream {
        let new = capture::append_sql(d, &format!("SELECT *, 1 FROM {out}"));
        steps.push(run("feed the new rows downstream", new, false));
    }
    Program {
        steps,
        mode: "full",
    }
}

/// The tables beside the storage that the state query reads: recursive and window queries'
/// rows, aggregates' distinct values.
fn side_tables(plan: &Plan) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(r) = &plan.recursion {
        let [empty, fill] = plan::refill_sql(plan, r);
        steps.push(run("empty the recursive query's rows", empty, false));
        steps.push(fresh("compute the recursive query's rows", fill, false));
    }
    for w in &plan.windows {
        let [empty, fill] = plan::window_refill_sql(plan, w);
        steps.push(run("empty the window query's rows", empty, false));
        steps.push(fresh("compute the window query's rows", fill, false));
    }
    if let Body::Aggregate(a) = &plan.body {
        let refill = plan::values_refill_sql(plan, a);
        steps.extend(
            refill
                .into_iter()
                .map(|sql| fresh("count the distinct values again", sql, false)),
        );
    }
    steps
}

fn delete_and_fill(plan: &Plan) -> [Step; 2] {
    let storage = Name::of(&plan::storage(plan.id));
    let state = crate::refresh::state_sql(plan);
    [
        run("empty the storage", Stmt::delete_all(storage.clone()), true),
        fresh(
            "recompute the storage from the definition",
            format!("INSERT INTO {storage} {state}"),
            true,
        ),
    ]
}

/// The old rows counted (a refresh's row count includes the rows it removed), the new ones
/// built, the old table dropped and the new one renamed to the storage's name.
fn swap(plan: &Plan) -> [Step; 4] {
    let storage = Name::of(&plan::storage(plan.id));
    let next = Name::of(&plan::storage_next(plan.id));
    let bare = storage.0.last().cloned().unwrap_or_default();
    let count = Step::Count {
        what: "count the rows replaced",
        sql: format!("SELECT count(*) FROM {storage}"),
    };
    let build = Stmt::CreateAs {
        name: next.clone(),
        query: crate::refresh::state_sql(plan),
    };
    [
        count,
        fresh("compute the new rows from the definition", build, true),
        run("drop the old rows", Stmt::DropTable(storage), false),
        run(
            "put the new rows in the storage's place",
            Stmt::Rename {
                from: next,
                to: bare,
            },
            false,
        ),
    ]
}

/// A step computing rows from the sources, planned at each run.
fn fresh(what: &'static str, stmt: impl std::fmt::Display, counted: bool) -> Step {
    Step::Fresh {
        what,
        sql: stmt.to_string(),
        counted,
    }
}
