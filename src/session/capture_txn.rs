//! One session's part in the capture lock (see `capture_lock.rs`): what its open transaction
//! holds and has registered, and the snapshot facts the lock's checks need.
//!
//! Everything registered here is released when the transaction ends ([`CaptureTxn::end`]) and,
//! whatever ends the session — Terminate, a dropped socket, a failed TLS handshake, a panic —
//! when this value is dropped: a registration left behind would make every later
//! `CREATE MATERIALIZED VIEW` over those tables, and every writer queued behind it, wait forever.

use crate::sqlstate::SqlState;
use std::collections::HashSet;
use std::sync::Arc;

use super::capture_lock::{acquire, next_session_id, Admission, CaptureGuard};
use super::reply::SqlError;
use super::shared::Shared;
use crate::engine::Interrupter;
use crate::sql;

pub struct CaptureTxn {
    shared: Arc<Shared>,
    session_id: u64,
    /// Held while this transaction has written a table views read.
    guard: Option<CaptureGuard>,
    /// The capture lock's epoch before this transaction's first statement.
    snapshot_epoch: Option<u64>,
    /// The capture lock's count of ended writers before this transaction's first statement.
    snapshot_writes: Option<u64>,
    /// The connection's statement count right after this transaction's BEGIN: any later
    /// statement made DuckDB take the snapshot.
    begin_calls: u64,
    /// Whether this transaction registered writes with the capture lock.
    wrote: bool,
    /// Whether it took the capture lock for inserts although a writer committed after its
    /// snapshot (it may not update or delete tracked rows then).
    stale_snapshot: bool,
    /// Names a CREATE MATERIALIZED VIEW of this transaction announced.
    creating: HashSet<String>,
    /// Views this transaction refreshed before doing anything that could leave them work: marked
    /// clean at `snapshot_epoch` if it commits (see `ivm::ViewCache`).
    refreshed: Vec<String>,
    /// Whether the capture epoch must move on when this transaction ends (it fed other views'
    /// deltas, unpopulated a view, or changed materialized views).
    pub bump_at_end: bool,
    /// Whether the server's catalog caches were read again inside this transaction (it
    /// changed materialized views): they hold its uncommitted state, so a rollback must read
    /// them again. Other rollbacks leave them as they are.
    pub catalog_reread: bool,
    /// Relations views read that this transaction changed (lower-cased names: tables it wrote,
    /// views whose refresh fed other views): told to the background refresher at commit.
    changed: Vec<String>,
    /// What this transaction's refreshes did: kept for `duckmv.views` if it commits.
    stats: Vec<crate::ivm::RefreshStats>,
}

/// Where the session's transaction stands, as the checks below need it.
#[derive(Clone, Copy)]
pub struct TxnState {
    /// A transaction (implicit or BEGIN) is open.
    pub open: bool,
    /// Statements the connection has run so far.
    pub calls: u64,
}

impl CaptureTxn {
    pub fn new(shared: Arc<Shared>) -> Self {
        CaptureTxn {
            shared,
            session_id: next_session_id(),
            guard: None,
            snapshot_epoch: None,
            snapshot_writes: None,
            begin_calls: 0,
            wrote: false,
            stale_snapshot: false,
            creating: HashSet::new(),
            refreshed: Vec::new(),
            bump_at_end: false,
            catalog_reread: false,
            changed: Vec::new(),
            stats: Vec::new(),
        }
    }

    /// Takes the capture lock before a statement writes `targets`, when a view reads one of them.
    /// Called before the statement touches DuckDB where possible, so that the snapshot of a new
    /// transaction is taken after the previous writer committed.
    pub fn lock_for_writes(
        &mut self,
        targets: &[String],
        insert_only: bool,
        txn: TxnState,
        int: &Interrupter,
    ) -> Result<(), SqlError> {
        if targets.is_empty() {
            return Ok(());
        }
        let lock = self.shared.capture_lock.clone();
        let shared = self.shared.clone();
        let tracked = |t: &str| shared.is_tracked(t);
        // A transaction that took the lock for inserts with a snapshot older than the previous
        // holder's commit may not go on to update or delete tracked rows.
        if self.stale_snapshot && !insert_only && targets.iter().any(|t| tracked(t)) {
            return Err(SqlError::new(
                SqlState::SERIALIZATION_FAILURE,
                "could not serialize access due to concurrent update",
            ));
        }
        match lock.admit(self.session_id, targets, self.guard.is_some(), tracked) {
            Admission::Write => {}
            Admission::Deadlock => return Err(SqlError::new(
                SqlState::DEADLOCK_DETECTED,
                "deadlock detected: a materialized view being created waits for this transaction",
            )),
            Admission::Lock => {
                let _ = int.take_interrupted(); // a cancel of an earlier statement
                let snapshot = if txn.open { self.snapshot_epoch } else { None };
                // Adding rows cannot touch a row another writer changed: inserts go on with an
                // old snapshot, and only a later update or delete in this transaction fails.
                let check = if insert_only { None } else { snapshot };
                self.guard = Some(acquire(&lock, self.session_id, check, int)?);
                self.stale_snapshot = insert_only && snapshot.is_some_and(|e| e != lock.epoch());
                lock.admit(self.session_id, targets, true, tracked);
            }
        }
        self.note_changed(targets.iter().filter(|t| tracked(t)));
        self.wrote = true;
        Ok(())
    }

    /// Whether REFRESH of `name` has nothing to do: a committed refresh left it with nothing
    /// pending at the capture epoch this transaction started from, and this transaction has not
    /// written anything a view reads since.
    pub fn refresh_is_noop(&self, name: &str) -> bool {
        !self.wrote
            && !self.bump_at_end
            && self
                .snapshot_epoch
                .is_some_and(|e| self.shared.views.is_clean(name, e))
    }

    /// Whether REFRESH of `name` would have nothing to do in a transaction beginning now, for a
    /// session with no transaction open: then it is answered without opening one.
    pub fn refresh_is_noop_now(&self, name: &str) -> bool {
        !self.wrote
            && !self.bump_at_end
            && self
                .shared
                .views
                .is_clean(name, self.shared.capture_lock.epoch())
    }

    fn note_changed<'a>(&mut self, names: impl Iterator<Item = &'a String>) {
        for n in names {
            if !self.changed.contains(n) {
                self.changed.push(n.clone());
            }
        }
    }

    /// After a REFRESH ran: remember the view for marking at commit, or that the epoch must move.
    /// `bare` is the view's name alone, lower-cased, as the views that read it name it.
    pub fn after_refresh(
        &mut self,
        name: &str,
        bare: &str,
        with_data: bool,
        fed_others: bool,
        stats: Option<crate::ivm::RefreshStats>,
    ) {
        self.stats.extend(stats);
        if fed_others {
            self.note_changed(std::iter::once(&bare.to_string()));
        }
        if with_data && !self.wrote && !self.bump_at_end {
            self.refreshed.push(name.to_string());
        }
        if fed_others || !with_data {
            self.bump_at_end = true;
        }
    }

    /// Called before a statement reaches DuckDB: the first one of a transaction fixes its
    /// snapshot.
    pub fn note_snapshot(&mut self, txn_open: bool) {
        if txn_open && self.snapshot_epoch.is_none() {
            self.snapshot_epoch = Some(self.shared.capture_lock.epoch());
            self.snapshot_writes = Some(self.shared.capture_lock.writes_ended());
        }
    }

    /// Right after BEGIN reached DuckDB, with the connection's statement count.
    pub fn note_begin(&mut self, calls: u64) {
        self.begin_calls = calls;
    }

    /// Forgets refreshes whose marks a rollback undid, and the changes it undid.
    pub fn forget_refreshes(&mut self) {
        self.refreshed.clear();
        self.changed.clear();
        self.stats.clear();
    }

    /// The transaction ended (committed or rolled back): marks views its refreshes left clean,
    /// moves the epoch on if it must, and releases the lock and every registration.
    pub fn end(&mut self) {
        // Not rolled back (that cleared them): these changes are committed.
        // Only the background refresher wants them: with no scheduled view, the commit path
        // does not wake it.
        let changed = std::mem::take(&mut self.changed);
        if self.shared.policies.read().any_scheduled() {
            self.shared.refresher.changes_committed(&changed);
        }
        let stats = std::mem::take(&mut self.stats);
        self.shared.refresh_stats.committed(stats);
        let refreshed = std::mem::take(&mut self.refreshed);
        if let Some(e) = self.snapshot_epoch {
            for name in refreshed {
                self.shared.views.mark_clean(&name, e);
            }
        }
        self.release();
    }

    /// Releases the lock and every registration without marking anything clean.
    fn release(&mut self) {
        let lock = &self.shared.capture_lock;
        self.refreshed.clear();
        self.changed.clear();
        self.stats.clear();
        self.catalog_reread = false;
        if self.bump_at_end {
            lock.bump();
            self.bump_at_end = false;
        }
        if self.wrote {
            lock.forget_writes(self.session_id);
            self.wrote = false;
        }
        if !self.creating.is_empty() {
            lock.stop_creating(&self.creating);
            self.creating.clear();
        }
        self.guard = None;
        self.stale_snapshot = false;
        self.snapshot_epoch = None;
        self.snapshot_writes = None;
    }

    /// Before CREATE MATERIALIZED VIEW reads its sources: writers of the names its query mentions
    /// start queueing on the capture lock, and transactions that already wrote one of them are
    /// waited for. Until this transaction ends, the view's sources cannot change uncaptured.
    pub fn prepare_create(
        &mut self,
        query: &sql::Lexed,
        txn: TxnState,
        int: &Interrupter,
    ) -> Result<(), SqlError> {
        let names: HashSet<String> = query
            .tokens()
            .iter()
            .filter(|t| matches!(t.kind, sql::lex::Tok::Word | sql::lex::Tok::Ident))
            .map(|t| t.text.to_ascii_lowercase())
            .collect();
        let lock = self.shared.capture_lock.clone();
        lock.start_creating(&names);
        self.creating.extend(names.iter().cloned());
        let _ = int.take_interrupted();
        // Whether DuckDB already took this transaction's snapshot (at an earlier statement).
        let snapshot_taken = txn.open && txn.calls > self.begin_calls;
        if self.guard.is_none() {
            let snapshot = self.snapshot_epoch.filter(|_| snapshot_taken);
            self.guard = Some(acquire(&lock, self.session_id, snapshot, int)?);
        }
        lock.wait_for_writers(self.session_id, &names, int)?;
        if !snapshot_taken {
            // The snapshot comes after the waits: it sees everything they waited for.
            if txn.open {
                self.snapshot_epoch = Some(lock.epoch());
                self.snapshot_writes = Some(lock.writes_ended());
            }
            return Ok(());
        }
        // Rows that writers of these tables committed since the snapshot are invisible to the
        // view's first population and were never captured.
        if self
            .snapshot_writes
            .is_some_and(|since| lock.written_since(&names, since))
        {
            let mut e = SqlError::new(
                SqlState::SERIALIZATION_FAILURE,
                "could not serialize access: a table this materialized view reads was \
                 written after this transaction's snapshot",
            );
            e.hint = Some(
                "Create the view in a new transaction, or before the transaction's first query."
                    .into(),
            );
            return Err(e);
        }
        Ok(())
    }
}

/// Whatever ends the session, nothing it registered outlives it.
impl Drop for CaptureTxn {
    fn drop(&mut self) {
        // The epoch moves on when the transaction left open may have changed what views have
        // pending (its capture guard moves it too). A session that ends idle leaves the views
        // as they were: moving it then would make every view's next refresh ask DuckDB again,
        // a cost every short-lived connection would impose on all others.
        self.bump_at_end |= self.wrote;
        self.release();
    }
}
