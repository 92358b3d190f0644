//! The transaction machine of a session: autocommit, the implicit transaction of a
//! multi-statement query or an extended-protocol batch, BEGIN blocks and their failed state,
//! savepoints, and the part this transaction plays in the capture lock (`capture_txn.rs`).
//!
//! When DuckDB's transaction ends, streams of rows opened in it end too; the machine records
//! that (`take_streams_ended`) so the protocol drops the portals that read them.

use super::capture_txn::{CaptureTxn, TxnState};
use super::context::Context;
use super::reply::{Reply, SqlError, TxStatus};
use super::savepoint::{Outcome, Savepoints};
use super::Out;
use crate::sql::savepoint::SavepointOp;
use crate::sql::{Command, Lexed};
use crate::sqlstate::SqlState;

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

pub const ABORTED: &str =
    "current transaction is aborted, commands ignored until end of transaction block";

pub struct Tx {
    pub state: Txn,
    pub savepoints: Savepoints,
    /// This transaction's part in the capture lock; released when the transaction or the
    /// session ends.
    pub capture: CaptureTxn,
    /// DuckDB's transaction ended since the protocol last asked.
    streams_ended: bool,
    /// Notifications (NOTIFY, refreshes) for listeners, delivered when the transaction
    /// commits — a block's COMMIT, the implicit transaction's end, or the end of an autocommit
    /// statement — and dropped when it rolls back or fails, as PostgreSQL does.
    pub notes: super::notify::Notes,
}

impl Tx {
    pub fn new(capture: CaptureTxn) -> Self {
        Tx {
            state: Txn::Idle,
            savepoints: Default::default(),
            capture,
            streams_ended: false,
            notes: Default::default(),
        }
    }

    pub fn status(&self) -> TxStatus {
        match self.state {
            Txn::Idle | Txn::Implicit => TxStatus::Idle,
            Txn::Block => TxStatus::InBlock,
            Txn::Failed => TxStatus::Failed,
        }
    }

    /// Whether DuckDB's transaction ended (COMMIT or ROLLBACK) since the last call: streams
    /// opened in it are gone.
    pub fn take_streams_ended(&mut self) -> bool {
        std::mem::take(&mut self.streams_ended)
    }

    pub fn check_not_failed(&self) -> Result<(), SqlError> {
        if self.state == Txn::Failed {
            Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED))
        } else {
            Ok(())
        }
    }

    /// After a failed statement: an implicit transaction is rolled back at
    /// once; a BEGIN block becomes failed until ROLLBACK.
    pub fn on_error(&mut self, ctx: &Context) {
        match self.state {
            Txn::Implicit => {
                let _ = ctx.conn.exec("ROLLBACK");
                self.state = Txn::Idle;
                self.after_rollback(ctx);
            }
            Txn::Block => self.state = Txn::Failed,
            // DuckDB can leave an autocommit statement's transaction open
            // and aborted after some failures (write conflicts): end it, so
            // the next statement does not inherit it.
            Txn::Idle => {
                let _ = ctx.conn.exec("ROLLBACK");
            }
            Txn::Failed => {}
        }
        // A failed block will only roll back: what it notified is never delivered.
        self.notes.clear();
        self.release_capture_if_idle();
    }

    /// After an autocommit statement (the end of a query string or a Sync): what it notified
    /// is delivered, as it committed. Inside a transaction nothing happens until it ends.
    pub fn deliver_notes_if_idle(&mut self, ctx: &Context) {
        if self.state == Txn::Idle {
            ctx.notify.publish(&mut self.notes);
        }
    }

    /// Where the transaction stands, for the capture lock's checks.
    fn txn_state(&self, ctx: &Context) -> TxnState {
        TxnState {
            open: self.state != Txn::Idle,
            calls: ctx.conn.calls(),
        }
    }

    /// Takes the capture lock before a statement writes `targets` (see `capture_txn.rs`).
    pub fn lock_capture(
        &mut self,
        ctx: &Context,
        targets: &[String],
        insert_only: bool,
    ) -> Result<(), SqlError> {
        let (txn, int) = (self.txn_state(ctx), ctx.conn.interrupter());
        self.capture
            .lock_for_writes(targets, insert_only, txn, &int)
    }

    /// Called before a statement reaches DuckDB: the first one of a transaction fixes its
    /// snapshot.
    pub fn note_snapshot(&mut self) {
        self.capture.note_snapshot(self.state != Txn::Idle);
    }

    /// Right after BEGIN reached DuckDB.
    fn note_begin(&mut self, ctx: &Context) {
        self.capture.note_begin(ctx.conn.calls());
    }

    /// Ends the capture bookkeeping of a transaction once none is open.
    pub fn release_capture_if_idle(&mut self) {
        if self.state == Txn::Idle {
            self.capture.end();
        }
    }

    /// Before CREATE MATERIALIZED VIEW reads its sources (see `CaptureTxn::prepare_create`).
    pub fn prepare_create(&mut self, ctx: &Context, query: &Lexed) -> Result<(), SqlError> {
        let (txn, int) = (self.txn_state(ctx), ctx.conn.interrupter());
        self.capture.prepare_create(query, txn, &int)
    }

    pub fn begin_implicit(&mut self, ctx: &Context) -> Result<(), SqlError> {
        ctx.conn.exec("BEGIN TRANSACTION")?;
        self.note_begin(ctx);
        self.state = Txn::Implicit;
        Ok(())
    }

    pub fn commit_implicit(&mut self, ctx: &Context) -> Result<(), SqlError> {
        self.state = Txn::Idle;
        self.streams_ended = true;
        if let Err(e) = ctx.conn.exec("COMMIT") {
            let _ = ctx.conn.exec("ROLLBACK");
            self.after_rollback(ctx);
            return Err(e.into());
        }
        ctx.notify.publish(&mut self.notes);
        Ok(())
    }

    /// ROLLBACK TO a savepoint set before any change: a fresh BEGIN block.
    pub fn restart_block(&mut self, ctx: &Context) -> Result<(), SqlError> {
        let _ = ctx.conn.exec("ROLLBACK");
        self.streams_ended = true;
        self.after_rollback(ctx);
        ctx.conn.exec("BEGIN TRANSACTION")?;
        self.note_begin(ctx);
        self.state = Txn::Block;
        Ok(())
    }

    /// SAVEPOINT, RELEASE and ROLLBACK TO (see `savepoint.rs`); returns the command tag.
    fn savepoint(&mut self, ctx: &Context, op: &SavepointOp) -> Result<&'static str, SqlError> {
        let verb = match op {
            SavepointOp::Define(_) => "SAVEPOINT",
            SavepointOp::Release(_) => "RELEASE SAVEPOINT",
            SavepointOp::RollbackTo(_) => "ROLLBACK TO SAVEPOINT",
        };
        match self.state {
            Txn::Idle | Txn::Implicit => Err(SqlError::new(
                SqlState::NO_ACTIVE_SQL_TRANSACTION,
                format!("{verb} can only be used in transaction blocks"),
            )),
            Txn::Failed if !matches!(op, SavepointOp::RollbackTo(_)) => {
                Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED))
            }
            state => match self.savepoints.apply(op, state == Txn::Failed)? {
                Outcome::Tag(tag) => Ok(tag),
                Outcome::Restart => {
                    self.restart_block(ctx)?;
                    Ok("ROLLBACK")
                }
            },
        }
    }

    /// Caches that mirror catalog state hold rolled-back changes when this transaction changed
    /// materialized views; otherwise they still mirror the committed catalog and are kept (a
    /// client that rolls back every read-only transaction, as connection pools do, would
    /// otherwise pay four catalog queries per ROLLBACK and a plan reload per view refreshed).
    fn after_rollback(&mut self, ctx: &Context) {
        self.notes.clear();
        self.capture.forget_refreshes();
        self.capture.bump_at_end = true;
        if std::mem::take(&mut self.capture.catalog_reread) {
            ctx.shared.reload_catalog(&ctx.conn);
        }
    }

    /// Handles BEGIN/COMMIT/ROLLBACK/SAVEPOINT; None for other commands.
    pub fn transaction_command(
        &mut self,
        ctx: &Context,
        cmd: &Command,
        out: &Out,
    ) -> Option<Result<(), SqlError>> {
        let r = match cmd {
            Command::Begin | Command::StartTransaction => match self.state {
                Txn::Idle => ctx.conn.exec("BEGIN TRANSACTION").map(|_| {
                    self.note_begin(ctx);
                    self.state = Txn::Block;
                    self.savepoints.reset();
                }),
                Txn::Implicit => {
                    self.state = Txn::Block;
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
            Command::Commit => match self.state {
                Txn::Idle => {
                    out.send(Reply::Warning(SqlError::new(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    )));
                    Ok("COMMIT")
                }
                Txn::Failed => {
                    let _ = ctx.conn.exec("ROLLBACK");
                    self.state = Txn::Idle;
                    self.after_rollback(ctx);
                    Ok("ROLLBACK")
                }
                Txn::Block | Txn::Implicit => {
                    self.state = Txn::Idle;
                    self.streams_ended = true;
                    match ctx.conn.exec("COMMIT") {
                        Ok(_) => {
                            ctx.notify.publish(&mut self.notes);
                            Ok("COMMIT")
                        }
                        Err(e) => {
                            let _ = ctx.conn.exec("ROLLBACK");
                            self.after_rollback(ctx);
                            return Some(Err(e.into()));
                        }
                    }
                }
            },
            Command::Rollback => {
                if self.state == Txn::Idle {
                    out.send(Reply::Warning(SqlError::new(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    )));
                } else {
                    let _ = ctx.conn.exec("ROLLBACK");
                    self.state = Txn::Idle;
                    self.streams_ended = true;
                    self.after_rollback(ctx);
                }
                Ok("ROLLBACK")
            }
            Command::Savepoint(op) => {
                let r = self.savepoint(ctx, op);
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

    /// After a job panicked (see `Worker::recover_from_panic`): back to idle, with the capture
    /// lock and registrations released and the catalog caches reread.
    pub fn recover_from_panic(&mut self, ctx: &Context) {
        let _ = ctx.conn.exec("ROLLBACK");
        self.state = Txn::Idle;
        self.savepoints.reset();
        self.notes.clear();
        self.capture.forget_refreshes();
        self.capture.bump_at_end = true;
        self.release_capture_if_idle();
        self.capture.bump_at_end = true;
        ctx.shared.reload_catalog(&ctx.conn);
    }
}
