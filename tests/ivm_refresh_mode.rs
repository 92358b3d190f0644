//! `SET duckmv.refresh_mode = auto | incremental | full` over the wire: the mode a refresh used
//! is what `duckmv.views.last_refresh_mode` reports, every mode leaves the view equal to its
//! query (the bag oracle), `auto` recomputes a change that is large next to its table, and a
//! cached plan never outlives a dropped and re-created view.

mod common;

use common::{bag_difference, exec, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

async fn text(c: &Client, sql: &str) -> Option<String> {
    for m in c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    {
        if let SimpleQueryMessage::Row(r) = m {
            return r.get(0).map(str::to_string);
        }
    }
    panic!("no row from {sql}");
}

async fn mode_of(c: &Client, view: &str) -> Option<String> {
    text(
        c,
        &format!("SELECT last_refresh_mode FROM duckmv.views WHERE name = '{view}'"),
    )
    .await
}

async fn reason_of(c: &Client, view: &str) -> String {
    text(
        c,
        &format!("SELECT last_refresh_reason FROM duckmv.views WHERE name = '{view}'"),
    )
    .await
    .unwrap_or_default()
}

async fn oracle(c: &Client, view: &str, query: &str) {
    assert_eq!(
        bag_difference(c, view, query).await,
        0,
        "{view} differs from its query"
    );
}

const Q: &str = "SELECT g, sum(v) AS s, count(*) AS n, min(v) AS lo FROM t GROUP BY g";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mode_is_used_and_reported() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t AS SELECT i AS k, i % 7 AS g, i % 1000 AS v FROM range(50000) r(i)",
    )
    .await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW mv AS {Q}")).await;
    // Populating is a full computation.
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("full"));

    // A small change in auto: incremental.
    exec(&c, "INSERT INTO t VALUES (-1, 3, 5), (-2, 8, 9)").await;
    exec(&c, "DELETE FROM t WHERE k < 20").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("incremental"));
    let why = reason_of(&c, "mv").await;
    assert_eq!(why, "auto: 24 pending rows, too few to recompute for");
    oracle(&c, "mv", Q).await;

    // Forced full, even with nothing pending.
    exec(&c, "SET duckmv.refresh_mode = 'full'").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("full"));
    assert_eq!(reason_of(&c, "mv").await, "duckmv.refresh_mode = full");
    oracle(&c, "mv", Q).await;

    // Forced incremental with a change that auto would recompute.
    exec(&c, "SET duckmv.refresh_mode = incremental").await;
    exec(&c, "UPDATE t SET v = v + 1 WHERE k % 2 = 0").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("incremental"));
    oracle(&c, "mv", Q).await;

    // Auto with half the table changed: recomputed, and still exact.
    exec(&c, "RESET duckmv.refresh_mode").await;
    exec(&c, "UPDATE t SET v = v + 1 WHERE k % 2 = 1").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("full"));
    let why = reason_of(&c, "mv").await;
    assert!(why.starts_with("auto: "), "{why}");
    oracle(&c, "mv", Q).await;

    // Nothing pending: the last mode stays.
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("full"));

    // An unknown mode is refused when a refresh would use it.
    exec(&c, "SET duckmv.refresh_mode = 'sometimes'").await;
    let e = c
        .batch_execute("REFRESH MATERIALIZED VIEW mv")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("22023"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_view_is_not_refreshed_with_the_old_plan() {
    let server = TestServer::start();
    let c = server.client().await;
    let other = server.client().await;
    exec(&c, "CREATE TABLE t (k INT, g INT, v INT)").await;
    exec(&c, "INSERT INTO t VALUES (1, 1, 10), (2, 2, 20)").await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW mv AS {Q}")).await;
    // Both sessions refresh once, so the plan is cached.
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    exec(&other, "REFRESH MATERIALIZED VIEW mv").await;
    exec(&c, "DROP MATERIALIZED VIEW mv").await;
    let q2 = "SELECT g, count(*) AS n FROM t GROUP BY g";
    exec(&c, &format!("CREATE MATERIALIZED VIEW mv AS {q2}")).await;
    exec(&c, "INSERT INTO t VALUES (3, 1, 30)").await;
    exec(&other, "REFRESH MATERIALIZED VIEW mv").await;
    oracle(&other, "mv", q2).await;
    // A rolled-back drop leaves the view working, in every session.
    exec(&c, "BEGIN; DROP MATERIALIZED VIEW mv; ROLLBACK").await;
    exec(&c, "INSERT INTO t VALUES (4, 2, 40)").await;
    exec(&other, "REFRESH MATERIALIZED VIEW mv").await;
    oracle(&other, "mv", q2).await;
    exec(&c, "DROP MATERIALIZED VIEW mv").await;
    let e = other
        .batch_execute("REFRESH MATERIALIZED VIEW mv")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42P01"), "{e}");
}

// What a refresh did is what `duckmv.views` shows once the refresh's transaction commits, in
// every session; a rolled-back refresh leaves the last committed one shown; and the last
// refresh before a shutdown is still shown after the restart. (The server keeps these off the
// refresh's transaction and writes them itself.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_is_reported_once_it_commits_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stats.duckdb");
    let server = TestServer::start_with(&db);
    let c = server.client().await;
    let other = server.client().await;
    exec(&c, "CREATE TABLE t (k INT, g INT, v INT)").await;
    exec(&c, "INSERT INTO t VALUES (1, 1, 10), (2, 2, 20)").await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW mv AS {Q}")).await;
    assert_eq!(mode_of(&other, "mv").await.as_deref(), Some("full"));
    let created = reason_of(&other, "mv").await;

    exec(
        &c,
        "BEGIN; INSERT INTO t VALUES (3, 1, 30); REFRESH MATERIALIZED VIEW mv; ROLLBACK",
    )
    .await;
    assert_eq!(mode_of(&other, "mv").await.as_deref(), Some("full"));
    assert_eq!(reason_of(&other, "mv").await, created);

    exec(&c, "INSERT INTO t VALUES (4, 2, 40)").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_eq!(mode_of(&other, "mv").await.as_deref(), Some("incremental"));
    let changed = text(
        &other,
        "SELECT rows_changed FROM duckmv.views WHERE name = 'mv'",
    )
    .await;
    assert_eq!(changed.as_deref(), Some("1"));
    oracle(&other, "mv", Q).await;

    // The last refresh, never read before the shutdown.
    exec(&c, "DELETE FROM t WHERE k = 1").await;
    exec(&c, "SET duckmv.refresh_mode = 'full'").await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    drop((c, other));
    server.terminate();
    let server = TestServer::start_with(&db);
    let c = server.client().await;
    assert_eq!(mode_of(&c, "mv").await.as_deref(), Some("full"));
    assert_eq!(reason_of(&c, "mv").await, "duckmv.refresh_mode = full");
    oracle(&c, "mv", Q).await;
}

const BIG: &str = "SELECT k, g, v FROM big WHERE v > 0";
const OVER: &str = "SELECT g, count(*) AS n, sum(v) AS s FROM wide GROUP BY g";

/// The steps `EXPLAIN REFRESH` lists for `view`, one line each.
async fn explained(c: &Client, view: &str) -> String {
    let rows = common::text_rows(c, &format!("EXPLAIN REFRESH MATERIALIZED VIEW {view}")).await;
    rows.iter()
        .map(|r| r[0].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn stored(c: &Client) -> u64 {
    text(c, "SELECT count(*) FROM wide")
        .await
        .unwrap()
        .parse()
        .unwrap()
}

async fn rows_changed(c: &Client, view: &str) -> u64 {
    let sql = format!("SELECT rows_changed FROM duckmv.views WHERE name = '{view}'");
    text(c, &sql).await.unwrap().parse().unwrap()
}

// A full refresh that replaces many rows builds the new rows in a table of their own and swaps
// it in (`EXPLAIN REFRESH` shows which; the first full refresh after a population of 150k rows
// deletes, having replaced none): a reader's transaction keeps the old rows until it ends,
// `rows_changed` counts the rows replaced and written, a view over it follows, a second
// refresh of it at the same time fails with 40001 and leaves nothing behind, and the swapped
// storage is what a restart after a crash finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_full_refresh_swaps_in_a_new_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("swap.duckdb");
    let server = TestServer::start_with(&db);
    let c = server.client().await;
    let reader = server.client().await;
    exec(
        &c,
        "CREATE TABLE big AS SELECT i AS k, i % 100 AS g, i % 997 AS v FROM range(150000) r(i)",
    )
    .await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW wide AS {BIG}")).await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW over AS {OVER}")).await;
    exec(&c, "SET duckmv.refresh_mode = 'full'").await;
    let first = explained(&c, "wide").await;
    assert!(first.contains("empty the storage"), "{first}");
    exec(&c, "UPDATE big SET v = v + 1 WHERE k < 500").await;
    let populated = stored(&c).await;
    exec(&c, "REFRESH MATERIALIZED VIEW wide").await;
    let stored_then = stored(&c).await;
    assert_eq!(rows_changed(&c, "wide").await, populated + stored_then);
    let plan = explained(&c, "wide").await;
    for step in [
        "compute the new rows",
        "drop the old rows",
        "in the storage's place",
    ] {
        assert!(plan.contains(step), "{plan}");
    }
    assert!(!plan.contains("empty the storage"), "{plan}");

    exec(&c, "UPDATE big SET v = v + 1 WHERE k < 500").await;
    exec(&c, "DELETE FROM big WHERE k >= 149000").await;
    exec(&reader, "BEGIN").await;
    let before = text(&reader, "SELECT sum(v) FROM wide").await;
    exec(&c, "REFRESH MATERIALIZED VIEW wide").await;
    assert_eq!(text(&reader, "SELECT sum(v) FROM wide").await, before);
    exec(&reader, "COMMIT").await;
    oracle(&reader, "wide", BIG).await;
    let now = stored(&c).await;
    assert_eq!(rows_changed(&c, "wide").await, stored_then + now);
    exec(&reader, "REFRESH MATERIALIZED VIEW over").await;
    oracle(&reader, "over", OVER).await;

    exec(&reader, "SET duckmv.refresh_mode = 'full'").await;
    exec(&c, "BEGIN; REFRESH MATERIALIZED VIEW wide").await;
    let second = reader.batch_execute("REFRESH MATERIALIZED VIEW wide").await;
    common::expect_sqlstate(second, "40001");
    exec(&c, "COMMIT").await;
    exec(&reader, "UPDATE big SET v = 0 WHERE k < 10").await;
    exec(&reader, "REFRESH MATERIALIZED VIEW wide").await;
    drop((c, reader));
    drop(server); // SIGKILL: no checkpoint at shutdown

    let server = TestServer::start_with(&db);
    let c = server.client().await;
    oracle(&c, "wide", BIG).await;
    exec(&c, "REFRESH MATERIALIZED VIEW over").await;
    oracle(&c, "over", OVER).await;
}
