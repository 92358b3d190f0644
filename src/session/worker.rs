//! The session worker: protocol-level behaviour of one client (simple and
//! extended query, transactions), on the thread that owns its connection.

use crate::sqlstate::SqlState;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::exec::{self, Portal, PortalState, Statement, StmtKind};
use super::reply::{Reply, SqlError, TxStatus};
use super::shared::Shared;
use super::Out;
use crate::engine::Conn;
use crate::sql::{self, Command};
use crate::types::{self, Format};

/// Transaction state as PostgreSQL sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Txn {
    /// Autocommit: each statement is its own DuckDB transaction.
    Idle,
    /// Opened by the server for a multi-statement query string, or for the
    /// messages up to Sync in the extended protocol; invisible to the client.
    Implicit,
    /// Opened by BEGIN.
    Block,
    /// An error happened inside a BEGIN block; only ROLLBACK/COMMIT work.
    Failed,
}

pub struct Worker {
    /// Prepared REFRESH statements; declared before `conn` so they are dropped first.
    pub(crate) hot: super::hot_sql::HotStatements,
    pub(crate) conn: Conn,
    pub(crate) shared: Arc<Shared>,
    pub(crate) txn: Txn,
    statements: HashMap<String, Rc<Statement>>,
    portals: HashMap<String, Portal>,
    pub(crate) settings: crate::compat::Settings,
    pub(crate) copy_in: Option<super::copy::CopyIn>,
    watchdog: Option<super::timeout::Watchdog>,
    pub(crate) savepoints: super::savepoint::Savepoints,
    /// This transaction's part in the capture lock; released when the transaction or the
    /// session ends.
    pub(crate) capture: super::capture_txn::CaptureTxn,
    /// The database name the client connected to: shown as the current database, and accepted
    /// as the catalog part of three-part names.
    pub(crate) database: String,
    /// Whether the user who connected is a superuser (`--superuser`).
    pub(crate) superuser: bool,
}

const ABORTED: &str =
    "current transaction is aborted, commands ignored until end of transaction block";

impl Worker {
    pub fn new(conn: Conn, shared: Arc<Shared>) -> Self {
        if let Err(e) = crate::compat::session_init(&conn) {
            tracing::warn!("session setup failed: {e}");
        }
        Worker {
            hot: Default::default(),
            conn,
            shared: shared.clone(),
            txn: Txn::Idle,
            statements: HashMap::new(),
            portals: HashMap::new(),
            settings: Default::default(),
            copy_in: None,
            watchdog: None,
            savepoints: Default::default(),
            capture: super::capture_txn::CaptureTxn::new(shared),
            database: String::new(),
            superuser: false,
        }
    }

    /// A statement made ready for the session (see `compat::normalize`).
    fn unqualify(&self, text: String) -> String {
        crate::compat::normalize(text, &self.database)
    }

    /// Who connected: the database name becomes the session's current database.
    pub fn identify(&mut self, user: String, database: String) {
        self.superuser = self.shared.policy.superusers.contains(&user);
        let set = format!(
            "SET VARIABLE duckmv_database = '{}'",
            database.replace('\'', "''")
        );
        if let Err(e) = self.conn.exec(&set) {
            tracing::warn!("could not set the session's database name: {e}");
        }
        self.database = database;
    }

    pub fn status(&self) -> TxStatus {
        match self.txn {
            Txn::Idle | Txn::Implicit => TxStatus::Idle,
            Txn::Block => TxStatus::InBlock,
            Txn::Failed => TxStatus::Failed,
        }
    }

    // ---- simple query -------------------------------------------------

    /// Runs a query string: its statements in order, as one implicit
    /// transaction unless it holds transaction commands; the first error
    /// skips the rest and undoes the implicit transaction.
    pub fn simple_query(&mut self, text: &str, out: &Out) {
        self.finish_suspended_portals();
        let stmts = sql::split_statements(text);
        if stmts.is_empty() {
            out.send(Reply::EmptyQuery);
            out.send(Reply::Ready(self.status()));
            return;
        }
        let stmts: Vec<String> = stmts.into_iter().map(|s| self.unqualify(s)).collect();
        let commands: Vec<_> = stmts.iter().map(|s| analyse(s)).collect();
        let copy_in_at = commands
            .iter()
            .position(|c| matches!(c, Ok(Command::Copy(sql::copy::Copy::From { .. }))));
        if copy_in_at.is_some_and(|i| i + 1 != stmts.len()) {
            out.send(Reply::Error(SqlError::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "COPY FROM STDIN must be the last statement of a query string",
            )));
            out.send(Reply::Ready(self.status()));
            return;
        }
        let several = stmts.len() > 1;
        tracing::debug!(txn = ?self.txn, "simple query: {text}");
        for (s, cmd) in stmts.iter().zip(commands) {
            let result = cmd.and_then(|cmd| self.run_simple(s, cmd, several, out));
            if let Err(e) = result {
                tracing::debug!(txn = ?self.txn, "statement failed: {} {}", e.code, e.message);
                out.send(Reply::Error(e));
                self.on_error();
                break;
            }
            if self.copy_in.is_some() {
                // COPY FROM STDIN: the data follows; ReadyForQuery comes after it.
                return;
            }
        }
        if self.txn == Txn::Implicit {
            if let Err(e) = self.commit_implicit() {
                out.send(Reply::Error(e));
            }
        }
        self.release_capture_if_idle();
        out.send(Reply::Ready(self.status()));
    }

    fn run_simple(
        &mut self,
        text: &str,
        cmd: Command,
        several: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        if let Some(r) = self.transaction_command(&cmd, out) {
            return r;
        }
        self.check_not_failed()?;
        // The timeout covers waiting for the capture lock too.
        self.arm_timeout();
        let r = self.run_simple_statement(text, cmd, several, out);
        self.disarm_timeout(r)
    }

    fn run_simple_statement(
        &mut self,
        text: &str,
        cmd: Command,
        several: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        // Statements of a multi-statement message share one implicit
        // transaction (a new one after an explicit COMMIT, as PostgreSQL
        // does). Writes always run in a transaction of their own: DuckDB can
        // keep part of a failed autocommit statement's trigger work.
        if self.txn == Txn::Idle && (several || exec::needs_transaction(&cmd) || is_write(text)) {
            self.begin_implicit()?;
        }
        let stmt = exec::prepare(self, text, cmd, Vec::new())?;
        if stmt.needs_transaction() && self.txn == Txn::Idle {
            self.begin_implicit()?;
        }
        let mut portal = Portal::new(Rc::new(stmt), Vec::new(), Vec::new());
        exec::execute(self, &mut portal, 0, true, out)
    }

    // ---- extended query -----------------------------------------------

    pub fn parse(&mut self, name: String, text: String, oids: Vec<u32>, out: &Out) {
        self.finish_suspended_portals();
        let result = (|| {
            let stmts = sql::split_statements(&text);
            if stmts.len() > 1 {
                return Err(SqlError::new(
                    SqlState::SYNTAX_ERROR,
                    "cannot insert multiple commands into a prepared statement",
                ));
            }
            let body = self.unqualify(stmts.into_iter().next().unwrap_or_default());
            let cmd = analyse(&body)?;
            if self.txn == Txn::Failed && !exec::is_transaction_control(&cmd) {
                return Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED));
            }
            // Inside a transaction, preparing may wait for the capture lock.
            self.arm_timeout();
            let r = exec::prepare(self, &body, cmd, oids);
            self.disarm_timeout(r)
        })();
        match result {
            Ok(stmt) => {
                self.statements.insert(name, Rc::new(stmt));
                out.send(Reply::ParseComplete);
            }
            Err(e) => self.extended_error(e, out),
        }
    }

    pub fn bind(
        &mut self,
        portal: String,
        stmt: String,
        param_formats: Vec<i16>,
        params: Vec<Option<Bytes>>,
        result_formats: Vec<i16>,
        out: &Out,
    ) {
        let Some(st) = self.statements.get(&stmt).cloned() else {
            return self.extended_error(
                SqlError::new(
                    SqlState::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{stmt}\" does not exist"),
                ),
                out,
            );
        };
        let result = (|| {
            let types = st.param_types();
            if params.len() != types.len() {
                return Err(SqlError::new(
                    SqlState::PROTOCOL_VIOLATION,
                    format!("bind message supplies {} parameters, but prepared statement \"{}\" requires {}", params.len(), stmt, types.len()),
                ));
            }
            let mut values = Vec::with_capacity(params.len());
            for (i, raw) in params.iter().enumerate() {
                let fmt = pick_format(&param_formats, i);
                let client_oid = st.client_oids.get(i).copied().unwrap_or(0);
                values.push(types::decode_param(
                    raw.as_deref(),
                    fmt,
                    client_oid,
                    &types[i],
                )?);
            }
            let ncols = st.columns().len();
            let formats = (0..ncols)
                .map(|i| pick_format(&result_formats, i))
                .collect();
            let mut p = Portal::new(st.clone(), values, formats);
            p.codes = result_formats.clone();
            Ok(p)
        })();
        match result {
            Ok(p) => {
                self.portals.insert(portal, p);
                out.send(Reply::BindComplete);
            }
            Err(e) => self.extended_error(e, out),
        }
    }

    pub fn describe_statement(&mut self, name: &str, out: &Out) {
        let Some(st) = self.statements.get(name).cloned() else {
            return self.extended_error(
                SqlError::new(
                    SqlState::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                ),
                out,
            );
        };
        let types = st.param_types();
        let oids = types
            .iter()
            .enumerate()
            .map(|(i, t)| match st.client_oids.get(i) {
                Some(&o) if o != 0 => o,
                _ => types::pg_type(t).oid,
            })
            .collect();
        out.send(Reply::ParameterDescription(oids));
        out.send(exec::row_description(&st, &[]));
    }

    pub fn describe_portal(&mut self, name: &str, out: &Out) {
        match self.portals.get(name) {
            Some(p) => {
                out.send(exec::row_description(&p.stmt, &p.formats));
            }
            None => self.extended_error(
                SqlError::new(
                    SqlState::INVALID_CURSOR_NAME,
                    format!("portal \"{name}\" does not exist"),
                ),
                out,
            ),
        }
    }

    pub fn execute(&mut self, name: &str, max_rows: i32, out: &Out) {
        let Some(mut portal) = self.portals.remove(name) else {
            return self.extended_error(
                SqlError::new(
                    SqlState::INVALID_CURSOR_NAME,
                    format!("portal \"{name}\" does not exist"),
                ),
                out,
            );
        };
        // Another portal's open stream would be closed by this statement.
        if matches!(portal.state, PortalState::New) {
            self.finish_suspended_portals();
        }
        let result = (|| {
            if let StmtKind::Command(cmd) = &portal.stmt.kind {
                let cmd = cmd.clone();
                if let Some(r) = self.transaction_command(&cmd, out) {
                    return r;
                }
            }
            self.check_not_failed()?;
            self.arm_timeout();
            let r = (|| {
                if self.txn == Txn::Idle
                    && matches!(portal.state, PortalState::New)
                    && !portal.stmt.is_empty()
                {
                    self.begin_implicit()?;
                }
                let limit = if max_rows <= 0 { 0 } else { max_rows as u64 };
                exec::execute(self, &mut portal, limit, false, out)
            })();
            self.disarm_timeout(r)
        })();
        let keep = matches!(portal.state, PortalState::Streaming(_) | PortalState::Done);
        if keep {
            self.portals.insert(name.to_string(), portal);
        }
        if let Err(e) = result {
            self.extended_error(e, out);
        }
    }

    /// Sync: ends the implicit transaction of the messages before it.
    pub fn sync(&mut self, out: &Out) {
        self.portals.remove("");
        if self.txn == Txn::Implicit {
            if let Err(e) = self.commit_implicit() {
                out.send(Reply::Error(e));
            }
        }
        self.release_capture_if_idle();
        out.send(Reply::Ready(self.status()));
    }

    pub fn close_statement(&mut self, name: &str, out: &Out) {
        self.statements.remove(name);
        out.send(Reply::CloseComplete);
    }

    pub fn close_portal(&mut self, name: &str, out: &Out) {
        self.portals.remove(name);
        out.send(Reply::CloseComplete);
    }

    /// An error in the extended protocol: report it; the wire layer then
    /// skips messages until Sync.
    fn extended_error(&mut self, e: SqlError, out: &Out) {
        self.on_error();
        out.send(Reply::Error(e));
    }

    // ---- transactions -------------------------------------------------

    fn check_not_failed(&self) -> Result<(), SqlError> {
        if self.txn == Txn::Failed {
            Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED))
        } else {
            Ok(())
        }
    }

    /// After a failed statement: an implicit transaction is rolled back at
    /// once; a BEGIN block becomes failed until ROLLBACK.
    pub(crate) fn on_error(&mut self) {
        match self.txn {
            Txn::Implicit => {
                let _ = self.conn.exec("ROLLBACK");
                self.txn = Txn::Idle;
                self.after_rollback();
            }
            Txn::Block => self.txn = Txn::Failed,
            // DuckDB can leave an autocommit statement's transaction open
            // and aborted after some failures (write conflicts): end it, so
            // the next statement does not inherit it.
            Txn::Idle => {
                let _ = self.conn.exec("ROLLBACK");
            }
            Txn::Failed => {}
        }
        self.release_capture_if_idle();
    }

    /// Where the transaction stands, for the capture lock's checks.
    fn txn_state(&self) -> super::capture_txn::TxnState {
        super::capture_txn::TxnState {
            open: self.txn != Txn::Idle,
            calls: self.conn.calls(),
        }
    }

    /// Takes the capture lock before a statement writes `targets` (see `capture_txn.rs`).
    pub(crate) fn lock_capture(
        &mut self,
        targets: &[String],
        insert_only: bool,
    ) -> Result<(), SqlError> {
        let (txn, int) = (self.txn_state(), self.conn.interrupter());
        self.capture
            .lock_for_writes(targets, insert_only, txn, &int)
    }

    /// Called before a statement reaches DuckDB: the first one of a transaction fixes its
    /// snapshot.
    pub(crate) fn note_snapshot(&mut self) {
        self.capture.note_snapshot(self.txn != Txn::Idle);
    }

    /// Right after BEGIN reached DuckDB.
    fn note_begin(&mut self) {
        self.capture.note_begin(self.conn.calls());
    }

    /// Ends the capture bookkeeping of a transaction once none is open.
    fn release_capture_if_idle(&mut self) {
        if self.txn == Txn::Idle {
            self.capture.end();
        }
    }

    /// Before CREATE MATERIALIZED VIEW reads its sources (see `CaptureTxn::prepare_create`).
    pub(crate) fn prepare_create(&mut self, query: &str) -> Result<(), SqlError> {
        let (txn, int) = (self.txn_state(), self.conn.interrupter());
        self.capture.prepare_create(query, txn, &int)
    }

    /// After a job panicked: whatever it left half done is undone — the DuckDB transaction
    /// rolled back, streams and COPY dropped, the capture lock and registrations released — so
    /// the session can go on from a clean, idle state.
    pub(crate) fn recover_from_panic(&mut self) {
        let _ = self.conn.exec("ROLLBACK");
        self.txn = Txn::Idle;
        self.portals.clear();
        self.copy_in = None;
        self.savepoints.reset();
        self.capture.forget_refreshes();
        self.capture.bump_at_end = true;
        self.release_capture_if_idle();
        super::ivm_bridge::reload_matviews(self);
    }

    fn begin_implicit(&mut self) -> Result<(), SqlError> {
        self.conn.exec("BEGIN TRANSACTION")?;
        self.note_begin();
        self.txn = Txn::Implicit;
        Ok(())
    }

    fn commit_implicit(&mut self) -> Result<(), SqlError> {
        self.txn = Txn::Idle;
        self.portals
            .retain(|_, p| !matches!(p.state, PortalState::Streaming(_)));
        if let Err(e) = self.conn.exec("COMMIT") {
            let _ = self.conn.exec("ROLLBACK");
            self.after_rollback();
            return Err(e.into());
        }
        Ok(())
    }

    /// ROLLBACK TO a savepoint set before any change: a fresh BEGIN block.
    pub(crate) fn restart_block(&mut self) -> Result<(), SqlError> {
        let _ = self.conn.exec("ROLLBACK");
        self.portals
            .retain(|_, p| !matches!(p.state, PortalState::Streaming(_)));
        self.after_rollback();
        self.conn.exec("BEGIN TRANSACTION")?;
        self.note_begin();
        self.txn = Txn::Block;
        Ok(())
    }

    /// Caches that mirror catalog state may hold rolled-back changes.
    fn after_rollback(&mut self) {
        self.capture.forget_refreshes();
        super::ivm_bridge::reload_matviews(self);
    }

    /// Handles BEGIN/COMMIT/ROLLBACK/SAVEPOINT; None for other commands.
    fn transaction_command(&mut self, cmd: &Command, out: &Out) -> Option<Result<(), SqlError>> {
        let r = match cmd {
            Command::Begin | Command::StartTransaction => match self.txn {
                Txn::Idle => self.conn.exec("BEGIN TRANSACTION").map(|_| {
                    self.note_begin();
                    self.txn = Txn::Block;
                    self.savepoints.reset();
                }),
                Txn::Implicit => {
                    self.txn = Txn::Block;
                    Ok(())
                }
                Txn::Block => {
                    out.send(Reply::Warning(SqlError::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "there is already a transaction in progress",
                    )));
                    Ok(())
                }
                Txn::Failed => {
                    return Some(Err(SqlError::new(
                        SqlState::IN_FAILED_SQL_TRANSACTION,
                        ABORTED,
                    )))
                }
            }
            .map(|_| {
                if *cmd == Command::StartTransaction {
                    "START TRANSACTION"
                } else {
                    "BEGIN"
                }
            }),
            Command::Commit => match self.txn {
                Txn::Idle => {
                    out.send(Reply::Warning(SqlError::new(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    )));
                    Ok("COMMIT")
                }
                Txn::Failed => {
                    let _ = self.conn.exec("ROLLBACK");
                    self.txn = Txn::Idle;
                    self.after_rollback();
                    Ok("ROLLBACK")
                }
                Txn::Block | Txn::Implicit => {
                    self.txn = Txn::Idle;
                    self.portals
                        .retain(|_, p| !matches!(p.state, PortalState::Streaming(_)));
                    match self.conn.exec("COMMIT") {
                        Ok(_) => Ok("COMMIT"),
                        Err(e) => {
                            let _ = self.conn.exec("ROLLBACK");
                            self.after_rollback();
                            return Some(Err(e.into()));
                        }
                    }
                }
            },
            Command::Rollback => {
                if self.txn == Txn::Idle {
                    out.send(Reply::Warning(SqlError::new(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    )));
                } else {
                    let _ = self.conn.exec("ROLLBACK");
                    self.txn = Txn::Idle;
                    self.portals
                        .retain(|_, p| !matches!(p.state, PortalState::Streaming(_)));
                    self.after_rollback();
                }
                Ok("ROLLBACK")
            }
            Command::Savepoint(op) => {
                let r = super::savepoint::run(self, op);
                return Some(r.map(|tag| {
                    out.send(Reply::Complete(tag.into()));
                }));
            }
            _ => return None,
        };
        self.release_capture_if_idle();
        Some(
            r.map(|tag| {
                out.send(Reply::Complete(tag.to_string()));
            })
            .map_err(SqlError::from),
        )
    }

    /// Arms statement_timeout for the statement about to run.
    pub(crate) fn arm_timeout(&mut self) {
        let Some(d) = self
            .settings
            .get("statement_timeout")
            .and_then(|v| super::timeout::parse_duration(&v))
        else {
            return;
        };
        let int = self.conn.interrupter();
        self.watchdog
            .get_or_insert_with(|| super::timeout::Watchdog::start(int))
            .arm(d);
    }

    /// Disarms statement_timeout; a cancel it caused gets PostgreSQL's message.
    pub(crate) fn disarm_timeout<T>(&mut self, r: Result<T, SqlError>) -> Result<T, SqlError> {
        let fired = self.watchdog.as_ref().is_some_and(|w| w.disarm());
        match r {
            Err(mut e) if fired && e.code == SqlState::QUERY_CANCELED => {
                e.message = "canceling statement due to statement timeout".into();
                Err(e)
            }
            other => other,
        }
    }

    /// SET / SHOW / RESET / DISCARD / DEALLOCATE answered by the server.
    /// Returns the command tag; None when `cmd` is not one of them.
    pub(crate) fn setting_command(
        &mut self,
        cmd: &Command,
        out: &Out,
    ) -> Option<Result<String, SqlError>> {
        Some(match cmd {
            Command::Set { name, value } => {
                if let Some((k, v)) = self.settings.set(name, value.as_deref()) {
                    out.send(Reply::ParameterStatus(k, v));
                }
                Ok("SET".into())
            }
            Command::Reset { name: Some(name) } => {
                if let Some((k, v)) = self.settings.set(name, None) {
                    out.send(Reply::ParameterStatus(k, v));
                }
                Ok("RESET".into())
            }
            Command::Reset { name: None } => {
                for (k, v) in self.settings.reset_all() {
                    out.send(Reply::ParameterStatus(k, v));
                }
                Ok("RESET".into())
            }
            Command::Show { name } => {
                let value = if name == "transaction isolation level" {
                    Some("serializable".to_string())
                } else {
                    self.settings.get(name)
                };
                let row = super::reply::text_row(&value.unwrap_or_default());
                out.send(Reply::Rows(vec![row], 1));
                Ok("SHOW".into())
            }
            Command::TransactionMode => Ok("SET".into()),
            Command::DiscardAll => {
                if matches!(self.txn, Txn::Block | Txn::Failed) {
                    return Some(Err(SqlError::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "DISCARD ALL cannot run inside a transaction block",
                    )));
                }
                self.statements.clear();
                self.portals.clear();
                for (k, v) in self.settings.reset_all() {
                    out.send(Reply::ParameterStatus(k, v));
                }
                Ok("DISCARD ALL".into())
            }
            Command::Deallocate { name: Some(n) } => {
                if self.statements.remove(n).is_none() {
                    if let Err(e) = self
                        .conn
                        .exec(&format!("DEALLOCATE {}", crate::sql::quote_ident(n)))
                    {
                        return Some(Err(e.into()));
                    }
                }
                Ok("DEALLOCATE".into())
            }
            Command::Deallocate { name: None } => {
                self.statements.clear();
                Ok("DEALLOCATE ALL".into())
            }
            _ => return None,
        })
    }

    /// Reads the rest of every suspended portal into memory: a new
    /// statement on the connection would close their DuckDB streams.
    fn finish_suspended_portals(&mut self) {
        for p in self.portals.values_mut() {
            exec::buffer_rest(p);
        }
    }
}

/// What a statement is, or why the server will not run it: nested too deeply to analyse
/// safely (54001), or malformed (42601).
fn analyse(text: &str) -> Result<Command, SqlError> {
    if sql::depth::too_deep(text) {
        let mut e = SqlError::new(
            SqlState::STATEMENT_TOO_COMPLEX,
            "stack depth limit exceeded",
        );
        e.hint = Some(format!(
            "Statements may nest at most {} levels of parentheses.",
            sql::depth::MAX_DEPTH
        ));
        return Err(e);
    }
    sql::classify(text).map_err(|e| SqlError::new(SqlState::SYNTAX_ERROR, e.0))
}

/// Statements that change table data.
fn is_write(text: &str) -> bool {
    matches!(
        sql::lex::leading_words(text, 1).first().map(String::as_str),
        Some("INSERT" | "UPDATE" | "DELETE" | "MERGE" | "TRUNCATE" | "COPY" | "WITH")
    )
}

/// A session that ends with a transaction open rolls it back before its capture registrations
/// are released (field drops follow this), so no writer waiting on them sees a half-ended one.
impl Drop for Worker {
    fn drop(&mut self) {
        if self.txn != Txn::Idle {
            let _ = self.conn.exec("ROLLBACK");
        }
    }
}

pub(crate) fn pick_format(codes: &[i16], i: usize) -> Format {
    match codes.len() {
        0 => Format::Text,
        1 => Format::from_code(codes[0]),
        _ => codes
            .get(i)
            .map(|c| Format::from_code(*c))
            .unwrap_or(Format::Text),
    }
}
