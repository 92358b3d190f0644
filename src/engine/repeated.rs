//! Statements the server runs again and again with the same text (a refresh's probe, merges and
//! log advance), parsed once for the whole server and submitted as copies.
//!
//! Why not prepared statements: DuckDB 2.0 binds and optimizes a prepared statement again at
//! every execution when it reads a table, and these all do, so a prepared statement is planned
//! when prepared and again when it runs. Each session kept its own, so a session's first refresh
//! of a view parsed and planned every statement twice (a one-table view's refresh took 15–17 ms in
//! a new session against 8 ms in a warm one). A parse does not depend on the catalog or the
//! session, so one kept parse serves every session, and each run plans once, as DuckDB would
//! re-plan a prepared statement anyway.

use std::collections::HashMap;
use std::os::raw::{c_char, c_void};
use std::ptr;

use duckdb::ffi;
use parking_lot::Mutex;

use super::duck::Conn;
use super::error::EngineError;
use super::one_shot::{duckmv_copy_parsed, duckmv_destroy_parsed, duckmv_submit_parsed};
use super::result::QueryResult;
use crate::types::ParamValue;

/// More distinct statements than this (views dropped and created over a long run) and the
/// cache starts again from empty.
const MAX_STATEMENTS: usize = 512;

/// The server's parsed statements, by SQL text.
#[derive(Default)]
pub struct Repeated {
    parsed: Mutex<HashMap<String, Parsed>>,
}

/// A statement as DuckDB's parser left it. Never changed once parsed: only copied, under the
/// cache's lock.
struct Parsed(*mut c_void);

// SAFETY: the statement is a plain C++ object tied to no connection or thread; it is only read
// (copied), and only while the cache's lock is held.
unsafe impl Send for Parsed {}

impl Drop for Parsed {
    fn drop(&mut self) {
        // SAFETY: a statement from duckmv_parse_one, owned here alone.
        unsafe { duckmv_destroy_parsed(self.0) };
    }
}

impl Repeated {
    /// A fresh copy of `sql`'s kept parse, parsing and keeping it first when it is new; None when
    /// `sql` is not one statement that parses.
    fn copy(&self, conn: &Conn, sql: &str) -> Option<*mut c_void> {
        if let Some(p) = self.parsed.lock().get(sql) {
            return copied(p);
        }
        // Parsed on a connection of the server's defaults, not the session's: DuckDB's parser
        // reads settings (how `~` and identifiers' case are read), and the parse serves every
        // session. Outside the lock: another session may keep the same text meanwhile, and
        // either parse does.
        let parser = conn.database_defaults().ok()?;
        let parsed = Parsed(parser.parse_once(sql)?.into_parsed());
        let mut kept = self.parsed.lock();
        if kept.len() >= MAX_STATEMENTS {
            kept.clear();
        }
        copied(kept.entry(sql.to_string()).or_insert(parsed))
    }
}

fn copied(p: &Parsed) -> Option<*mut c_void> {
    // SAFETY: the kept statement is alive (the caller holds the lock of the map that owns it).
    let copy = unsafe { duckmv_copy_parsed(p.0) };
    (!copy.is_null()).then_some(copy)
}

impl Conn {
    /// Runs `sql`, a statement run again and again with the same text: from the plan this
    /// connection kept of it (`kept_plan`), or, when its plan cannot be kept, planned once from
    /// the parse kept for the whole server. `params` fill `$1`, `$2`, … as VARCHAR values.
    pub fn run_repeated(&self, sql: &str, params: &[String]) -> Result<QueryResult, EngineError> {
        let repeated = &self.database().repeated;
        if let Some(result) = self.run_kept(sql, params, || repeated.copy(self, sql)) {
            return result;
        }
        let Some(statement) = repeated.copy(self, sql) else {
            return self.run_prepared(sql, params);
        };
        self.count_call();
        let (rc, pending) = with_varchar_values(params, |values, pending| {
            // SAFETY: the copy is ours and taken over by the submission; the values live until
            // it returns.
            unsafe {
                duckmv_submit_parsed(
                    self.raw(),
                    statement,
                    values.as_ptr(),
                    values.len() as u64,
                    pending,
                )
            }
        });
        // SAFETY: the pending result the submission stored, ours alone.
        unsafe { Self::run_pending(rc, pending) }
    }

    /// What does not parse as one statement goes through prepare, which reports why as it
    /// always has.
    fn run_prepared(&self, sql: &str, params: &[String]) -> Result<QueryResult, EngineError> {
        let mut p = self.prepare(sql)?;
        for (i, v) in params.iter().enumerate() {
            p.bind(i + 1, &ParamValue::Text(v.clone()))?;
        }
        self.execute(&p)
    }
}

/// Calls `submit` with `params` as DuckDB VARCHAR values (freed after it returns: DuckDB copies
/// what it keeps) and a place for the pending result, which goes to `run_pending`.
pub(super) fn with_varchar_values(
    params: &[String],
    submit: impl FnOnce(&[ffi::duckdb_value], *mut ffi::duckdb_pending_result) -> ffi::duckdb_state,
) -> (ffi::duckdb_state, ffi::duckdb_pending_result) {
    // SAFETY: each value is made from a live string with its length, and destroyed once.
    unsafe {
        let mut values: Vec<ffi::duckdb_value> = params
            .iter()
            .map(|v| ffi::duckdb_create_varchar_length(v.as_ptr() as *const c_char, v.len() as u64))
            .collect();
        let mut pending: ffi::duckdb_pending_result = ptr::null_mut();
        let rc = submit(&values, &mut pending);
        for v in &mut values {
            ffi::duckdb_destroy_value(v);
        }
        (rc, pending)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::Database;

    fn first(r: crate::engine::QueryResult) -> String {
        let mut r = r;
        let b = r.next_batch().unwrap().unwrap();
        duckdb::arrow::util::display::array_value_to_string(b.column(0), 0).unwrap()
    }

    /// One parse serves every connection, with each run's own values, and each run sees the
    /// tables as they are then.
    #[test]
    fn a_kept_statement_runs_on_every_connection_with_its_values() {
        let db = Database::open(":memory:").unwrap();
        let (a, b) = (db.connect().unwrap(), db.connect().unwrap());
        a.exec("CREATE TABLE t AS SELECT range AS k FROM range(10)")
            .unwrap();
        let sql = "SELECT count(*) FROM t WHERE k >= CAST($1::VARCHAR AS BIGINT)";
        assert_eq!(first(a.run_repeated(sql, &["3".into()]).unwrap()), "7");
        assert_eq!(db.repeated.parsed.lock().len(), 1);
        b.exec("INSERT INTO t VALUES (20)").unwrap();
        assert_eq!(first(b.run_repeated(sql, &["9".into()]).unwrap()), "2");
        assert_eq!(db.repeated.parsed.lock().len(), 1);
        let n = a
            .run_repeated("UPDATE t SET k = k + 1 WHERE k < 5", &[])
            .unwrap()
            .drain_changed_rows()
            .unwrap();
        assert_eq!(n, 5);
    }

    /// The kept parse is made with the server's settings, whatever the session that ran the
    /// statement first had set: it serves every session.
    #[test]
    fn the_parse_is_the_servers_whichever_session_ran_it_first() {
        let db = Database::open(":memory:").unwrap();
        let (a, b) = (db.connect().unwrap(), db.connect().unwrap());
        a.exec("SET preserve_identifier_case = false").unwrap();
        let own = a.query("SELECT 1 AS MixedCase").unwrap().columns[0]
            .name
            .clone();
        assert_eq!(own, "mixedcase", "the setting is read by the parser");
        let sql = "SELECT 2 AS MixedCase";
        for c in [&a, &b] {
            let r = c.run_repeated(sql, &[]).unwrap();
            assert_eq!(r.columns[0].name, "MixedCase");
        }
    }

    /// A statement that fails to plan (its table gone) reports DuckDB's error and the connection
    /// goes on; text that does not parse reports the parser's error and is not kept.
    #[test]
    fn errors_are_duckdbs_and_the_connection_goes_on() {
        let db = Database::open(":memory:").unwrap();
        let c = db.connect().unwrap();
        let e = c.run_repeated("SELECT * FROM gone", &[]).err().unwrap();
        assert!(e.message.contains("gone"), "{}", e.message);
        let e = c.run_repeated("SELEC 1", &[]).err().unwrap();
        assert!(e.message.contains("syntax error"), "{}", e.message);
        assert_eq!(db.repeated.parsed.lock().len(), 1);
        assert_eq!(first(c.run_repeated("SELECT 42", &[]).unwrap()), "42");
    }
}
