//! The background refresher: refreshes each view whose policy is `every N …` when its interval
//! has passed and a source changed since its last refresh.
//!
//! Why it is built this way:
//! - It refreshes through a session of its own, with the statements a user would type
//!   (`REFRESH MATERIALIZED VIEW`), so it obeys every rule a user's refresh obeys: the per-view
//!   refresh lock, snapshot isolation (readers are never blocked), the capture lock's epochs,
//!   notifications at commit.
//! - It learns of changes from commits, not by polling: every transaction that wrote a table
//!   views read (or refreshed a view other views read) names those relations here when it
//!   commits ([`Wake::changes_committed`]). With no commit, the thread sleeps and costs nothing.
//!   At start every scheduled view counts as changed: a write may have committed before a
//!   restart.
//! - Due views refresh together in one transaction (one commit; in order of creation, so a
//!   view after the views it reads); when that fails, each goes alone, so one failing view does
//!   not hold the others back.
//! - A refresh that takes longer than its interval does not pile up: the next may start only
//!   after as long again as the last took. A failing one is retried with a doubling delay (at
//!   most five minutes), as a full refresh: the change that failed it may have been undone
//!   since, and only a recompute reads the current rows alone. Both are reported in
//!   `duckmv.views.refresher_status`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::ivm_sql::ConnSql;
use super::policies::refresh_name;
use super::{Ends, Reply, Session, Shared, SqlError};
use crate::ivm::ViewPolicy;
use crate::sqlstate::SqlState;

/// The longest a failing view waits before the next attempt.
const MAX_RETRY: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Wake {
    state: Mutex<WakeState>,
    cond: Condvar,
}

#[derive(Default)]
struct WakeState {
    /// Relations (lower-cased names) that commits changed since the refresher last looked.
    changed: Vec<String>,
    /// Policies may have changed: look at the views again.
    poked: bool,
    stop: bool,
}

impl Wake {
    /// A transaction that changed `names` committed.
    pub fn changes_committed(&self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        let mut s = self.state.lock();
        for n in names {
            if !s.changed.contains(n) {
                s.changed.push(n.clone());
            }
        }
        self.cond.notify_one();
    }

    /// The catalog was read again.
    pub fn poke(&self) {
        self.state.lock().poked = true;
        self.cond.notify_one();
    }

    fn stop(&self) {
        self.state.lock().stop = true;
        self.cond.notify_one();
    }

    /// Waits until something happens or `timeout` passes (None: no timeout); returns the
    /// changed relations, and whether to stop.
    fn wait(&self, timeout: Option<Duration>) -> (Vec<String>, bool) {
        let mut s = self.state.lock();
        if s.changed.is_empty() && !s.poked && !s.stop {
            match timeout {
                Some(t) => {
                    self.cond.wait_for(&mut s, t);
                }
                None => self.cond.wait(&mut s),
            }
        }
        s.poked = false;
        (std::mem::take(&mut s.changed), s.stop)
    }
}

/// The refresher's thread; stopping it waits for the refresh under way.
pub struct Refresher {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Refresher {
    pub fn start(shared: Arc<Shared>) -> std::io::Result<Refresher> {
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("duckmv-refresher".into())
            .spawn(move || run(s))?;
        Ok(Refresher {
            shared,
            thread: Some(thread),
        })
    }

    pub fn stop(mut self) {
        self.shared.refresher.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the refresher knows of one scheduled view.
struct ViewState {
    /// Since when a committed change has waited for this view (None: nothing pending).
    dirty_since: Option<Instant>,
    /// The earliest the next refresh may start.
    next_at: Instant,
    failures: u32,
    /// What `duckmv.views.refresher_status` should say.
    status: Option<String>,
    /// What it says (None: not written since the server started).
    recorded: Option<Option<String>>,
}

fn run(shared: Arc<Shared>) {
    let session = match Session::start(shared.clone()) {
        Ok(s) => s,
        Err(e) => return tracing::error!("the background refresher could not start: {e}"),
    };
    let status_conn = match shared.db.connect() {
        Ok(c) => c,
        Err(e) => return tracing::error!("the background refresher could not start: {e}"),
    };
    let mut states: HashMap<i64, ViewState> = HashMap::new();
    let mut changed: Vec<String> = Vec::new();
    loop {
        let scheduled = shared.policies.read().scheduled();
        let now = Instant::now();
        states.retain(|id, _| scheduled.iter().any(|v| v.id == *id));
        for v in &scheduled {
            states.entry(v.id).or_insert(ViewState {
                dirty_since: Some(now),
                next_at: now,
                failures: 0,
                status: None,
                recorded: None,
            });
        }
        if !changed.is_empty() {
            let readers = shared.policies.read().readers_of(&changed);
            for id in readers {
                if let Some(st) = states.get_mut(&id) {
                    st.dirty_since.get_or_insert(now);
                }
            }
        }
        let due: Vec<&ViewPolicy> = scheduled
            .iter()
            .filter(|v| {
                let st = &states[&v.id];
                st.dirty_since.is_some() && st.next_at <= now
            })
            .collect();
        if !due.is_empty() {
            refresh_due(&session, &due, &mut states);
        }
        record_statuses(&status_conn, &mut states);
        // Sleep until the next view with pending changes is due, or a commit or a catalog change
        // says more; with nothing pending, until then.
        let now = Instant::now();
        let timeout = states
            .values()
            .filter(|s| s.dirty_since.is_some())
            .map(|s| s.next_at.saturating_duration_since(now))
            .min();
        let (more, stop) = shared.refresher.wait(timeout);
        if stop {
            return;
        }
        changed = more;
    }
}

/// Refreshes the due views: together in one transaction, or each alone when that fails.
fn refresh_due(session: &Session, due: &[&ViewPolicy], states: &mut HashMap<i64, ViewState>) {
    if due.len() > 1 {
        let mut sql = String::from("BEGIN;");
        for v in due {
            sql.push_str(&format!(" REFRESH MATERIALIZED VIEW {};", refresh_name(v)));
        }
        sql.push_str(" COMMIT");
        let start = Instant::now();
        if run_query(session, &sql).is_ok() {
            for v in due {
                settle(states.get_mut(&v.id).unwrap(), v, start, Ok(()));
            }
            return;
        }
        // The failure left the block open and aborted: end it, then refresh one by one.
        let _ = run_query(session, "ROLLBACK");
    }
    for v in due {
        let st = states.get_mut(&v.id).unwrap();
        let refresh = format!("REFRESH MATERIALIZED VIEW {}", refresh_name(v));
        let start = Instant::now();
        let r = if st.failures == 0 {
            run_query(session, &refresh)
        } else {
            // A retry recomputes: the change that failed may be undone by now, and only a
            // recompute reads the current rows alone.
            run_query(session, "SET duckmv.refresh_mode = full")
                .and_then(|_| run_query(session, &refresh))
                .and(run_query(session, "SET duckmv.refresh_mode = auto"))
        };
        settle(st, v, start, r);
    }
}

/// Runs a query string on the refresher's session; its first error, if any.
fn run_query(session: &Session, sql: &str) -> Result<(), SqlError> {
    let sql = sql.to_string();
    let mut rx = session.run(Ends::Ready, move |w, out| w.simple_query(&sql, out));
    let mut first_error = None;
    while let Some(r) = rx.blocking_recv() {
        if let Reply::Error(e) = r {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Updates a view's state after a refresh that started at `start`.
fn settle(st: &mut ViewState, v: &ViewPolicy, start: Instant, r: Result<(), SqlError>) {
    let interval = v.policy.interval().unwrap_or(Duration::from_secs(1));
    let now = Instant::now();
    let took = now - start;
    match r {
        Ok(()) => {
            st.dirty_since = None;
            st.failures = 0;
            if took > interval {
                st.next_at = now + took;
                st.status = Some(format!(
                    "backing off: the last refresh took {} ms, longer than its interval ({})",
                    took.as_millis(),
                    v.policy.text()
                ));
            } else {
                st.next_at = start + interval;
                st.status = None;
            }
        }
        // The server lists a view as soon as its creating transaction reads the catalog again,
        // before that commits: not there yet is no failure; look again after the interval.
        Err(e) if e.code == SqlState::UNDEFINED_TABLE && st.failures == 0 => {
            st.next_at = now + interval;
        }
        Err(e) => {
            let e = format!("{} ({})", e.message, e.code);
            st.failures += 1;
            let delay = interval
                .saturating_mul(1u32 << st.failures.min(16))
                .min(MAX_RETRY);
            st.next_at = now + delay;
            st.status = Some(format!(
                "failed {} time(s), retrying in {} s: {e}",
                st.failures,
                delay.as_secs()
            ));
            tracing::warn!("scheduled refresh of {} failed: {e}", v.name);
        }
    }
}

/// Writes the statuses that changed since they were last written (each view's first one at
/// start, which also clears what an earlier run of the server left).
fn record_statuses(conn: &crate::engine::Conn, states: &mut HashMap<i64, ViewState>) {
    for (id, st) in states.iter_mut() {
        if st.recorded.as_ref() == Some(&st.status) {
            continue;
        }
        match crate::ivm::record_refresher_status(&mut ConnSql(conn), *id, st.status.as_deref()) {
            Ok(()) => st.recorded = Some(st.status.clone()),
            Err(e) => tracing::warn!("could not record the refresher's status: {e}"),
        }
    }
}
