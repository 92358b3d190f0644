//! One lock for writes to tables that materialized views read, held from
//! the first such write to the end of the writing transaction.
//!
//! Why: DuckDB 2.0 lets a DELETE remove a row that a concurrent, still
//! open transaction updated, without reporting a conflict; both commit and
//! their captured deltas no longer sum to the table. Serialising writers of
//! tracked tables (from before their snapshot) rules that interleaving out;
//! writes to other tables, reads and refreshes run freely.
//! Waiting for the lock can be cancelled (cancel request, statement_timeout)
//! like any statement.
//!
//! CREATE MATERIALIZED VIEW needs more: a transaction that wrote a table
//! before any view read it holds no lock, yet its rows would be neither in
//! the new view (not in CREATE's snapshot) nor in a delta (no trigger when
//! it wrote). So every open transaction's written tables are registered
//! here, and CREATE waits until no other transaction has written a table
//! its query names, while writers of those names queue on the lock.
//! A CREATE inside a transaction whose snapshot is older than such a
//! writer's end cannot see its rows either: it fails with 40001.

use crate::sqlstate::SqlState;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use std::time::Duration;

use super::reply::SqlError;
use crate::engine::Interrupter;

#[derive(Default)]
pub struct CaptureLock {
    /// The session holding the lock.
    owner: Mutex<Option<u64>>,
    freed: Condvar,
    /// Counts the transactions that held the lock. A transaction whose
    /// snapshot is older than the last holder's commit must not write
    /// tracked tables: it would act on rows that changed under it.
    epoch: AtomicU64,
    /// Who wrote what, and which names views being created mention; one
    /// mutex, so a writer's check and its registration are one step.
    registry: Mutex<Registry>,
    /// Counts the ends of transactions that wrote any table.
    writes_ended: AtomicU64,
}

#[derive(Default)]
struct Registry {
    /// Tables each session's open transaction has written.
    writers: HashMap<u64, HashSet<String>>,
    /// Names mentioned by the queries of views being created: their
    /// writers take the lock as if a view read them already.
    creating: HashSet<String>,
    /// Per table, `writes_ended` after the last transaction that wrote it.
    ended: HashMap<String, u64>,
}

/// What a statement about to write must do first.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Go on (its writes are registered).
    Write,
    /// Take the lock first, then call `admit` again.
    Lock,
    /// A view being created waits for this transaction, which wrote a
    /// table it reads: waiting for the lock would never end.
    Deadlock,
}

impl CaptureLock {
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Moves the epoch on: a transaction that ended changed what views have pending without
    /// holding the lock (a refresh feeding other views' deltas, DDL on materialized views).
    pub fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Decides whether `session`'s statement writing `tables` may run now,
    /// and registers its writes if so. `holding`: the session has the lock.
    pub fn admit(
        &self,
        session: u64,
        tables: &[String],
        holding: bool,
        tracked: impl Fn(&str) -> bool,
    ) -> Admission {
        let mut r = self.registry.lock();
        if !holding && tables.iter().any(|t| tracked(t) || r.creating.contains(t)) {
            let wrote_created = r
                .writers
                .get(&session)
                .is_some_and(|w| w.iter().any(|t| r.creating.contains(t)));
            return if wrote_created {
                Admission::Deadlock
            } else {
                Admission::Lock
            };
        }
        r.writers
            .entry(session)
            .or_default()
            .extend(tables.iter().cloned());
        Admission::Write
    }

    /// `session`'s transaction ended.
    pub fn forget_writes(&self, session: u64) {
        let mut r = self.registry.lock();
        if let Some(tables) = r.writers.remove(&session) {
            let seq = self.writes_ended.fetch_add(1, Ordering::SeqCst) + 1;
            for t in tables {
                r.ended.insert(t, seq);
            }
        }
    }

    /// The count of ended writing transactions (read before a snapshot).
    pub fn writes_ended(&self) -> u64 {
        self.writes_ended.load(Ordering::SeqCst)
    }

    /// Whether a transaction that wrote one of `names` ended after
    /// `writes_ended()` returned `since`.
    pub fn written_since(&self, names: &HashSet<String>, since: u64) -> bool {
        let r = self.registry.lock();
        names
            .iter()
            .any(|n| r.ended.get(n).is_some_and(|e| *e > since))
    }

    pub fn start_creating(&self, names: &HashSet<String>) {
        self.registry.lock().creating.extend(names.iter().cloned());
    }

    pub fn stop_creating(&self, names: &HashSet<String>) {
        let mut r = self.registry.lock();
        for n in names {
            r.creating.remove(n);
        }
    }

    /// Waits until no other session's open transaction has written one of
    /// `names`. Cancel and statement_timeout end the wait (57014).
    pub fn wait_for_writers(
        &self,
        session: u64,
        names: &HashSet<String>,
        interrupter: &Interrupter,
    ) -> Result<(), SqlError> {
        loop {
            let busy = self
                .registry
                .lock()
                .writers
                .iter()
                .any(|(s, t)| *s != session && t.iter().any(|t| names.contains(t)));
            if !busy {
                return Ok(());
            }
            if interrupter.take_interrupted() {
                return Err(SqlError::new(
                    SqlState::QUERY_CANCELED,
                    "canceling statement due to user request",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Held by a session while its transaction has written a tracked table;
/// dropping it (transaction end, session end) frees the lock.
pub struct CaptureGuard {
    lock: Arc<CaptureLock>,
}

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        // Counted even after a rollback: a spurious serialization failure
        // is harmless, a missed commit is not.
        self.lock.epoch.fetch_add(1, Ordering::SeqCst);
        *self.lock.owner.lock() = None;
        self.lock.freed.notify_one();
    }
}

/// A process-wide session number: the lock's notion of "who holds it".
pub fn next_session_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Waits for the lock. `interrupter` is the waiting session's: a cancel
/// request or statement_timeout ends the wait with 57014. `snapshot` is the
/// epoch read before the transaction's first statement, None when it has
/// not run one yet (DuckDB takes the snapshot lazily): a holder that
/// committed since then makes this a serialization failure (40001).
pub fn acquire(
    lock: &Arc<CaptureLock>,
    session: u64,
    snapshot: Option<u64>,
    interrupter: &Interrupter,
) -> Result<CaptureGuard, SqlError> {
    let mut owner = lock.owner.lock();
    loop {
        match *owner {
            None => {
                if snapshot.is_some_and(|e| e != lock.epoch()) {
                    return Err(SqlError::new(
                        SqlState::SERIALIZATION_FAILURE,
                        "could not serialize access due to concurrent update",
                    ));
                }
                *owner = Some(session);
                return Ok(CaptureGuard { lock: lock.clone() });
            }
            Some(s) if s == session => {
                // Callers keep their guard; a second one would free the lock
                // early when dropped.
                unreachable!("session {session} asked twice for the capture lock")
            }
            Some(_) => {}
        }
        if interrupter.take_interrupted() {
            return Err(SqlError::new(
                SqlState::QUERY_CANCELED,
                "canceling statement due to user request",
            ));
        }
        lock.freed.wait_for(&mut owner, Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_session_waits_until_the_first_ends() {
        let lock = Arc::new(CaptureLock::default());
        let db = crate::engine::Database::open(":memory:").unwrap();
        let conn = db.connect().unwrap();
        let int = conn.interrupter();
        let g = acquire(&lock, 1, None, &int).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let lock2 = lock.clone();
        let int2 = int.clone();
        let t = std::thread::spawn(move || {
            let g2 = acquire(&lock2, 2, None, &int2).unwrap();
            tx.send(()).unwrap();
            drop(g2);
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        drop(g);
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn a_snapshot_older_than_the_last_holder_cannot_write() {
        let lock = Arc::new(CaptureLock::default());
        let db = crate::engine::Database::open(":memory:").unwrap();
        let int = db.connect().unwrap().interrupter();
        let before = lock.epoch();
        drop(acquire(&lock, 1, None, &int).unwrap());
        let e = acquire(&lock, 2, Some(before), &int).err().unwrap();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
        drop(acquire(&lock, 2, Some(lock.epoch()), &int).unwrap());
    }

    #[test]
    fn a_cancel_ends_the_wait() {
        let lock = Arc::new(CaptureLock::default());
        let db = crate::engine::Database::open(":memory:").unwrap();
        let conn = db.connect().unwrap();
        let int = conn.interrupter();
        let _g = acquire(&lock, 1, None, &int).unwrap();
        let int2 = int.clone();
        let t = std::thread::spawn(move || acquire(&lock, 2, None, &int2).err().unwrap().code);
        std::thread::sleep(Duration::from_millis(50));
        int.interrupt();
        assert_eq!(t.join().unwrap(), SqlState::QUERY_CANCELED);
    }
}
