//! Compiled views kept in server memory, shared by all sessions: a refresh finds its plan here
//! instead of querying the catalog and parsing the plan's JSON every time.
//!
//! An entry is only a hint. Each refresh's probe checks, in its own transaction, that a view with
//! the entry's id and name still exists (ids are never reused and plans never change), and the
//! server clears the cache after every CREATE, DROP or ALTER of a materialized view, and after
//! the rollback of a transaction that did one. A probe that fails (a concurrent session dropped
//! the view's tables) drops the entry, so the next refresh reads the catalog again.
//!
//! It also remembers, per view, the capture epoch at which a committed refresh left nothing
//! pending. Every transaction that could leave a view something to do (a write to a table views
//! read, a refresh feeding other views, REFRESH WITH NO DATA, DDL on materialized views) moves
//! the epoch on after it ends, so a refresh whose transaction started at that same epoch has
//! nothing to do and need not ask DuckDB (outside a transaction block, the server compares the
//! epoch as the REFRESH arrives and opens no transaction for it at all).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use super::catalog::ViewRow;
use super::history::{History, Verdict};
use super::text::split_name;

#[derive(Default)]
pub struct ViewCache {
    views: Mutex<HashMap<(String, String), Arc<ViewRow>>>,
    clean: Mutex<HashMap<(String, String), u64>>,
    /// Row counts of source relations for `auto`'s cost rule, with when they were counted.
    sizes: Mutex<HashMap<String, (u64, Instant)>>,
    /// Refresh timings per view id, for `auto`, and the rows each view's last full refresh
    /// changed, which decide whether the next one swaps (kept across [`ViewCache::clear`]: a
    /// view id names one view forever).
    history: Mutex<HashMap<i64, History>>,
}

/// How long a counted size stands in for the table's (a cost estimate; a change large enough
/// to matter within it is rare and costs at worst the slower of the two refreshes).
const SIZE_TTL: Duration = Duration::from_secs(30);

fn key(schema: &str, name: &str) -> (String, String) {
    (schema.to_lowercase(), name.to_lowercase())
}

impl ViewCache {
    pub(crate) fn get(&self, schema: &str, name: &str) -> Option<Arc<ViewRow>> {
        self.views.lock().get(&key(schema, name)).cloned()
    }

    /// Whether the plan of `name` is held (for tests of when the cache is cleared).
    pub fn holds(&self, name: &str) -> bool {
        let (schema, n) = split_name(name);
        self.get(&schema, &n).is_some()
    }

    pub(crate) fn put(&self, schema: &str, name: &str, view: Arc<ViewRow>) {
        self.views.lock().insert(key(schema, name), view);
    }

    pub(crate) fn forget(&self, schema: &str, name: &str) {
        self.views.lock().remove(&key(schema, name));
    }

    /// Forgets everything (after DDL on materialized views, or a rollback).
    pub fn clear(&self) {
        self.views.lock().clear();
        self.clean.lock().clear();
    }

    /// Records that a committed refresh of `name` (schema-qualified or not) whose transaction
    /// began at capture `epoch` left nothing pending.
    pub fn mark_clean(&self, name: &str, epoch: u64) {
        let (schema, n) = split_name(name);
        self.clean.lock().insert(key(&schema, &n), epoch);
    }

    /// Recent row counts of all of `relations`, or None.
    pub(crate) fn sizes(&self, relations: &[&str]) -> Option<Vec<u64>> {
        let sizes = self.sizes.lock();
        relations
            .iter()
            .map(|r| {
                sizes
                    .get(*r)
                    .filter(|(_, at)| at.elapsed() < SIZE_TTL)
                    .map(|(n, _)| *n)
            })
            .collect()
    }

    pub(crate) fn note_sizes(&self, relations: &[&str], sizes: &[u64]) {
        let mut m = self.sizes.lock();
        for (r, n) in relations.iter().zip(sizes) {
            m.insert(r.to_string(), (*n, Instant::now()));
        }
    }

    /// What view `id`'s refresh timings so far say about `pending` rows.
    pub(crate) fn verdict(&self, id: i64, pending: u64) -> Verdict {
        match self.history.lock().get(&id) {
            Some(h) => h.verdict(pending),
            None => Verdict::Unknown,
        }
    }

    /// Records an incremental refresh of view `id` that applied `pending` rows.
    pub(crate) fn note_incremental(&self, id: i64, pending: u64, ms: f64) {
        self.history
            .lock()
            .entry(id)
            .or_default()
            .note_incremental(pending, ms);
    }

    /// Records a full refresh of view `id` (`ms`: None for a population) that changed `rows`.
    pub(crate) fn note_full(&self, id: i64, ms: f64, rows: u64) {
        self.history
            .lock()
            .entry(id)
            .or_default()
            .note_full(ms, rows);
    }

    /// Records that populating view `id` took `ms` and wrote `rows` (CREATE ... WITH DATA
    /// through the server, or REFRESH of an unpopulated view).
    pub fn note_population(&self, id: i64, ms: f64, rows: u64) {
        self.history
            .lock()
            .entry(id)
            .or_default()
            .note_population(ms, rows);
    }

    /// Whether view `id`'s next full refresh should swap a new table in.
    pub(crate) fn replaces_many(&self, id: i64) -> bool {
        self.history
            .lock()
            .get(&id)
            .is_some_and(|h| h.replaces_many())
    }

    /// Whether `name` was left with nothing pending at `epoch`.
    pub fn is_clean(&self, name: &str, epoch: u64) -> bool {
        let (schema, n) = split_name(name);
        self.clean.lock().get(&key(&schema, &n)) == Some(&epoch)
    }
}
