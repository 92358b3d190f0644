//! State every session shares: the database and what the server knows
//! about materialized views without asking DuckDB on every statement.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::capture_lock::CaptureLock;
use super::ivm_sql::ConnSql;
use crate::engine::{Conn, Database};
use crate::ivm::Sql;

pub struct Shared {
    pub db: Arc<Database>,
    /// What clients may do (server flags).
    pub policy: super::guard::Policy,
    /// Where COPY FROM STDIN data is spooled for DuckDB to load.
    pub spool: std::path::PathBuf,
    /// Lower-cased names of materialized views, so writes to them can be
    /// refused (42809) without a catalog query per statement.
    pub matviews: RwLock<HashSet<String>>,
    /// Lower-cased names of the tables views read: writes to them take
    /// the capture lock.
    tracked: RwLock<HashSet<String>>,
    pub capture_lock: Arc<CaptureLock>,
    /// Compiled materialized views, so a refresh skips the catalog lookup.
    pub views: crate::ivm::ViewCache,
    /// One lock per view: refreshes of the same view run one at a time.
    refresh_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Views' refresh policies, read with the catalog.
    pub policies: RwLock<super::policies::Policies>,
    /// Wakes the background refresher when a commit changed what views read.
    pub refresher: super::refresher::Wake,
    /// Who LISTENs on which channel: where committed notifications go.
    pub notify: Arc<super::notify::Hub>,
    /// What committed refreshes did, until written for `duckmv.views`.
    pub refresh_stats: super::refresh_stats::RefreshStatsStore,
    /// Whether sessions are at work: background checkpoints wait for a quiet moment.
    pub activity: Arc<super::activity::Activity>,
}

impl Shared {
    /// Re-reads the names of materialized views and of the tables they read from the catalog.
    /// Compiled plans are dropped: they may belong to views just dropped, renamed or rolled back.
    pub fn reload_catalog(&self, conn: &Conn) {
        self.views.clear();
        let names = |q: &str| {
            ConnSql(conn).query(q).ok().map(|rows| {
                rows.into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                    .collect::<Vec<_>>()
            })
        };
        if let Some(views) = names("SELECT name FROM _duckmv.views") {
            self.set_matviews(views);
        }
        // Tables views read: their writers take the capture lock.
        if let Some(tables) = names("SELECT DISTINCT source_name FROM _duckmv.view_sources") {
            self.add_tracked(tables);
        }
        match crate::ivm::view_policies(&mut ConnSql(conn)) {
            Ok(views) => *self.policies.write() = super::policies::Policies::new(views),
            Err(e) => tracing::warn!("could not read refresh policies: {e}"),
        }
        // A policy may have changed: the refresher looks at its views again.
        self.refresher.poke();
    }

    pub fn new(db: Arc<Database>, policy: super::guard::Policy, spool: std::path::PathBuf) -> Self {
        Shared {
            db,
            policy,
            spool,
            matviews: RwLock::new(HashSet::new()),
            tracked: RwLock::new(HashSet::new()),
            capture_lock: Arc::default(),
            views: Default::default(),
            refresh_locks: Mutex::new(HashMap::new()),
            policies: Default::default(),
            refresher: Default::default(),
            notify: Arc::default(),
            activity: Arc::default(),
            refresh_stats: Default::default(),
        }
    }

    pub fn is_matview(&self, name: &str) -> bool {
        self.matviews.read().contains(&name.to_ascii_lowercase())
    }

    pub fn set_matviews(&self, names: impl IntoIterator<Item = String>) {
        *self.matviews.write() = names.into_iter().map(|n| n.to_ascii_lowercase()).collect();
    }

    /// Whether a view reads the table `name` (schema ignored: a false
    /// positive only takes the capture lock or asks the catalog without need;
    /// there are no false negatives, as every catalog change adds its names).
    pub fn is_tracked(&self, name: &str) -> bool {
        self.tracked.read().contains(&name.to_ascii_lowercase())
    }

    /// Adds to the tracked names, never removes: a session reloading
    /// before another's CREATE commits must not untrack that view's tables.
    /// A stale name only costs writers to it some waiting.
    pub fn add_tracked(&self, names: impl IntoIterator<Item = String>) {
        self.tracked
            .write()
            .extend(names.into_iter().map(|n| n.to_ascii_lowercase()));
    }

    pub fn refresh_lock(&self, view: &str) -> Arc<Mutex<()>> {
        self.refresh_locks
            .lock()
            .entry(view.to_ascii_lowercase())
            .or_default()
            .clone()
    }
}
