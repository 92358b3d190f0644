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
    fn duckmv_destroy_parsed(statement: *mut c_void);
    fn duckmv_submit_parsed(
        connection: ffi::duckdb_connection,
        statement: *mut c_void,
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
    Ok(duckmv_submit_parsed(conn.raw(), statement, pending))
}

/// Frees `p`'s parsed statement when it never ran.
pub(super) fn destroy(p: &Prepared) {
    let statement = p.parsed.replace(ptr::null_mut());
    if !statement.is_null() {
        // SAFETY: a statement from duckmv_parse_one that was not submitted.
        unsafe { duckmv_destroy_parsed(statement) };
    }
}
