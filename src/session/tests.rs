//! The session worker in process: a panicking job ends that job only; an ended session leaves
//! nothing behind in the notification hub.

use crate::sqlstate::SqlState;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::Database;

fn shared() -> Arc<Shared> {
    let db = Database::open(":memory:").unwrap();
    let shared = Arc::new(Shared::new(db, Policy::default(), std::env::temp_dir()));
    bootstrap(&shared).unwrap();
    shared
}

/// Everything a job replied, in order.
fn replies(mut rx: tokio::sync::mpsc::Receiver<Reply>) -> Vec<Reply> {
    let mut out = Vec::new();
    while let Some(r) = rx.blocking_recv() {
        out.push(r);
    }
    out
}

fn simple(s: &Session, sql: &'static str) -> Vec<Reply> {
    replies(s.run(Ends::Ready, move |w, out| w.simple_query(sql, out)))
}

fn error_codes(rs: &[Reply]) -> Vec<SqlState> {
    rs.iter()
        .filter_map(|r| match r {
            Reply::Error(e) => Some(e.code),
            _ => None,
        })
        .collect()
}

#[test]
fn a_panicking_job_answers_xx000_and_releases_what_it_held() {
    let shared = shared();
    let a = Session::start(shared.clone()).unwrap();
    let b = Session::start(shared.clone()).unwrap();
    let setup = simple(
        &a,
        "CREATE TABLE t (k INT); CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM t GROUP BY k",
    );
    assert!(error_codes(&setup).is_empty());
    // The job takes the capture lock inside a transaction, then panics.
    let rs = replies(a.run(Ends::Ready, |w, out| {
        w.simple_query("BEGIN; INSERT INTO t VALUES (1)", out);
        panic!("injected");
    }));
    assert_eq!(error_codes(&rs), [SqlState::INTERNAL_ERROR]);
    assert!(
        matches!(rs.last(), Some(Reply::Ready(TxStatus::Idle))),
        "{rs:?}"
    );
    // Another session writes at once: the lock was released, the transaction rolled back.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rs = simple(&b, "INSERT INTO t VALUES (2)");
        let _ = tx.send(rs);
    });
    let rs = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a writer waited for the panicked session's lock");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    // The panicked session goes on, and sees only the other session's row.
    let rs = simple(&a, "SELECT count(*) FROM t");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    let rows: Vec<&Reply> = rs.iter().filter(|r| matches!(r, Reply::Rows(..))).collect();
    assert_eq!(rows.len(), 1);
}

#[test]
fn a_session_that_ends_leaves_no_subscription_and_no_pending_notification() {
    let shared = shared();
    let mut a = Session::start(shared.clone()).unwrap();
    let mut inbox = a.take_notifications().unwrap();
    let b = Session::start(shared.clone()).unwrap();
    assert!(error_codes(&simple(&a, "LISTEN x; LISTEN y; LISTEN x")).is_empty());
    assert_eq!(shared.notify.size(), (2, 1));
    // Published before the sender's ReadyForQuery.
    assert!(error_codes(&simple(&b, "NOTIFY x, 'p'")).is_empty());
    assert_eq!(inbox.try_recv().map(|n| n.payload), Ok("p".to_string()));
    // A transaction still open when its session ends notifies nobody.
    assert!(error_codes(&simple(&b, "BEGIN; NOTIFY x, 'lost'")).is_empty());
    drop(b);
    assert!(error_codes(&simple(&a, "SELECT 1")).is_empty());
    std::thread::sleep(Duration::from_millis(200));
    assert!(inbox.try_recv().is_err());
    drop(a);
    let start = std::time::Instant::now();
    while shared.notify.size() != (0, 0) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the ended session's subscriptions stay: {:?}",
            shared.notify.size()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn only_a_rollback_of_catalog_changes_reads_the_catalog_again() {
    let shared = shared();
    let a = Session::start(shared.clone()).unwrap();
    let setup = simple(
        &a,
        "CREATE TABLE t (k INT); CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM t GROUP BY k; \
         INSERT INTO t VALUES (1); REFRESH MATERIALIZED VIEW v",
    );
    assert!(error_codes(&setup).is_empty(), "{setup:?}");
    assert!(shared.views.holds("v"), "a refresh caches the view's plan");
    // A transaction that reads and writes rows, then rolls back: the caches stand.
    let rs = simple(
        &a,
        "BEGIN; SELECT count(*) FROM v; INSERT INTO t VALUES (2); ROLLBACK",
    );
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert!(
        shared.views.holds("v"),
        "a rollback without DDL kept the plan"
    );
    // A failed block rolled back the same way.
    let rs = simple(&a, "BEGIN; SELECT * FROM no_such_table");
    assert_eq!(error_codes(&rs), [SqlState::UNDEFINED_TABLE]);
    assert!(error_codes(&simple(&a, "ROLLBACK")).is_empty());
    assert!(shared.views.holds("v"));
    // A rolled-back CREATE MATERIALIZED VIEW: its name is forgotten, the plans read again.
    let rs = simple(
        &a,
        "BEGIN; CREATE MATERIALIZED VIEW w AS SELECT k FROM t; SELECT 1",
    );
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert!(shared.is_matview("w"));
    assert!(error_codes(&simple(&a, "ROLLBACK")).is_empty());
    assert!(!shared.is_matview("w"), "the rolled-back view is not known");
    assert!(shared.is_matview("v"));
    assert!(!shared.views.holds("v"), "the catalog was read again");
    // And the view still refreshes correctly afterwards.
    let rs = simple(&a, "INSERT INTO t VALUES (3); REFRESH MATERIALIZED VIEW v");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
}

/// How many statements DuckDB was handed (prepared or run) for `sql` sent as a simple query,
/// with its replies.
fn duckdb_calls(s: &Session, sql: &'static str) -> (u64, Vec<Reply>) {
    counted(s, move |w, out| w.simple_query(sql, out))
}

/// How many statements DuckDB was handed while `job` ran, with its replies.
fn counted(s: &Session, job: impl FnOnce(&mut Worker, &Out) + Send + 'static) -> (u64, Vec<Reply>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let rs = replies(s.run(Ends::Ready, move |w, out| {
        let before = w.duckdb_calls();
        job(w, out);
        let _ = tx.send(w.duckdb_calls() - before);
    }));
    (rx.recv().unwrap(), rs)
}

/// A table and a grouped view over it, for the refresh tests.
const VIEW_SETUP: &str = "CREATE TABLE t (g INT, x INT); INSERT INTO t VALUES (1, 1), (2, 2); \
    CREATE MATERIALIZED VIEW v AS SELECT g, sum(x) AS s FROM t GROUP BY g";

/// Rows in `v` but not in its query, and the reverse, as a bag: 0 when the view is right.
const VIEW_ORACLE: &str =
    "SELECT count(*) FROM ((FROM v EXCEPT ALL SELECT g, sum(x) FROM t GROUP BY g) \
     UNION ALL (SELECT g, sum(x) FROM t GROUP BY g EXCEPT ALL FROM v))";

#[test]
fn a_simple_query_is_planned_once() {
    let shared = shared();
    let a = Session::start(shared).unwrap();
    let setup = simple(&a, "CREATE TABLE t AS SELECT range AS k FROM range(10)");
    assert!(error_codes(&setup).is_empty(), "{setup:?}");
    // Prepared, then executed, DuckDB would plan it twice (it binds a prepared statement that
    // reads a table again when it runs).
    let (calls, rs) = duckdb_calls(&a, "SELECT k FROM t WHERE k > 6");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    let rows = rs.iter().filter(|r| matches!(r, Reply::Rows(..))).count();
    assert!(rows > 0, "{rs:?}");
    assert_eq!(calls, 1, "the query went to DuckDB once");
    // A write, inside a block (alone it would run in a transaction of its own).
    assert!(error_codes(&simple(&a, "BEGIN")).is_empty());
    let (calls, rs) = duckdb_calls(&a, "UPDATE t SET k = k + 1 WHERE k < 3");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert_eq!(calls, 1, "the UPDATE went to DuckDB once");
    assert!(error_codes(&simple(&a, "COMMIT")).is_empty());
    // An error is reported as before, and the session goes on.
    let (_, rs) = duckdb_calls(&a, "SELECT no_such_column FROM t");
    assert_eq!(error_codes(&rs), [SqlState::UNDEFINED_COLUMN]);
    let (_, rs) = duckdb_calls(&a, "SELECT count(*) FROM t");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
}

/// A new session's first refresh hands DuckDB no more statements than its later ones: the
/// statements a refresh repeats are parsed once for the server and planned once per run (kept
/// prepared per session, each was prepared and then run, planned twice, in every new session).
#[test]
fn a_new_sessions_first_refresh_plans_each_statement_once() {
    let shared = shared();
    let a = Session::start(shared.clone()).unwrap();
    let setup = simple(&a, VIEW_SETUP);
    assert!(error_codes(&setup).is_empty(), "{setup:?}");
    let setup = simple(
        &a,
        "INSERT INTO t VALUES (1, 5); REFRESH MATERIALIZED VIEW v",
    );
    assert!(error_codes(&setup).is_empty(), "{setup:?}");
    let b = Session::start(shared).unwrap();
    let mut calls = Vec::new();
    for _ in 0..2 {
        assert!(error_codes(&simple(&b, "INSERT INTO t VALUES (2, 7)")).is_empty());
        let (n, rs) = duckdb_calls(&b, "REFRESH MATERIALIZED VIEW v");
        assert!(error_codes(&rs).is_empty(), "{rs:?}");
        calls.push(n);
    }
    assert_eq!(calls[0], calls[1], "first and second refresh in session b");
    let (_, rs) = duckdb_calls(&b, VIEW_ORACLE);
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert_eq!(first_value(&rs), "0", "the view equals its query");
}

/// The first column of the first row of a reply, as text.
fn first_value(rs: &[Reply]) -> String {
    let row = rs
        .iter()
        .find_map(|r| match r {
            Reply::Rows(rows, _) => rows.first(),
            _ => None,
        })
        .expect("a row");
    // Each field's length (4 bytes), then its bytes.
    let len = i32::from_be_bytes(row[..4].try_into().unwrap()) as usize;
    String::from_utf8(row[4..4 + len].to_vec()).unwrap()
}

/// A REFRESH with nothing to do, sent outside a transaction, is answered without DuckDB — no
/// BEGIN, probe or COMMIT — also in a session other than the one whose refresh left the view
/// clean, and after an idle session ended. After a write it runs again and the view equals its
/// query.
#[test]
fn a_refresh_with_nothing_to_do_does_not_reach_duckdb() {
    let shared = shared();
    let a = Session::start(shared.clone()).unwrap();
    let setup = simple(&a, VIEW_SETUP);
    assert!(error_codes(&setup).is_empty(), "{setup:?}");
    assert!(error_codes(&simple(&a, "INSERT INTO t VALUES (1, 5)")).is_empty());
    assert!(error_codes(&simple(&a, "REFRESH MATERIALIZED VIEW v")).is_empty());
    // A session that connects, reads and goes away.
    let idle = Session::start(shared.clone()).unwrap();
    assert!(error_codes(&simple(&idle, "SELECT count(*) FROM v")).is_empty());
    drop(idle);
    let b = Session::start(shared).unwrap();
    let (calls, rs) = duckdb_calls(&b, "REFRESH MATERIALIZED VIEW v");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    let tagged = |rs: &[Reply]| {
        rs.iter()
            .any(|r| matches!(r, Reply::Complete(t) if t == "REFRESH MATERIALIZED VIEW"))
    };
    assert!(tagged(&rs), "{rs:?}");
    assert_eq!(calls, 0, "a refresh with nothing to do reached DuckDB");
    // A write gives it work again: it runs, and the view follows the table.
    assert!(error_codes(&simple(&b, "INSERT INTO t VALUES (2, 7), (3, 1)")).is_empty());
    let (calls, rs) = duckdb_calls(&b, "REFRESH MATERIALIZED VIEW v");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert!(calls > 0, "a refresh with work to do did not run");
    let (_, rs) = duckdb_calls(&b, VIEW_ORACLE);
    assert_eq!(first_value(&rs), "0", "the view equals its query");
    let (calls, rs) = duckdb_calls(&b, "REFRESH MATERIALIZED VIEW v");
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert_eq!(calls, 0, "the second refresh had nothing to do");
    // The same through the extended protocol (Parse, Bind, Execute, Sync).
    let (calls, rs) = counted(&b, |w, out| {
        w.parse(
            String::new(),
            "REFRESH MATERIALIZED VIEW v".into(),
            vec![],
            out,
        );
        w.bind(String::new(), String::new(), vec![], vec![], vec![], out);
        w.execute("", 0, out);
        w.sync(out);
    });
    assert!(error_codes(&rs).is_empty(), "{rs:?}");
    assert!(tagged(&rs), "{rs:?}");
    assert_eq!(calls, 0, "an extended-protocol refresh reached DuckDB");
}
