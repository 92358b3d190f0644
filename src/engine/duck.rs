//! A thin, safe wrapper over DuckDB's C API: the database, connections and prepared statements.
//!
//! The `duckdb` crate's `Statement` cannot tell a prepared statement's
//! parameter types or column names before it runs, which the PostgreSQL
//! extended protocol needs (Describe comes before Execute), so the server
//! talks to the C API directly. Results are read in `result`, values and
//! types converted in `values`.

use crate::sqlstate::SqlState;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use duckdb::ffi;

use super::error::EngineError;
use super::result::QueryResult;
use super::values::{logical_type, make_value};
use crate::types::{DuckType, ParamValue};

/// The name under which the user's database file is attached, whatever the file is called.
///
/// DuckDB names a database it opens after its file (`duckmv.duckdb` becomes catalog `duckmv`),
/// and a catalog named like a schema makes every two-part name through that schema ambiguous
/// ("Ambiguous reference to catalog or schema"): the server's own `duckmv` schema collided with
/// its default file, a user's `main.duckdb` with schema `main`. Clients never see this name:
/// they see the database they connected to (see `compat`), which works as the catalog part of a
/// three-part name.
pub const CATALOG: &str = "duckmv_catalog";

/// An open DuckDB database. Connections keep it alive.
pub struct Database {
    raw: ffi::duckdb_database,
    /// The parse of every statement run again and again (`repeated`), for all connections.
    pub(super) repeated: super::repeated::Repeated,
}

// SAFETY: a duckdb_database is internally synchronised; DuckDB documents it as
// shareable between threads, one connection per thread.
unsafe impl Send for Database {}
unsafe impl Sync for Database {}

impl Database {
    /// Opens (creating when absent) the database at `path` under [`CATALOG`]; `:memory:` is
    /// allowed. Extension auto-install/auto-load is off: the machine has no network and a silent
    /// download attempt would only add latency.
    pub fn open(path: &str) -> Result<Arc<Database>, EngineError> {
        let db = Self::open_instance(&super::spill::directory(path))?;
        let conn = db.connect_raw()?;
        super::native::register(&conn)?;
        conn.exec(&format!(
            "ATTACH '{}' AS {CATALOG}",
            path.replace('\'', "''")
        ))
        .map_err(|e| EngineError::new(format!("could not open database {path}: {e}"), 0))?;
        Ok(db)
    }

    /// Turns off DuckDB's access to files, for every connection from now on: no client can read
    /// or write server files, attach databases or load extensions. `spool` stays usable: the
    /// server writes COPY FROM STDIN data there for DuckDB to load. DuckDB never lets the switch
    /// be turned back on while the database runs.
    pub fn restrict_files(self: &Arc<Self>, spool: &std::path::Path) -> Result<(), EngineError> {
        let conn = self.connect_raw()?;
        let dir = format!("{}/", spool.display()).replace('\'', "''");
        conn.exec(&format!("SET allowed_directories = ['{dir}']"))?;
        conn.exec("SET enable_external_access = false")?;
        Ok(())
    }

    /// An in-memory DuckDB instance; the user's database is attached to it. `spill` is where
    /// DuckDB writes what does not fit in memory.
    fn open_instance(spill: &str) -> Result<Arc<Database>, EngineError> {
        let c_path = CString::new("").unwrap();
        unsafe {
            let mut config: ffi::duckdb_config = ptr::null_mut();
            if ffi::duckdb_create_config(&mut config) != ffi::DuckDBSuccess {
                return Err(EngineError::internal("could not create DuckDB config"));
            }
            for (k, v) in [
                ("autoinstall_known_extensions", "false"),
                ("autoload_known_extensions", "false"),
                ("temp_directory", spill),
            ] {
                let (k, v) = (CString::new(k).unwrap(), CString::new(v).unwrap());
                ffi::duckdb_set_config(config, k.as_ptr(), v.as_ptr());
            }
            let mut db: ffi::duckdb_database = ptr::null_mut();
            let mut err: *mut c_char = ptr::null_mut();
            let rc = ffi::duckdb_open_ext(c_path.as_ptr(), &mut db, config, &mut err);
            ffi::duckdb_destroy_config(&mut config);
            if rc != ffi::DuckDBSuccess {
                let msg = take_c_string(err).unwrap_or_else(|| "could not open database".into());
                return Err(EngineError::new(msg, 0));
            }
            Ok(Arc::new(Database {
                raw: db,
                repeated: Default::default(),
            }))
        }
    }

    /// A connection whose default catalog is the user's database.
    pub fn connect(self: &Arc<Self>) -> Result<Conn, EngineError> {
        let conn = self.connect_raw()?;
        conn.exec(&format!("USE {CATALOG}"))?;
        // PostgreSQL's `/` on integers truncates (7 / 2 = 3) and every division by zero is an
        // error; DuckDB's default gives 3.5 and Infinity. Every connection divides alike, so a
        // view's refresh computes what its query does in any session.
        conn.exec("SET integer_division = true")?;
        Ok(conn)
    }

    fn connect_raw(self: &Arc<Self>) -> Result<Conn, EngineError> {
        let mut raw: ffi::duckdb_connection = ptr::null_mut();
        let rc = unsafe { ffi::duckdb_connect(self.raw, &mut raw) };
        if rc != ffi::DuckDBSuccess {
            return Err(EngineError::internal("could not connect to DuckDB"));
        }
        Ok(Conn {
            raw,
            interrupt: Arc::new(Interrupter {
                raw: Mutex::new(RawConn(raw)),
                interrupted: AtomicBool::new(false),
            }),
            db: self.clone(),
            calls: std::cell::Cell::new(0),
            plans: Default::default(),
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        unsafe { ffi::duckdb_close(&mut self.raw) };
    }
}

struct RawConn(ffi::duckdb_connection);
// SAFETY: only used to call duckdb_interrupt, which DuckDB allows from any thread.
unsafe impl Send for RawConn {}

/// Interrupts the query running on one connection, from any thread.
pub struct Interrupter {
    raw: Mutex<RawConn>,
    /// Set by every interrupt, so a session waiting on a server-side lock
    /// (not in DuckDB) can notice the cancel too.
    interrupted: AtomicBool,
}

impl Interrupter {
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        let raw = self.raw.lock();
        if !raw.0.is_null() {
            unsafe { ffi::duckdb_interrupt(raw.0) };
        }
    }

    /// Whether an interrupt came since the last call; clears it.
    pub fn take_interrupted(&self) -> bool {
        self.interrupted.swap(false, Ordering::SeqCst)
    }
}

/// One DuckDB connection: its own transaction and prepared statements.
pub struct Conn {
    raw: ffi::duckdb_connection,
    interrupt: Arc<Interrupter>,
    db: Arc<Database>,
    /// Statements handed to DuckDB so far: DuckDB takes a transaction's snapshot at the first
    /// one after BEGIN, so comparing counts tells whether it has.
    calls: std::cell::Cell<u64>,
    /// The plans of statements run again and again on this connection (`kept_plan`).
    plans: super::kept_plan::KeptPlans,
}

// SAFETY: a connection is used by one thread at a time (the session worker
// owns it); moving it between threads is allowed by DuckDB.
unsafe impl Send for Conn {}

impl Drop for Conn {
    fn drop(&mut self) {
        self.interrupt.raw.lock().0 = ptr::null_mut();
        // Its prepared statements go before the connection does.
        self.plans.clear();
        unsafe { ffi::duckdb_disconnect(&mut self.raw) };
    }
}

/// What kind of statement DuckDB parsed (`duckdb_statement_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    Explain,
    Create,
    Drop,
    Alter,
    Transaction,
    Copy,
    Set,
    Pragma,
    Call,
    Merge,
    Other,
}

impl StatementKind {
    pub(super) fn from_raw(t: u32) -> Self {
        match t {
            1 => Self::Select,
            2 => Self::Insert,
            3 => Self::Update,
            4 => Self::Explain,
            5 => Self::Delete,
            7 | 14 => Self::Create,
            9 => Self::Alter,
            10 => Self::Transaction,
            11 => Self::Copy,
            13 | 20 => Self::Set,
            15 => Self::Drop,
            17 => Self::Pragma,
            19 => Self::Call,
            30 => Self::Merge,
            _ => Self::Other,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub ty: DuckType,
}

/// A prepared statement with what Describe needs; or a statement only parsed, to run once
/// (`one_shot`), whose parameters and result columns are known only when it runs.
pub struct Prepared {
    raw: ffi::duckdb_prepared_statement,
    /// The parsed statement of a one-shot statement until it runs (then NULL).
    pub(super) parsed: std::cell::Cell<*mut std::os::raw::c_void>,
    /// The parsed statement is kept and a copy submitted at each run (`Conn::parse_described`).
    pub(super) reusable: bool,
    pub kind: StatementKind,
    pub params: Vec<DuckType>,
    pub columns: Vec<Column>,
}

// SAFETY: owned by the session worker thread with its connection.
unsafe impl Send for Prepared {}

impl Prepared {
    /// A statement only parsed (`one_shot`): no parameters, columns known when it runs.
    pub(super) fn parsed(statement: *mut std::os::raw::c_void, kind: StatementKind) -> Self {
        Prepared {
            raw: ptr::null_mut(),
            parsed: std::cell::Cell::new(statement),
            reusable: false,
            kind,
            params: Vec::new(),
            columns: Vec::new(),
        }
    }

    /// Whether it runs once, as parsed, with its result columns known only then.
    pub fn runs_once(&self) -> bool {
        self.raw.is_null() && !self.reusable
    }

    /// The parsed statement of a one-shot statement, for the caller to own (NULL afterwards).
    pub(super) fn into_parsed(self) -> *mut std::os::raw::c_void {
        self.parsed.replace(ptr::null_mut())
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            unsafe { ffi::duckdb_destroy_prepare(&mut self.raw) };
        }
        super::one_shot::destroy(self);
    }
}

impl Conn {
    /// The C API handle, for the engine's own C++ (`native`).
    pub(super) fn raw(&self) -> ffi::duckdb_connection {
        self.raw
    }

    pub fn interrupter(&self) -> Arc<Interrupter> {
        self.interrupt.clone()
    }

    /// Whether `sql` prepares on a fresh connection of the same database: DuckDB binds it
    /// outside this connection's transaction, so a binder error cannot abort that transaction.
    pub fn prepares_alone(&self, sql: &str) -> bool {
        self.db
            .connect()
            .and_then(|c| c.prepare(sql).map(|_| ()))
            .is_ok()
    }

    /// How many statements were prepared or run on this connection.
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    pub(super) fn count_call(&self) {
        self.calls.set(self.calls.get() + 1);
    }

    pub(super) fn kept_plans(&self) -> &super::kept_plan::KeptPlans {
        &self.plans
    }

    pub(super) fn database(&self) -> &Database {
        &self.db
    }

    /// A new connection to the same database, with the server's settings, not this session's.
    pub(super) fn database_defaults(&self) -> Result<Conn, EngineError> {
        self.db.connect()
    }

    pub fn prepare(&self, sql: &str) -> Result<Prepared, EngineError> {
        self.calls.set(self.calls.get() + 1);
        let c_sql = CString::new(sql).map_err(|_| {
            EngineError::with_state(
                "statement contains a NUL byte",
                SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            )
        })?;
        unsafe {
            let mut raw: ffi::duckdb_prepared_statement = ptr::null_mut();
            let rc = ffi::duckdb_prepare(self.raw, c_sql.as_ptr(), &mut raw);
            if rc != ffi::DuckDBSuccess {
                let msg = borrow_c_string(ffi::duckdb_prepare_error(raw))
                    .unwrap_or_else(|| "could not prepare statement".into());
                ffi::duckdb_destroy_prepare(&mut raw);
                return Err(EngineError::new(msg, 0));
            }
            let mut p = Prepared {
                raw,
                parsed: std::cell::Cell::new(ptr::null_mut()),
                reusable: false,
                kind: StatementKind::from_raw(ffi::duckdb_prepared_statement_type(raw) as u32),
                params: Vec::new(),
                columns: Vec::new(),
            };
            let n = ffi::duckdb_nparams(raw);
            for i in 1..=n {
                p.params
                    .push(logical_type(ffi::duckdb_param_logical_type(raw, i)));
            }
            let ncols = ffi::duckdb_prepared_statement_column_count(raw);
            for i in 0..ncols {
                // DuckDB allocates this name for the caller (unlike a result's column names).
                // DuckDB allocates this name for the caller (unlike a result's column names).
                let name = take_c_string(
                    ffi::duckdb_prepared_statement_column_name(raw, i) as *mut c_char
                )
                .unwrap_or_default();
                let ty = logical_type(ffi::duckdb_prepared_statement_column_logical_type(raw, i));
                p.columns.push(Column { name, ty });
            }
            Ok(p)
        }
    }

    /// Runs a prepared statement (parameters already bound) and returns its
    /// streaming result. A new statement on the same connection closes it.
    pub fn execute(&self, p: &Prepared) -> Result<QueryResult, EngineError> {
        self.calls.set(self.calls.get() + 1);
        if matches!(p.kind, StatementKind::Set | StatementKind::Pragma) {
            // Settings are read when a plan is made (the search path, how `/` divides, …):
            // plans kept under the old ones go.
            self.plans.clear();
        }
        unsafe {
            let mut pending: ffi::duckdb_pending_result = ptr::null_mut();
            let rc = if p.raw.is_null() {
                super::one_shot::submit(self, p, &mut pending)?
            } else {
                ffi::duckdb_pending_prepared_streaming(p.raw, &mut pending)
            };
            Self::run_pending(rc, pending)
        }
    }

    /// Runs a submitted statement to its result, destroying `pending`; `rc` is what submitting
    /// it returned.
    ///
    /// # Safety
    /// `pending` comes from a submission on this connection and is not used afterwards.
    pub(super) unsafe fn run_pending(
        rc: ffi::duckdb_state,
        mut pending: ffi::duckdb_pending_result,
    ) -> Result<QueryResult, EngineError> {
        if rc != ffi::DuckDBSuccess {
            let msg = borrow_c_string(ffi::duckdb_pending_error(pending))
                .unwrap_or_else(|| "could not execute statement".into());
            ffi::duckdb_destroy_pending(&mut pending);
            return Err(EngineError::new(msg, 0));
        }
        let mut result: ffi::duckdb_result = std::mem::zeroed();
        let rc = ffi::duckdb_execute_pending(pending, &mut result);
        ffi::duckdb_destroy_pending(&mut pending);
        if rc != ffi::DuckDBSuccess {
            let msg = borrow_c_string(ffi::duckdb_result_error(&mut result))
                .unwrap_or_else(|| "statement failed".into());
            let kind = ffi::duckdb_result_error_type(&mut result) as u32;
            ffi::duckdb_destroy_result(&mut result);
            return Err(EngineError::new(msg, kind));
        }
        QueryResult::new(result)
    }

    /// Prepares and runs `sql` without parameters.
    pub fn query(&self, sql: &str) -> Result<QueryResult, EngineError> {
        let p = self.prepare(sql)?;
        self.execute(&p)
    }

    /// Runs `sql` and returns the number of rows it changed (0 for others).
    pub fn exec(&self, sql: &str) -> Result<u64, EngineError> {
        let mut r = self.query(sql)?;
        r.drain_changed_rows()
    }

    /// Runs a batch of statements separated by `;` (internal SQL only: no
    /// results, no parameters).
    pub fn exec_batch(&self, sql: &str) -> Result<(), EngineError> {
        self.calls.set(self.calls.get() + 1);
        let c_sql = CString::new(sql).map_err(|_| EngineError::internal("NUL in SQL"))?;
        unsafe {
            let mut result: ffi::duckdb_result = std::mem::zeroed();
            let rc = ffi::duckdb_query(self.raw, c_sql.as_ptr(), &mut result);
            let out = if rc != ffi::DuckDBSuccess {
                let msg = borrow_c_string(ffi::duckdb_result_error(&mut result))
                    .unwrap_or_else(|| "statement failed".into());
                let kind = ffi::duckdb_result_error_type(&mut result) as u32;
                Err(EngineError::new(msg, kind))
            } else {
                Ok(())
            };
            ffi::duckdb_destroy_result(&mut result);
            out
        }
    }
}

impl Prepared {
    /// Binds parameter `idx` (1-based) with a value of the parameter's own
    /// DuckDB type where one is known, so DuckDB does not re-plan the
    /// statement for another type.
    pub fn bind(&mut self, idx: usize, v: &ParamValue) -> Result<(), EngineError> {
        if self.raw.is_null() {
            // Only statements without parameters run as parsed.
            return Err(EngineError::with_state(
                format!("could not bind parameter ${idx}: the statement has no parameters"),
                SqlState::PROTOCOL_VIOLATION,
            ));
        }
        let target = self.params.get(idx - 1).cloned().unwrap_or(DuckType::Null);
        unsafe {
            let rc = if let ParamValue::Null = v {
                ffi::duckdb_bind_null(self.raw, idx as u64)
            } else {
                let mut val = make_value(v, &target)?;
                let rc = ffi::duckdb_bind_value(self.raw, idx as u64, val);
                ffi::duckdb_destroy_value(&mut val);
                rc
            };
            if rc != ffi::DuckDBSuccess {
                let msg = borrow_c_string(ffi::duckdb_prepare_error(self.raw))
                    .unwrap_or_else(|| format!("could not bind parameter ${idx}"));
                return Err(EngineError::with_state(
                    msg,
                    SqlState::INVALID_TEXT_REPRESENTATION,
                ));
            }
        }
        Ok(())
    }

    pub fn clear_bindings(&mut self) {
        if !self.raw.is_null() {
            unsafe { ffi::duckdb_clear_bindings(self.raw) };
        }
    }
}

pub(super) unsafe fn borrow_c_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// Copies and frees a string that DuckDB allocated for the caller.
pub(super) unsafe fn take_c_string(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { ffi::duckdb_free(p as *mut _) };
    Some(s)
}
