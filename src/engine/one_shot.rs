//! Statements planned once per run (see `one_shot.cpp`). DuckDB 2.0 plans a prepared statement
//! that reads a table again at every execution, so prepare-then-execute plans such a statement
//! twice. A statement that runs once (a query of the simple protocol) is parsed for its kind and
//! submitted as parsed; one the extended protocol describes before it runs, without parameters,
//! is parsed and bound alone (its result columns) and a copy is submitted at each Execute.

use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::ptr;

use duckdb::ffi;

use super::duck::{take_c_string, Column, Conn, Prepared, StatementKind};
use super::error::EngineError;
use super::values::logical_type;

extern "C" {
    fn duckmv_parse_one(
        connection: ffi::duckdb_connection,
        query: *const c_char,
        out_statement: *mut *mut c_void,
        out_type: *mut u32,
        out_params: *mut u64,
    );
    fn duckmv_bind_parsed(
        connection: ffi::duckdb_connection,
        statement: *const c_void,
        out_signature: *mut *mut c_void,
        out_error: *mut *mut c_char,
    ) -> ffi::duckdb_state;
    fn duckmv_signature_columns(signature: *const c_void) -> u64;
    fn duckmv_signature_name(signature: *const c_void, i: u64) -> *mut c_char;
    fn duckmv_signature_type(signature: *const c_void, i: u64) -> ffi::duckdb_logical_type;
    fn duckmv_destroy_signature(signature: *mut c_void);
    pub(super) fn duckmv_destroy_parsed(statement: *mut c_void);
    pub(super) fn duckmv_copy_parsed(statement: *const c_void) -> *mut c_void;
    pub(super) fn duckmv_submit_parsed(
        connection: ffi::duckdb_connection,
        statement: *mut c_void,
        values: *const ffi::duckdb_value,
        n_values: u64,
        out_result: *mut ffi::duckdb_pending_result,
    ) -> ffi::duckdb_state;
}

impl Conn {
    /// `sql` parsed to run once, with its kind; None when it is not one statement that parses
    /// (the caller prepares it instead, which reports the error as preparing always has).
    pub fn parse_once(&self, sql: &str) -> Option<Prepared> {
        self.parse(sql).map(|(p, _)| p)
    }

    /// `sql` parsed, then bound alone for its result columns, to run as often as it is executed,
    /// each run planned once (preparing would plan it whole, and DuckDB plans a statement that
    /// reads a table again when it runs). None, for the caller to prepare instead, when it is
    /// not one statement that parses, has parameters (DuckDB prepares those without optimizing
    /// them, and their types come from preparing), or is of a kind `accept` refuses. A binder
    /// error is the error preparing gives.
    pub fn parse_described(
        &self,
        sql: &str,
        accept: impl Fn(StatementKind) -> bool,
    ) -> Option<Result<Prepared, EngineError>> {
        let (mut p, params) = self.parse(sql)?;
        if params > 0 || !accept(p.kind) {
            return None;
        }
        self.count_call();
        let (mut signature, mut error) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: the statement is alive (owned by `p`); the signature or the error returned is
        // ours and freed below.
        let rc =
            unsafe { duckmv_bind_parsed(self.raw(), p.parsed.get(), &mut signature, &mut error) };
        if rc != ffi::DuckDBSuccess {
            // SAFETY: the message duckmv_bind_parsed allocated, freed here.
            let msg = unsafe { take_c_string(error) }
                .unwrap_or_else(|| "could not bind statement".into());
            return Some(Err(EngineError::new(msg, 0)));
        }
        // SAFETY: a signature from duckmv_bind_parsed, read by index within its count, then freed.
        unsafe {
            for i in 0..duckmv_signature_columns(signature) {
                let name = take_c_string(duckmv_signature_name(signature, i)).unwrap_or_default();
                let ty = logical_type(duckmv_signature_type(signature, i));
                p.columns.push(Column { name, ty });
            }
            duckmv_destroy_signature(signature);
        }
        p.reusable = true;
        Some(Ok(p))
    }

    /// `sql` parsed, with the number of its parameters.
    fn parse(&self, sql: &str) -> Option<(Prepared, u64)> {
        let c_sql = CString::new(sql).ok()?;
        let mut statement: *mut c_void = ptr::null_mut();
        let (mut kind, mut params) = (0u32, 0u64);
        // SAFETY: the connection is open; the statement returned is ours until submitted or
        // destroyed, which the Prepared built here sees to.
        unsafe {
            duckmv_parse_one(
                self.raw(),
                c_sql.as_ptr(),
                &mut statement,
                &mut kind,
                &mut params,
            )
        };
        if statement.is_null() {
            return None;
        }
        Some((
            Prepared::parsed(statement, StatementKind::from_raw(kind)),
            params,
        ))
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
    let statement = if p.reusable {
        duckmv_copy_parsed(p.parsed.get())
    } else {
        p.parsed.replace(ptr::null_mut())
    };
    if statement.is_null() {
        return Err(EngineError::internal(if p.reusable {
            "could not copy a parsed statement"
        } else {
            "a statement planned once ran twice"
        }));
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

    fn any(_: StatementKind) -> bool {
        true
    }

    fn names_and_types(cols: &[Column]) -> Vec<(String, String)> {
        cols.iter()
            .map(|c| (c.name.clone(), format!("{:?}", c.ty)))
            .collect()
    }

    /// Bound alone, a statement has the columns preparing gives it, and runs as often as it is
    /// executed, each run seeing the table as it is then.
    #[test]
    fn a_described_statement_has_prepares_columns_and_runs_again() {
        let c = conn();
        for sql in [
            "SELECT k, k::VARCHAR AS s, k / 2.5 AS d, [k] AS l FROM t WHERE k < 3",
            "UPDATE t SET k = k WHERE k < 0 RETURNING k, 'x' AS y",
            "INSERT INTO t SELECT 1 WHERE false",
            "DELETE FROM t WHERE false",
        ] {
            let d = c.parse_described(sql, any).unwrap().unwrap();
            let p = c.prepare(sql).unwrap();
            assert_eq!(d.kind, p.kind, "{sql}");
            assert_eq!(
                names_and_types(&d.columns),
                names_and_types(&p.columns),
                "{sql}"
            );
            assert!(!d.runs_once());
        }
        let d = c
            .parse_described("SELECT k FROM t WHERE k >= 4990", any)
            .unwrap()
            .unwrap();
        assert_eq!(rows(&c, &d), 10);
        c.exec("INSERT INTO t VALUES (4995)").unwrap();
        assert_eq!(rows(&c, &d), 11, "the second run sees the new row");
    }

    /// What has parameters, or a kind the caller refuses, is left to prepare; a binder error is
    /// the error preparing gives, and leaves an explicit transaction as preparing does.
    #[test]
    fn describing_fails_as_preparing_does() {
        let c = conn();
        assert!(c
            .parse_described("SELECT k FROM t WHERE k = $1", any)
            .is_none());
        assert!(c
            .parse_described("CREATE TABLE u (a INT)", |k| k == StatementKind::Select)
            .is_none());
        let sql = "SELECT no_such FROM t";
        let described = c.parse_described(sql, any).unwrap().err().unwrap();
        let prepared = c.prepare(sql).err().unwrap();
        assert_eq!(described.message, prepared.message);
        assert!(
            described.message.contains("LINE 1"),
            "{}",
            described.message
        );
        let after_error = |fail: &dyn Fn() -> bool| {
            c.exec("BEGIN").unwrap();
            assert!(fail());
            let next = c.query("SELECT 1").err().map(|e| e.message);
            c.exec("ROLLBACK").unwrap();
            next
        };
        let by_describe = after_error(&|| c.parse_described(sql, any).unwrap().is_err());
        let by_prepare = after_error(&|| c.prepare(sql).is_err());
        assert_eq!(by_describe, by_prepare);
        assert!(
            by_prepare.as_ref().is_some_and(|m| m.contains("aborted")),
            "{by_prepare:?}"
        );
        assert_eq!(rows(&c, &c.parse_once("SELECT 1").unwrap()), 1);
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
