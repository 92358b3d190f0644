//! One client's session: its DuckDB connection, transaction state, prepared
//! statements and portals.
//!
//! Each session owns a dedicated OS thread (the worker) that owns the DuckDB
//! connection; the async side sends it jobs and reads replies from a bounded
//! channel. DuckDB work therefore never blocks the async runtime, a long
//! query in one session does not stall others, and results stream with
//! back-pressure: the worker waits while the client is slower than DuckDB.

mod capture_lock;
mod copy;
mod exec;
mod hot_sql;
mod ivm_bridge;
pub mod reply;
mod savepoint;
mod shared;
mod timeout;
mod worker;

use std::sync::Arc;

use tokio::sync::mpsc;

pub use reply::{FieldDesc, Reply, SqlError, TxStatus};
pub use shared::Shared;
pub use worker::Worker;

use crate::engine::{EngineError, Interrupter};

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// The sending side of a job's replies.
pub struct Out(mpsc::Sender<Reply>);

impl Out {
    /// Sends one reply; false when the client has gone away, so the worker
    /// can stop producing rows nobody reads.
    pub fn send(&self, r: Reply) -> bool {
        self.0.blocking_send(r).is_ok()
    }
}

/// The async handle to a session's worker.
pub struct Session {
    jobs: std::sync::mpsc::Sender<Job>,
    interrupter: Arc<Interrupter>,
}

impl Session {
    pub fn start(shared: Arc<Shared>) -> Result<Session, EngineError> {
        let conn = shared.db.connect()?;
        let interrupter = conn.interrupter();
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("duckmv-session".into())
            .spawn(move || {
                let mut w = Worker::new(conn, shared);
                while let Ok(job) = rx.recv() {
                    job(&mut w);
                }
            })
            .map_err(|e| EngineError::internal(format!("could not start session thread: {e}")))?;
        Ok(Session {
            jobs: tx,
            interrupter,
        })
    }

    /// Runs `f` on the worker thread; its replies arrive on the receiver,
    /// which closes when `f` returns.
    pub fn run<F>(&self, f: F) -> mpsc::Receiver<Reply>
    where
        F: FnOnce(&mut Worker, &Out) + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(8);
        let out = Out(tx);
        let _ = self.jobs.send(Box::new(move |w: &mut Worker| f(w, &out)));
        rx
    }

    /// Interrupts whatever the worker is running (cancel requests).
    pub fn interrupter(&self) -> Arc<Interrupter> {
        self.interrupter.clone()
    }
}

/// Prepares a database for serving: the IVM catalog, the compatibility
/// objects PostgreSQL clients expect, and the server's caches.
pub fn bootstrap(shared: &Arc<Shared>) -> Result<(), SqlError> {
    let conn = shared.db.connect()?;
    crate::ivm::bootstrap(&mut ivm_bridge::ConnSql(&conn))
        .map_err(|e| SqlError::new(e.sqlstate(), e.to_string()))?;
    // A client-compatibility object that fails to install must not stop
    // the server from answering SQL.
    if let Err(e) = crate::compat::install(&conn) {
        tracing::error!("installing PostgreSQL compatibility objects failed: {e}");
    }
    let w = &mut Worker::new(conn, shared.clone());
    ivm_bridge::reload_matviews(w);
    Ok(())
}
