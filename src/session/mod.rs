//! One client's session: its DuckDB connection, transaction state, prepared
//! statements and portals.
//!
//! Each session owns a dedicated OS thread (the worker) that owns the DuckDB
//! connection; the async side sends it jobs and reads replies from a bounded
//! channel. DuckDB work therefore never blocks the async runtime, a long
//! query in one session does not stall others, and results stream with
//! back-pressure: the worker waits while the client is slower than DuckDB.

use crate::sqlstate::SqlState;
mod activity;
mod capture_lock;
mod capture_txn;
pub mod checkpoints;
mod context;
mod copy;
mod copy_error;
mod copy_insert;
mod exec;
mod guard;
mod guard_settings;
mod immediate;
mod ivm_sql;
mod matview;
pub mod notify;
mod notify_command;
mod policies;
mod refresh_stats;
pub mod refresher;
pub mod reply;
mod savepoint;
mod settings_command;
mod shared;
mod statement;
mod timeout;
mod transaction;
mod worker;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use tokio::sync::mpsc;

pub use guard::Policy;
pub use notify::Notification;
pub use reply::{FieldDesc, Reply, SqlError, TxStatus};
pub use shared::Shared;
pub use worker::Worker;

use crate::engine::{EngineError, Interrupter};

type Job = Box<dyn FnOnce(&mut Worker, &Out) + Send>;

/// What the client waits for at the end of a job: a ReadyForQuery (simple query, Sync), or only
/// the job's own replies (COPY data, bookkeeping), or those of an extended-protocol message.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Ready,
    Replies,
    /// Parse, Bind, Describe, Execute, Close. The wire layer may queue several before it reads
    /// their replies, so the session itself does what PostgreSQL does after one fails: it
    /// discards the extended-protocol messages that follow, until a Sync (a job ending Ready).
    Extended,
}

struct Queued {
    job: Job,
    out: Out,
    ends: Ends,
}

/// The session thread's stack. The parser and binder recurse once per nesting level of a
/// statement; the server refuses statements nested deeper than `sql::depth::MAX_DEPTH`
/// (SQLSTATE 54001), and what it accepts must fit here with room to spare.
const SESSION_STACK: usize = 64 << 20;

/// The sending side of a job's replies, and whether one was an error.
pub struct Out(mpsc::Sender<Reply>, std::cell::Cell<bool>);

impl Out {
    /// Sends one reply; false when the client has gone away, so the worker
    /// can stop producing rows nobody reads.
    pub fn send(&self, r: Reply) -> bool {
        if matches!(r, Reply::Error(_)) {
            self.1.set(true);
        }
        self.0.blocking_send(r).is_ok()
    }
}

/// The async handle to a session's worker. Dropping it (the connection ended, however) cancels
/// what the worker runs or waits for; the worker then rolls back and releases everything.
pub struct Session {
    jobs: std::sync::mpsc::Sender<Queued>,
    interrupter: Arc<Interrupter>,
    /// The notifications for this session's client, until the connection takes them.
    notifications: Option<mpsc::UnboundedReceiver<Notification>>,
}

impl Session {
    pub fn start(shared: Arc<Shared>) -> Result<Session, EngineError> {
        let conn = shared.db.connect()?;
        let interrupter = conn.interrupter();
        let (tx, rx) = std::sync::mpsc::channel::<Queued>();
        let (inbox, notifications) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("duckmv-session".into())
            .stack_size(SESSION_STACK)
            .spawn(move || {
                let activity = shared.activity.clone();
                let mut w = Worker::new(conn, shared, inbox);
                let mut discarding = false;
                while let Ok(q) = rx.recv() {
                    let _busy = activity.busy();
                    run_in_order(&mut w, q, &mut discarding);
                }
            })
            .map_err(|e| EngineError::internal(format!("could not start session thread: {e}")))?;
        Ok(Session {
            jobs: tx,
            interrupter,
            notifications: Some(notifications),
        })
    }

    /// The notifications for this session's client: LISTENed channels' committed NOTIFYs, in
    /// order. Once; the connection that serves the client takes them.
    pub fn take_notifications(&mut self) -> Option<mpsc::UnboundedReceiver<Notification>> {
        self.notifications.take()
    }

    /// Tells the session the backend pid the connection gave it (before any statement's job).
    pub fn set_backend_pid(&self, pid: i32) {
        drop(self.run(Ends::Replies, move |w, _| w.set_backend_pid(pid)));
    }

    /// Runs `f` on the worker thread; its replies arrive on the receiver,
    /// which closes when `f` returns.
    pub fn run<F>(&self, ends: Ends, f: F) -> mpsc::Receiver<Reply>
    where
        F: FnOnce(&mut Worker, &Out) + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(8);
        let _ = self.jobs.send(Queued {
            job: Box::new(f),
            out: Out(tx, Default::default()),
            ends,
        });
        rx
    }

    /// Interrupts whatever the worker is running (cancel requests).
    pub fn interrupter(&self) -> Arc<Interrupter> {
        self.interrupter.clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A worker blocked in DuckDB or waiting for the capture lock would otherwise hold its
        // transaction, and what it registered, until that wait ended by itself.
        self.interrupter.interrupt();
    }
}

/// Runs one job, unless it is an extended-protocol message that follows a failed one before
/// the next Sync (`discarding`): PostgreSQL discards those, sending nothing.
fn run_in_order(w: &mut Worker, q: Queued, discarding: &mut bool) {
    match q.ends {
        Ends::Extended if *discarding => return,
        Ends::Ready => *discarding = false,
        _ => {}
    }
    let extended = q.ends == Ends::Extended;
    let failed = run_guarded(w, q);
    *discarding |= extended && failed;
}

/// Runs one job (and says whether it replied with an error); a panic in it ends the job, not the session or the server: the client gets
/// XX000 (and ReadyForQuery if it waits for one) and the worker starts again from idle.
fn run_guarded(w: &mut Worker, q: Queued) -> bool {
    let Queued { job, out, ends } = q;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(w, &out)));
    let Err(panic) = r else { return out.1.get() };
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    tracing::error!("session job panicked: {what}");
    w.recover_from_panic();
    out.send(Reply::Error(SqlError::new(
        SqlState::INTERNAL_ERROR,
        format!("internal error: {what}"),
    )));
    if ends == Ends::Ready {
        out.send(Reply::Ready(w.status()));
    }
    true
}

/// Prepares a database for serving: the IVM catalog, the compatibility
/// objects PostgreSQL clients expect, and the server's caches.
pub fn bootstrap(shared: &Arc<Shared>) -> Result<(), SqlError> {
    let conn = shared.db.connect()?;
    crate::ivm::bootstrap(&mut ivm_sql::ConnSql(&conn))
        .map_err(|e| SqlError::new(e.sqlstate(), e.to_string()))?;
    upgrade(&conn)?;
    // A client-compatibility object that fails to install must not stop
    // the server from answering SQL.
    if let Err(e) = crate::compat::install(&conn) {
        tracing::error!("installing PostgreSQL compatibility objects failed: {e}");
    }
    shared.reload_catalog(&conn);
    Ok(())
}

/// Moves views of a database written by an older duckmv to the current capture, in one
/// transaction: it happens completely or not at all.
fn upgrade(conn: &crate::engine::Conn) -> Result<(), SqlError> {
    use crate::ivm::Sql;
    let db = &mut ivm_sql::ConnSql(conn);
    let fail = |e: String| SqlError::new(SqlState::INTERNAL_ERROR, e);
    db.exec("BEGIN").map_err(|e| fail(e.message))?;
    match crate::ivm::upgrade(db) {
        Ok(moved) => {
            db.exec("COMMIT").map_err(|e| fail(e.message))?;
            if !moved.is_empty() {
                tracing::info!(
                    "materialized views brought up to date with this server: {}",
                    moved.join(", ")
                );
            }
            Ok(())
        }
        Err(e) => {
            let _ = db.exec("ROLLBACK");
            Err(SqlError::new(
                e.sqlstate(),
                format!("upgrading the database: {e}"),
            ))
        }
    }
}

/// How often the background vacuum looks for consumed change-log rows.
const VACUUM_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Starts the thread that deletes change-log rows every view has consumed, off the write and
/// refresh paths: its own connection, one autocommit DELETE per log whose readers moved. A
/// failed round (a log dropped under it, a conflict) is retried on the next. The same thread
/// writes the statistics of committed refreshes (`refresh_stats`).
pub fn start_log_vacuum(shared: &Arc<Shared>) -> Result<(), SqlError> {
    let conn = shared.db.connect()?;
    shared.refresh_stats.attach(shared.db.connect()?);
    shared.refresh_stats.prune();
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("duckmv-vacuum".into())
        .spawn(move || {
            let mut done = std::collections::HashMap::new();
            loop {
                std::thread::sleep(VACUUM_EVERY);
                // Refresh statistics ride along: also off the refresh path, also once a second.
                shared.refresh_stats.flush();
                if let Err(e) = crate::ivm::vacuum_logs(&mut ivm_sql::ConnSql(&conn), &mut done) {
                    tracing::debug!("change-log vacuum: {e}");
                    done.clear();
                }
            }
        })
        .map_err(|e| {
            SqlError::new(
                SqlState::INTERNAL_ERROR,
                format!("could not start vacuum thread: {e}"),
            )
        })?;
    Ok(())
}
