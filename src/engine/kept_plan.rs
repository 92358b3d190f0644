//! Plans of the statements a session runs again and again (a refresh's probe, merges and log
//! advance), made once by its connection and run again without planning.
//!
//! DuckDB 2.0 plans a prepared statement that reads a table again at every run, because the
//! optimizer may have folded the tables' current statistics into the plan. A plan made with the
//! optimizers that do so switched off depends on the catalog alone, so it is kept and run again
//! until the catalog changes (`kept_plan.cpp` says which optimizers and why). Planning was most of
//! a small refresh: each MERGE of the TPC-H views at SF 1 took 5–14 ms to plan.
//!
//! A statement whose binding wants a new plan at every run (now(), …) is not kept; it goes on as a
//! parse submitted at each run (`repeated`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::raw::{c_char, c_void};
use std::ptr;

use duckdb::ffi;

use super::duck::{borrow_c_string, Conn};
use super::error::EngineError;
use super::repeated::with_varchar_values;
use super::result::QueryResult;

extern "C" {
    fn duckmv_keep_plan(
        connection: ffi::duckdb_connection,
        statement: *const c_void,
        out_error: *mut *mut c_char,
    ) -> *mut c_void;
    fn duckmv_kept_plan_current(connection: ffi::duckdb_connection, kept: *const c_void) -> i32;
    fn duckmv_submit_kept_plan(
        kept: *mut c_void,
        values: *const ffi::duckdb_value,
        n_values: u64,
        out_result: *mut ffi::duckdb_pending_result,
    ) -> ffi::duckdb_state;
    fn duckmv_destroy_kept_plan(kept: *mut c_void);
}

/// More distinct statements than this on one connection and its plans start again from empty.
const MAX_PLANS: usize = 256;

/// One connection's kept plans by SQL text (None for a text whose plan cannot be kept), and how
/// many plannings it made.
#[derive(Default)]
pub struct KeptPlans(RefCell<HashMap<String, Option<KeptPlan>>>, Cell<u64>);

impl KeptPlans {
    /// Drops every plan (before the connection closes).
    pub(super) fn clear(&self) {
        self.0.borrow_mut().clear();
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.0.borrow().values().filter(|p| p.is_some()).count()
    }

    #[cfg(test)]
    fn plannings(&self) -> u64 {
        self.1.get()
    }
}

/// A prepared statement of this connection whose plan is run again.
pub struct KeptPlan(*mut c_void);

impl Drop for KeptPlan {
    fn drop(&mut self) {
        // SAFETY: a statement from duckmv_keep_plan, owned here alone.
        unsafe { duckmv_destroy_kept_plan(self.0) };
    }
}

/// What a connection can do with a text.
enum Plan {
    /// Run this kept plan.
    Kept(*mut c_void),
    /// Submit the parse (its plan cannot be kept).
    Parse,
}

impl Conn {
    /// Runs `sql` from its kept plan, planning and keeping it first when there is none (or the
    /// catalog changed since). `parsed` gives a fresh copy of the statement's parse, which is
    /// what planning needs. None when the statement's plan cannot be kept: the caller submits
    /// the parse.
    pub(super) fn run_kept(
        &self,
        sql: &str,
        params: &[String],
        parsed: impl FnOnce() -> Option<*mut c_void>,
    ) -> Option<Result<QueryResult, EngineError>> {
        let plan = match self.kept_plan(sql, parsed) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let Plan::Kept(kept) = plan else {
            return None;
        };
        self.count_call();
        let (rc, pending) = with_varchar_values(params, |values, pending| {
            // SAFETY: the plan is alive (kept in this connection's map, which nothing changes
            // until this returns); the values live until it returns.
            unsafe { duckmv_submit_kept_plan(kept, values.as_ptr(), values.len() as u64, pending) }
        });
        // SAFETY: the pending result the submission stored, ours alone.
        Some(unsafe { Self::run_pending(rc, pending) })
    }

    /// The kept plan of `sql`, made now when there is none or the one kept was made against
    /// another catalog.
    fn kept_plan(
        &self,
        sql: &str,
        parsed: impl FnOnce() -> Option<*mut c_void>,
    ) -> Result<Plan, EngineError> {
        let kept_plans = self.kept_plans();
        let mut plans = kept_plans.0.borrow_mut();
        match plans.get(sql) {
            Some(None) => return Ok(Plan::Parse),
            // SAFETY: the plan belongs to this connection.
            Some(Some(p)) if unsafe { duckmv_kept_plan_current(self.raw(), p.0) } != 0 => {
                return Ok(Plan::Kept(p.0))
            }
            _ => {}
        }
        let stale = plans.remove(sql).is_some();
        tracing::debug!(target: "duckmv::engine::kept_plan", stale, "planning {sql}");
        let Some(statement) = parsed() else {
            return Ok(Plan::Parse);
        };
        kept_plans.1.set(kept_plans.1.get() + 1);
        let mut error: *mut c_char = ptr::null_mut();
        // SAFETY: the copy is ours; planning reads it and we destroy it after.
        let kept = unsafe {
            let kept = duckmv_keep_plan(self.raw(), statement, &mut error);
            super::one_shot::duckmv_destroy_parsed(statement);
            kept
        };
        if !error.is_null() {
            // Planning failed in this transaction: DuckDB was called. (A plan made is followed
            // by its run, which counts.)
            self.count_call();
            // SAFETY: a message from duckdb_malloc, ours to free.
            let message = unsafe {
                let m = borrow_c_string(error).unwrap_or_default();
                ffi::duckdb_free(error as *mut c_void);
                m
            };
            return Err(EngineError::new(message, 0));
        }
        if plans.len() >= MAX_PLANS {
            plans.clear();
        }
        let entry = (!kept.is_null()).then(|| KeptPlan(kept));
        plans.insert(sql.to_string(), entry);
        Ok(if kept.is_null() {
            Plan::Parse
        } else {
            Plan::Kept(kept)
        })
    }
}

#[cfg(test)]
mod tests;
