//! Refresh policies over the wire: `WITH (refresh = …)` at CREATE, `ALTER MATERIALIZED VIEW …
//! SET/RESET (refresh)`, scheduled views kept fresh by the background refresher, and immediate
//! views maintained inside every writing transaction — each checked with the oracle (the view
//! equals its defining query run fresh, as bags).

mod common;

use std::time::{Duration, Instant};

use common::rng::Rng;
use common::{assert_oracle, bag_difference, exec, expect_sqlstate, text_rows, TestServer};
use tokio_postgres::Client;

/// One column of `duckmv.views` for view `name` (NULL spelled `NULL`).
async fn views_col(c: &Client, name: &str, col: &str) -> String {
    let rows = text_rows(
        c,
        &format!("SELECT {col} FROM duckmv.views WHERE name = '{name}'"),
    )
    .await;
    rows[0][0].clone()
}

#[tokio::test]
async fn policies_are_set_at_create_changed_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policies.duckdb");
    let server = TestServer::start_with(&path);
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (g INT, v INT)").await;
    exec(
        &c,
        "CREATE MATERIALIZED VIEW s WITH (refresh = 'every 2 seconds') AS \
         SELECT g, sum(v) AS total FROM t GROUP BY g",
    )
    .await;
    exec(&c, "CREATE MATERIALIZED VIEW d AS SELECT g FROM t").await;
    assert_eq!(
        views_col(&c, "s", "refresh_policy").await,
        "every 2 seconds"
    );
    assert_eq!(views_col(&c, "d", "refresh_policy").await, "on demand");

    exec(&c, "ALTER MATERIALIZED VIEW d SET (refresh = immediate)").await;
    assert_eq!(views_col(&c, "d", "refresh_policy").await, "immediate");
    exec(
        &c,
        "ALTER MATERIALIZED VIEW s SET (refresh = 'every 1 minute')",
    )
    .await;
    assert_eq!(views_col(&c, "s", "refresh_policy").await, "every 1 minute");
    exec(&c, "ALTER MATERIALIZED VIEW s RESET (refresh)").await;
    assert_eq!(views_col(&c, "s", "refresh_policy").await, "on demand");
    // Parameters duckmv does not use are accepted, as PostgreSQL's are.
    exec(&c, "ALTER MATERIALIZED VIEW s SET (fillfactor = 70)").await;

    // Bad values: 22023, nothing created, the session goes on.
    let bad = c
        .batch_execute("CREATE MATERIALIZED VIEW x WITH (refresh = 'sometimes') AS SELECT 1 AS a")
        .await;
    let msg = expect_sqlstate(bad, "22023");
    assert!(msg.contains("refresh"), "{msg}");
    let fast = c
        .batch_execute("ALTER MATERIALIZED VIEW d SET (refresh = 'every 0 seconds')")
        .await;
    expect_sqlstate(fast, "22023");
    assert_eq!(views_col(&c, "d", "refresh_policy").await, "immediate");
    let missing = c
        .batch_execute("ALTER MATERIALIZED VIEW nope SET (refresh = immediate)")
        .await;
    expect_sqlstate(missing, "42P01");
    let n = text_rows(&c, "SELECT count(*) FROM duckmv.views WHERE name = 'x'").await;
    assert_eq!(n[0][0], "0");
    // PostgreSQL's CONCURRENTLY is accepted (readers are never blocked anyway).
    exec(&c, "REFRESH MATERIALIZED VIEW CONCURRENTLY s").await;

    // The policy survives a restart, and an ALTER TABLE that rebuilds the view.
    exec(&c, "ALTER TABLE t ADD COLUMN w INT").await;
    exec(&c, "ALTER TABLE t DROP COLUMN w").await;
    assert_eq!(views_col(&c, "d", "refresh_policy").await, "immediate");
    drop(c);
    server.terminate();
    let again = TestServer::start_with(&path);
    let c = again.client().await;
    assert_eq!(views_col(&c, "d", "refresh_policy").await, "immediate");
    exec(&c, "INSERT INTO t VALUES (1, 2)").await;
    assert_oracle(&c, "d", "SELECT g FROM t", "a write after restart", &["t"]).await;
}

/// Polls until `view` equals `query`; returns how long that took.
async fn caught_up(c: &Client, view: &str, query: &str, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if bag_difference(c, view, query).await == 0 {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "{view} did not catch up within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_scheduled_view_catches_up_within_its_interval_and_idles_without_changes() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (g INT, v INT)").await;
    exec(&c, "INSERT INTO t SELECT i % 5, i FROM range(1000) r(i)").await;
    let q = "SELECT g, sum(v) AS total, count(*) AS n FROM t GROUP BY g";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW s WITH (refresh = 'every 1 second') AS {q}"),
    )
    .await;
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW h WITH (refresh = 'every 1 hour') AS {q}"),
    )
    .await;
    // Scheduled over scheduled: refreshed after it, in the same round.
    let over = "SELECT g, n FROM s WHERE total > 1000";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW s2 WITH (refresh = 'every 1 second') AS {over}"),
    )
    .await;
    // Settle: the refresher's first look at new views (nothing pending).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut r = Rng(7);
    for round in 0..4 {
        let g = r.below(7);
        exec(
            &c,
            &format!("INSERT INTO t VALUES ({g}, {round}), ({g}, 3)"),
        )
        .await;
        exec(&c, &format!("DELETE FROM t WHERE v = {}", r.below(1000))).await;
        exec(
            &c,
            &format!("UPDATE t SET v = v + 1 WHERE g = {}", r.below(5)),
        )
        .await;
        let lag = caught_up(&c, "s", q, Duration::from_secs(4)).await;
        assert!(
            lag < Duration::from_millis(2500),
            "round {round}: lag {lag:?}"
        );
        caught_up(&c, "s2", over, Duration::from_secs(4)).await;
    }
    assert_eq!(views_col(&c, "s", "pending_since").await, "NULL");
    // The hourly view is behind, and says by how much.
    assert!(bag_difference(&c, "h", q).await > 0);
    assert_ne!(views_col(&c, "h", "pending_since").await, "NULL");
    let pending = views_col(&c, "h", "pending").await;
    assert!(
        pending.starts_with("main.t:") && !pending.ends_with(":0"),
        "{pending}"
    );
    let behind = views_col(&c, "h", "behind").await;
    assert!(behind.starts_with("00:00:0"), "{behind}");

    // Nothing changes: no refresh happens.
    let before = views_col(&c, "s", "last_refresh_at").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(views_col(&c, "s", "last_refresh_at").await, before);
    // A write to a table the view does not read wakes nothing either.
    exec(&c, "CREATE TABLE other (x INT)").await;
    exec(&c, "INSERT INTO other VALUES (1)").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(views_col(&c, "s", "last_refresh_at").await, before);
}

#[tokio::test]
async fn the_refresher_reports_a_failing_refresh_and_retries() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (s VARCHAR)").await;
    exec(&c, "INSERT INTO t VALUES ('1'), ('2')").await;
    let q = "SELECT CAST(s AS INTEGER) AS n FROM t";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW v WITH (refresh = 'every 1 second') AS {q}"),
    )
    .await;
    exec(&c, "INSERT INTO t VALUES ('oops')").await;
    let start = Instant::now();
    loop {
        let status = views_col(&c, "v", "refresher_status").await;
        if status.contains("failed") {
            assert!(status.contains("oops"), "{status}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "status: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The bad row goes: the next attempt succeeds and the status clears.
    exec(&c, "DELETE FROM t WHERE s = 'oops'").await;
    exec(&c, "INSERT INTO t VALUES ('3')").await;
    caught_up(&c, "v", q, Duration::from_secs(10)).await;
    let start = Instant::now();
    while views_col(&c, "v", "refresher_status").await != "NULL" {
        assert!(start.elapsed() < Duration::from_secs(3));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Rng {
    fn dml(&mut self) -> String {
        match self.below(6) {
            0 | 1 => format!(
                "INSERT INTO t VALUES ({}, {}), ({}, {})",
                self.below(4),
                self.below(50),
                self.below(4),
                self.below(50)
            ),
            2 => format!("DELETE FROM t WHERE v = {}", self.below(50)),
            3 => format!(
                "UPDATE t SET g = {} WHERE v < {}",
                self.below(4),
                self.below(20)
            ),
            4 => format!("UPDATE t SET v = v + 1 WHERE g = {}", self.below(4)),
            _ => "INSERT INTO t SELECT g, v FROM t WHERE v % 7 = 0".to_string(),
        }
    }
}

const IMMEDIATE: &[(&str, &str)] = &[
    (
        "im_sum",
        "SELECT g, sum(v) AS total, count(*) AS n FROM t GROUP BY g",
    ),
    ("im_max", "SELECT g, max(v) AS top FROM t GROUP BY g"),
    ("im_bag", "SELECT g, v FROM t WHERE v > 10"),
];

/// The oracle on every immediate view of the test below.
async fn check_all(c: &Client, over: &str, context: String) {
    for (name, q) in IMMEDIATE {
        assert_oracle(c, name, q, &context, &["t"]).await;
    }
    assert_oracle(c, "im_over", over, &context, &["t"]).await;
}

#[tokio::test]
async fn immediate_views_equal_their_query_after_every_statement() {
    let server = TestServer::start();
    let c = server.client().await;
    let other = server.client().await;
    exec(&c, "CREATE TABLE t (g INT, v INT)").await;
    exec(
        &c,
        "INSERT INTO t SELECT i % 4, i % 50 FROM range(200) r(i)",
    )
    .await;
    for (name, q) in IMMEDIATE {
        exec(
            &c,
            &format!("CREATE MATERIALIZED VIEW {name} WITH (refresh = 'immediate') AS {q}"),
        )
        .await;
    }
    // A view over an immediate view: immediate too, and one on demand.
    let over = "SELECT n FROM im_sum WHERE total > 100";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW im_over WITH (refresh = 'immediate') AS {over}"),
    )
    .await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW od_over AS {over}")).await;
    let mut r = Rng(42);
    for step in 0..30 {
        let stmt = r.dml();
        match r.below(3) {
            // Autocommit: both sessions see the change at once.
            0 => {
                exec(&c, &stmt).await;
                check_all(&c, over, format!("step {step}: {stmt}")).await;
                check_all(&other, over, format!("step {step} (other session): {stmt}")).await;
            }
            // A block: the writer reads its own change through the views; others see it at
            // commit, or never after a rollback.
            _ => {
                let commit = r.below(2) == 0;
                exec(&c, "BEGIN").await;
                exec(&c, &stmt).await;
                check_all(&c, over, format!("step {step} in its transaction: {stmt}")).await;
                let second = r.dml();
                exec(&c, &second).await;
                check_all(
                    &c,
                    over,
                    format!("step {step} in its transaction: {second}"),
                )
                .await;
                exec(&c, if commit { "COMMIT" } else { "ROLLBACK" }).await;
                check_all(
                    &other,
                    over,
                    format!("step {step} after commit={commit}: {stmt}; {second}"),
                )
                .await;
            }
        }
    }
    // Nothing was left pending, and the on-demand view over them catches up with one REFRESH.
    for (name, _) in IMMEDIATE {
        assert_eq!(views_col(&c, name, "pending").await, "main.t:0");
    }
    exec(&c, "REFRESH MATERIALIZED VIEW od_over").await;
    assert_oracle(&c, "od_over", over, "REFRESH of od_over", &["t"]).await;
}

#[tokio::test]
async fn concurrent_writers_keep_immediate_views_exact() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (g INT, v INT)").await;
    let q = "SELECT g, sum(v) AS total, count(*) AS n FROM t GROUP BY g";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW im WITH (refresh = 'immediate') AS {q}"),
    )
    .await;
    let mut writers = Vec::new();
    for w in 0..3u64 {
        let client = server.client().await;
        writers.push(tokio::spawn(async move {
            let mut r = Rng(100 + w);
            for _ in 0..20 {
                let stmt = r.dml();
                // Writers of a tracked table queue for the capture lock; none may fail.
                client
                    .batch_execute(&format!("BEGIN; {stmt}; COMMIT"))
                    .await
                    .unwrap_or_else(|e| panic!("{stmt}: {e}"));
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    assert_oracle(&c, "im", q, "three concurrent writers", &["t"]).await;
}

#[tokio::test]
async fn a_failing_maintenance_fails_the_write_and_loses_nothing() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (s VARCHAR)").await;
    exec(&c, "INSERT INTO t VALUES ('1')").await;
    let q = "SELECT CAST(s AS INTEGER) AS n FROM t";
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW v WITH (refresh = 'immediate') AS {q}"),
    )
    .await;
    let bad = c
        .batch_execute("INSERT INTO t VALUES ('2'), ('oops')")
        .await;
    let msg = expect_sqlstate(bad, "22P02");
    assert!(msg.contains("maintaining materialized view v"), "{msg}");
    // The statement is undone whole; the session goes on, and so does maintenance.
    assert_eq!(text_rows(&c, "SELECT count(*) FROM t").await[0][0], "1");
    exec(&c, "INSERT INTO t VALUES ('5')").await;
    assert_oracle(&c, "v", q, "a write after the failed one", &["t"]).await;
    // COPY FROM STDIN maintains it too.
    let sink = c.copy_in("COPY t FROM STDIN").await.unwrap();
    use futures::SinkExt;
    let mut sink = Box::pin(sink);
    sink.send(bytes::Bytes::from_static(b"7\n8\n"))
        .await
        .unwrap();
    sink.as_mut().finish().await.unwrap();
    assert_oracle(&c, "v", q, "COPY FROM STDIN", &["t"]).await;
}
