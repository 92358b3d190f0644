//! Statements planned once (see `one_shot.cpp`): parsed for their kind, then submitted as
//! parsed. DuckDB 2.0 plans a prepared statement that reads a table again at every execution,
//! so prepare-then-execute plans such a statement twice; a statement that runs once (a query of
//! the simple protocol) need not be prepared at all.

use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::ptr;

use duckdb::ffi;

use super::duck::{Conn, Prepared, StatementKind};
use super::error::EngineError;

extern "C" {
    fn duckmv_parse_one(
        connection: ffi::duckdb_connection,
        query: *const c_char,
        out_statement: *mut *mut c_void,
        out_type: *mut u32,
    );
    pub(super) fn duckmv_destroy_parsed(statement: *mut c_void);
    pub(super) fn duckmv_copy_parsed(statement: *const c_void) -> *mut c_void;
    pub(super) fn duckmv_submit_parsed(
        connection: ffi::duckdb_connection,
        statement: *mut c_void,
        values: *const *const c_char,
        n_values: u64,
        out_result: *mut ffi::duckdb_pending_result,
    ) -> ffi::duckdb_state;
}

impl Conn {
    /// `sql` parsed to run once, with its kind; None when it is not one statement that parses
    /// (the caller prepares it instead, which reports the error as preparing always has).
    pub fn parse_once(&self, sql: &str) -> Option<Prepared> {
        let c_sql = CString::new(sql).ok()?;
        let mut statement: *mut c_void = ptr::null_mut();
        let mut kind = 0u32;
        // SAFETY: the connection is open; the statement returned is ours until submitted or
        // destroyed, which the Prepared built here sees to.
        unsafe { duckmv_parse_one(self.raw(), c_sql.as_ptr(), &mut statement, &mut kind) };
        if statement.is_null() {
            return None;
        }
        Some(Prepared::parsed(statement, StatementKind::from_raw(kind)))
    }
}

/// Submits `p`'s parsed statement (which then belongs to DuckDB), storing the pending result
/// in `pending` for the caller to run and destroy. An error when it ran already.
///
/// # Safety
/// `pending` must be destroyed with `duckdb_destroy_pending` whatever this returns.
pub(super) unsafe fn submit(
    conn: &Conn,
    p: &Prepared,
    pending: &mut ffi::duckdb_pending_result,
) -> Result<ffi::duckdb_state, EngineError> {
    let statement = p.parsed.replace(ptr::null_mut());
    if statement.is_null() {
        return Err(EngineError::internal("a statement planned once ran twice"));
    }
    Ok(duckmv_submit_parsed(
        conn.raw(),
        statement,
        ptr::null(),
        0,
        pending,
    ))
}

/// Frees `p`'s parsed statement when it never ran.
pub(super) fn destroy(p: &Prepared) {
    let statement = p.parsed.replace(ptr::null_mut());
    if !statement.is_null() {
        // SAFETY: a statement from duckmv_parse_one that was not submitted.
        unsafe { duckmv_destroy_parsed(statement) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Database;

    fn conn() -> Conn {
        let db = Database::open(":memory:").unwrap();
        let c = db.connect().unwrap();
        c.exec("CREATE TABLE t AS SELECT range AS k FROM range(5000)")
            .unwrap();
        c
    }

    fn rows(c: &Conn, p: &Prepared) -> usize {
        let mut r = c.execute(p).unwrap();
        let mut n = 0;
        while let Some(b) = r.next_batch().unwrap() {
            n += b.num_rows();
        }
        n
    }

    #[test]
    fn a_parsed_statement_runs_once_with_its_kind() {
        let c = conn();
        let p = c.parse_once("SELECT k FROM t WHERE k % 2 = 0").unwrap();
        assert_eq!(p.kind, StatementKind::Select);
        assert!(p.runs_once());
        // Streams past one chunk (2,500 rows), as a prepared statement's result does.
        assert_eq!(rows(&c, &p), 2500);
        let again = c.execute(&p).err().expect("a second run fails");
        assert!(again.message.contains("ran twice"), "{}", again.message);
        let u = c.parse_once("UPDATE t SET k = k + 1 WHERE k < 10").unwrap();
        assert_eq!(u.kind, StatementKind::Update);
        assert_eq!(c.execute(&u).unwrap().drain_changed_rows().unwrap(), 10);
    }

    #[test]
    fn what_is_not_one_statement_is_left_to_prepare() {
        let c = conn();
        assert!(c.parse_once("SELECT 1; SELECT 2").is_none());
        assert!(c.parse_once("SELEC 1").is_none());
        assert!(c.parse_once("").is_none());
        // Dropped without running: freed, and the connection goes on.
        drop(c.parse_once("SELECT k FROM t").unwrap());
        let p = c.parse_once("SELECT no_such FROM t").unwrap();
        let e = c.execute(&p).err().expect("a binder error");
        assert!(e.message.contains("no_such"), "{}", e.message);
        assert_eq!(rows(&c, &c.parse_once("SELECT 1").unwrap()), 1);
    }
}
