//! The session worker: the protocol state of one client (simple and extended query, prepared
//! statements and portals, COPY), on the thread that owns its connection. The transaction
//! machine is `transaction.rs`; the connection and settings are `context.rs`; statements are
//! prepared and run by `exec.rs`. Each of those takes only the parts it uses.

use crate::sqlstate::SqlState;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::context::Context;
use super::exec::{self, Portal, PortalState};
use super::reply::{Reply, SqlError, TxStatus};
use super::shared::Shared;
use super::statement::{self, Statement, StmtKind};
use super::transaction::{Tx, Txn, ABORTED};
use super::Out;
use crate::engine::Conn;
use crate::sql::{self, Command, Lexed};
use crate::types::{self, Format};

/// The tag of a REFRESH answered without running (it is the tag of every REFRESH).
const NOOP_REFRESH_TAG: &str = "REFRESH MATERIALIZED VIEW";

pub struct Worker {
    /// Declared before `tx`: the connection closes before the capture registrations go.
    ctx: Context,
    tx: Tx,
    statements: HashMap<String, Rc<Statement>>,
    portals: HashMap<String, Portal>,
    copy_in: Option<super::copy::CopyIn>,
    watchdog: Option<super::timeout::Watchdog>,
}

impl Worker {
    pub fn new(conn: Conn, shared: Arc<Shared>, inbox: super::context::NoteSender) -> Self {
        Worker {
            tx: Tx::new(super::capture_txn::CaptureTxn::new(shared.clone())),
            ctx: Context::new(conn, shared, inbox),
            statements: HashMap::new(),
            portals: HashMap::new(),
            copy_in: None,
            watchdog: None,
        }
    }

    /// A statement made ready for the session (see `compat::normalize`).
    fn unqualify(&self, text: Lexed) -> Lexed {
        crate::compat::normalize(text, &self.ctx.database)
    }

    /// Who connected: the database name becomes the session's current database.
    pub fn identify(&mut self, user: String, database: String) {
        self.ctx.identify(user, database);
    }

    /// The backend pid the connection was given (see `Context::set_backend_pid`).
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.ctx.set_backend_pid(pid);
    }

    pub fn status(&self) -> TxStatus {
        self.tx.status()
    }

    /// Statements prepared or run on the session's DuckDB connection so far.
    #[cfg(test)]
    pub fn duckdb_calls(&self) -> u64 {
        self.ctx.conn.calls()
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
        let stmts: Vec<Lexed> = stmts.into_iter().map(|s| self.unqualify(s)).collect();
        let commands: Vec<_> = stmts.iter().map(analyse).collect();
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
        tracing::debug!(txn = ?self.tx.state, "simple query: {text}");
        for (s, cmd) in stmts.into_iter().zip(commands) {
            let result = cmd.and_then(|cmd| self.run_simple(s, cmd, several, out));
            if let Err(e) = result {
                tracing::debug!(txn = ?self.tx.state, "statement failed: {} {}", e.code, e.message);
                out.send(Reply::Error(e));
                self.on_error();
                break;
            }
            if let Some(c) = self.copy_in.as_mut() {
                // COPY FROM STDIN: the data follows; the query string ends with it (`copy_done`).
                c.ends_query = true;
                return;
            }
        }
        self.end_query(out);
        out.send(Reply::Ready(self.status()));
    }

    /// The end of a query string or a Sync: its implicit transaction commits (an error
    /// committing is sent), and what it notified is delivered.
    fn end_query(&mut self, out: &Out) {
        if self.tx.state == Txn::Implicit {
            if let Err(e) = self.commit_implicit() {
                out.send(Reply::Error(e));
            }
        }
        self.tx.deliver_notes_if_idle(&self.ctx);
        self.tx.release_capture_if_idle();
    }

    fn run_simple(
        &mut self,
        text: Lexed,
        cmd: Command,
        several: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        if let Some(r) = self.transaction_command(&cmd, out) {
            return r;
        }
        self.tx.check_not_failed()?;
        // The timeout covers waiting for the capture lock too.
        self.arm_timeout();
        let r = self.run_simple_statement(text, cmd, several, out);
        self.disarm_timeout(r)
    }

    fn run_simple_statement(
        &mut self,
        text: Lexed,
        cmd: Command,
        several: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        if !several && self.answered_idle_noop(&cmd, out) {
            return Ok(());
        }
        // Statements of a multi-statement message share one implicit
        // transaction (a new one after an explicit COMMIT, as PostgreSQL
        // does). Writes always run in a transaction of their own: DuckDB can
        // keep part of a failed autocommit statement's trigger work.
        if self.tx.state == Txn::Idle
            && (several || statement::needs_transaction(&cmd) || is_write(&text))
        {
            self.tx.begin_implicit(&self.ctx)?;
        }
        let stmt = statement::prepare_once(&self.ctx, &mut self.tx, text, cmd)?;
        if stmt.needs_transaction() && self.tx.state == Txn::Idle {
            self.tx.begin_implicit(&self.ctx)?;
        }
        let mut portal = Portal::new(Rc::new(stmt), Vec::new(), Vec::new());
        self.execute_portal(&mut portal, 0, true, out)
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
            if self.tx.state == Txn::Failed && !statement::is_transaction_control(&cmd) {
                return Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED));
            }
            // Inside a transaction, preparing may wait for the capture lock.
            self.arm_timeout();
            let r = statement::prepare(&self.ctx, &mut self.tx, body, cmd, oids);
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
            self.tx.check_not_failed()?;
            if let (PortalState::New, StmtKind::Command(cmd)) = (&portal.state, &portal.stmt.kind) {
                if self.answered_idle_noop(cmd, out) {
                    portal.state = PortalState::Done;
                    return Ok(());
                }
            }
            self.arm_timeout();
            let r = (|| {
                let limit = if max_rows <= 0 { 0 } else { max_rows as u64 };
                if self.tx.state == Txn::Idle
                    && matches!(portal.state, PortalState::New)
                    && !portal.stmt.is_empty()
                    && !(limit == 0 && reads_alone(&portal.stmt))
                {
                    self.tx.begin_implicit(&self.ctx)?;
                }
                self.execute_portal(&mut portal, limit, false, out)
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

    /// Answers a REFRESH with nothing to do when no transaction is open (see
    /// `matview::is_idle_noop_refresh`); false when the statement must run.
    fn answered_idle_noop(&self, cmd: &Command, out: &Out) -> bool {
        let noop = self.tx.state == Txn::Idle
            && super::matview::is_idle_noop_refresh(&self.ctx, &self.tx.capture, cmd);
        if noop {
            out.send(Reply::Complete(NOOP_REFRESH_TAG.into()));
        }
        noop
    }

    /// Sync: ends the implicit transaction of the messages before it.
    pub fn sync(&mut self, out: &Out) {
        self.portals.remove("");
        self.end_query(out);
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

    // ---- COPY FROM STDIN ----------------------------------------------

    pub fn copy_data(&mut self, data: &[u8], out: &Out) {
        let Some(c) = self.copy_in.as_mut() else {
            return;
        };
        if let Err(e) = c.write(data) {
            self.copy_in = None;
            self.on_error();
            out.send(Reply::Error(e));
        }
    }

    pub fn copy_done(&mut self, out: &Out) {
        let Some(c) = self.copy_in.take() else {
            return;
        };
        let (writes, ends_query) = ([c.target()], c.ends_query);
        let loaded = c.finish(&self.ctx).and_then(|n| {
            super::immediate::maintain(&mut self.ctx, &mut self.tx, &writes)?;
            Ok(n)
        });
        match loaded {
            Ok(n) => {
                out.send(Reply::Complete(format!("COPY {n}")));
                // Its rows are acknowledged: a client that disconnects now must keep them.
                if ends_query {
                    self.end_query(out);
                }
            }
            Err(e) => {
                self.on_error();
                out.send(Reply::Error(e));
            }
        }
        out.send(Reply::Status(self.status()));
    }

    pub fn copy_fail(&mut self, message: &str, out: &Out) {
        self.copy_in = None;
        self.on_error();
        out.send(Reply::Error(SqlError::new(
            SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {message}"),
        )));
        out.send(Reply::Status(self.status()));
    }

    // ---- transactions -------------------------------------------------

    /// After a failed statement (see `Tx::on_error`).
    fn on_error(&mut self) {
        self.tx.on_error(&self.ctx);
        self.drop_ended_streams();
    }

    fn commit_implicit(&mut self) -> Result<(), SqlError> {
        let r = self.tx.commit_implicit(&self.ctx);
        self.drop_ended_streams();
        r
    }

    /// BEGIN/COMMIT/ROLLBACK/SAVEPOINT (see `Tx::transaction_command`); None for others.
    fn transaction_command(&mut self, cmd: &Command, out: &Out) -> Option<Result<(), SqlError>> {
        let r = self.tx.transaction_command(&self.ctx, cmd, out);
        self.drop_ended_streams();
        r
    }

    /// Portals streaming from a DuckDB transaction that ended are closed.
    fn drop_ended_streams(&mut self) {
        if self.tx.take_streams_ended() {
            self.portals
                .retain(|_, p| !matches!(p.state, PortalState::Streaming(_)));
        }
    }

    /// After a job panicked: whatever it left half done is undone — the DuckDB transaction
    /// rolled back, streams and COPY dropped, the capture lock and registrations released — so
    /// the session can go on from a clean, idle state.
    pub(crate) fn recover_from_panic(&mut self) {
        self.portals.clear();
        self.copy_in = None;
        self.tx.recover_from_panic(&self.ctx);
    }

    // ---- running a portal ---------------------------------------------

    /// Executes (or continues) a portal. Commands the server answers itself run here, where
    /// the protocol state they change lives; everything else is `exec::execute`.
    fn execute_portal(
        &mut self,
        portal: &mut Portal,
        limit: u64,
        describe: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        let stmt = portal.stmt.clone();
        match (&portal.state, &stmt.kind) {
            (PortalState::New, StmtKind::Command(cmd)) => {
                exec::start(&self.ctx, &mut self.tx, &stmt)?;
                self.server_command(&stmt, cmd, &portal.params, describe, out)?;
                portal.state = PortalState::Done;
                Ok(())
            }
            _ => exec::execute(&mut self.ctx, &mut self.tx, portal, limit, describe, out),
        }
    }

    /// A statement the server runs itself: COPY with the client, a session setting, LISTEN and
    /// NOTIFY, or a materialized-view command. `params` are the portal's bound values.
    fn server_command(
        &mut self,
        stmt: &Statement,
        cmd: &Command,
        params: &[types::ParamValue],
        describe: bool,
        out: &Out,
    ) -> Result<(), SqlError> {
        if describe && stmt.returns_rows() {
            out.send(Reply::RowDescription(exec::fields(stmt.columns(), &[])));
        }
        match cmd {
            Command::Copy(sql::copy::Copy::From {
                table,
                columns,
                options,
            }) => {
                super::matview::check_write_targets(&self.ctx, std::slice::from_ref(table))?;
                let c = super::copy::CopyIn::start(&self.ctx, table, columns, options, out)?;
                self.copy_in = Some(c);
                return Ok(());
            }
            Command::Copy(sql::copy::Copy::To { source, options }) => {
                // The query of COPY (…) TO STDOUT is checked as a statement of its own.
                let query = Lexed::new(source.as_str());
                self.ctx
                    .guard(&query, crate::engine::StatementKind::Select)?;
                let n = super::copy::copy_to(&self.ctx, source, options, out)?;
                out.send(Reply::Complete(format!("COPY {n}")));
                return Ok(());
            }
            _ => {}
        }
        if let Command::Notify(n) = cmd {
            let tag = super::notify_command::run(&self.ctx, &mut self.tx, n, params, out)?;
            out.send(Reply::Complete(tag.into()));
            return Ok(());
        }
        let (ctx, txn) = (&mut self.ctx, self.tx.state);
        let prepared = (&mut self.statements, &mut self.portals);
        if let Some(r) = super::settings_command::run(cmd, ctx, txn, prepared, out) {
            out.send(Reply::Complete(r?));
            return Ok(());
        }
        let tag = super::matview::run_command(&mut self.ctx, &mut self.tx, cmd, &stmt.lexed, out)?;
        out.send(Reply::Complete(tag));
        Ok(())
    }

    /// Arms statement_timeout for the statement about to run.
    pub(crate) fn arm_timeout(&mut self) {
        let Some(d) = self
            .ctx
            .settings
            .get("statement_timeout")
            .and_then(|v| super::timeout::parse_duration(&v))
        else {
            return;
        };
        let int = self.ctx.conn.interrupter();
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
fn analyse(text: &Lexed) -> Result<Command, SqlError> {
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

/// Whether an Execute that fetches every row of `stmt` may run in DuckDB's own autocommit
/// transaction, as a lone read of the simple protocol does, rather than in an implicit
/// transaction until Sync: a DuckDB query that only reads, so that nothing needs committing
/// with what follows. An explicit BEGIN and COMMIT cost more than a short SELECT itself.
fn reads_alone(stmt: &Statement) -> bool {
    matches!(stmt.kind, StmtKind::Duck(_)) && stmt.only_reads()
}

/// Statements that change table data.
fn is_write(text: &Lexed) -> bool {
    matches!(
        text.first_word(),
        Some("INSERT" | "UPDATE" | "DELETE" | "MERGE" | "TRUNCATE" | "COPY" | "WITH")
    )
}

/// A session that ends with a transaction open rolls it back before its capture registrations
/// are released (field drops follow this), so no writer waiting on them sees a half-ended one.
impl Drop for Worker {
    fn drop(&mut self) {
        if self.tx.state != Txn::Idle {
            let _ = self.ctx.conn.exec("ROLLBACK");
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
