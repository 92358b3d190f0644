//! The steps that bring the rows a view keeps for itself up to date before its own refresh
//! reads their change: a recursive query's (`plan::recursive`, `plan::rederive`) and a window
//! query's read as a FROM item (`plan::sub_window`).

use super::{run, Step};
use crate::ir::{Name, Stmt};
use crate::plan::{self, Plan};

/// For a view over a recursive query whose tables changed: the steps finding the rows the
/// recursive query gains and loses and applying them to its rows, before the view reads them
/// as their source's change (see `plan::recursive` and `plan::rederive`).
pub(super) fn recursion_change(plan: &Plan, changed: &[bool], lost: bool) -> Vec<Step> {
    let Some(r) = plan.recursion.as_ref().filter(|r| changed[r.source]) else {
        return Vec::new();
    };
    let mut steps = Vec::new();
    if lost && !r.all {
        if let Some(over) = plan::overdelete_sql(plan, r, changed) {
            let what = "find the rows of the recursive query derived from lost rows";
            steps.push(run(what, over, false));
            let what = "take them out of the recursive query's rows";
            steps.push(run(what, plan::remove_sql(plan, r), false));
        }
    }
    let Some(derive) = plan::derive_sql(plan, r, changed, lost) else {
        return steps;
    };
    let what = if lost && !r.all {
        "derive the rows the recursive query gains, and those taken out that still hold"
    } else if lost {
        "derive the derivations the recursive query gains (+) and loses (-)"
    } else {
        "derive the rows the recursive query gains from the inserted rows"
    };
    steps.push(run(what, derive, false));
    if lost && r.all {
        let what = "take a copy out of its rows per derivation lost";
        steps.push(run(what, plan::remove_copies_sql(plan, r), false));
    }
    let absorb = plan::absorb_sql(plan, r);
    steps.push(run(
        "add the gain to the recursive query's rows",
        absorb,
        false,
    ));
    steps
}

/// For a view reading window queries as FROM items whose tables changed: the steps writing
/// the change of each one's kept rows for the partitions the change touches and applying it,
/// before the view reads it as their source's change (see `plan::sub_window`); and the steps
/// emptying those changes after it.
pub(super) fn window_change(plan: &Plan, changed: &[bool]) -> (Vec<Step>, Vec<Step>) {
    let mut steps = Vec::new();
    let mut emptied = Vec::new();
    for w in plan.windows.iter().filter(|w| changed[w.source]) {
        let Some(change) = plan::window_change_sql(plan, w, changed) else {
            continue;
        };
        let what = "find the window query's rows of the partitions the change touches, old and new";
        steps.push(run(what, change, false));
        let clear = plan::window_clear_sql(plan, w);
        steps.push(run(
            "delete its kept rows of those partitions",
            clear,
            false,
        ));
        steps.push(run(
            "keep their new rows",
            plan::window_fill_sql(plan, w),
            false,
        ));
        let sql = Stmt::delete_all(Name::of(plan::win_change(plan, w)));
        emptied.push(run("empty the window query's change", sql, false));
    }
    (steps, emptied)
}
