//! `EXPLAIN REFRESH MATERIALIZED VIEW name` over the wire: one text column, "QUERY PLAN", whose
//! rows say which refresh would run now (nothing, incremental with the sources that have
//! changes, or full and why) and each statement it would run. It changes nothing: the refresh
//! after it still finds the change, and the view equals its query afterwards.

mod common;

use common::{assert_oracle, exec, expect_sqlstate, TestServer};
use tokio_postgres::Client;

/// The plan lines, through the extended protocol (Describe must announce the column).
async fn explain(c: &Client, view: &str) -> Vec<String> {
    let sql = format!("EXPLAIN REFRESH MATERIALIZED VIEW {view}");
    let stmt = c
        .prepare(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(stmt.columns().len(), 1);
    assert_eq!(stmt.columns()[0].name(), "QUERY PLAN");
    let rows = c.query(&stmt, &[]).await.unwrap();
    rows.iter().map(|r| r.get::<_, String>(0)).collect()
}

const Q: &str = "SELECT g, min(v) AS lo, count(*) AS n FROM t GROUP BY g";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_the_refresh_that_would_run_and_changes_nothing() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (k INT, g INT, v INT); INSERT INTO t SELECT i, i % 5, i FROM range(100) r(i)",
    )
    .await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW mv AS {Q}")).await;
    let tables = ["t"];

    let plan = explain(&c, "mv").await;
    assert_eq!(plan, ["Nothing pending: the refresh changes nothing"]);

    exec(
        &c,
        "INSERT INTO t VALUES (1000, 1, -5); DELETE FROM t WHERE k = 0",
    )
    .await;
    let plan = explain(&c, "mv").await;
    assert!(
        plan[0].starts_with("Incremental refresh (")
            && plan[0].ends_with("changes pending in main.t (2 rows)"),
        "{plan:#?}"
    );
    let steps: Vec<&String> = plan
        .iter()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(
        steps
            .iter()
            .any(|l| l.contains("combine the change with the stored groups")),
        "{plan:#?}"
    );
    // A group whose kept minimums run out is recomputed, only when flagged.
    assert!(
        steps
            .iter()
            .any(|l| l.contains("when the change flagged groups")),
        "{plan:#?}"
    );
    assert!(
        plan.iter()
            .any(|l| l.contains(r#"MERGE INTO "_duckmv"."mv_"#)),
        "{plan:#?}"
    );

    // Explaining consumed nothing: the refresh applies the change.
    let pending = common::dump(&c, "SELECT pending FROM duckmv.views WHERE name = 'mv'").await;
    assert_ne!(pending.trim(), "0", "EXPLAIN consumed the change");
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_oracle(&c, "mv", Q, "after refresh", &tables).await;
    assert_eq!(
        explain(&c, "mv").await,
        ["Nothing pending: the refresh changes nothing"]
    );

    // The session's refresh mode decides, as it does for REFRESH.
    exec(
        &c,
        "UPDATE t SET v = v + 1 WHERE k = 7; SET duckmv.refresh_mode = full",
    )
    .await;
    let plan = explain(&c, "mv").await;
    assert_eq!(
        plan[0], "Full refresh (duckmv.refresh_mode = full)",
        "{plan:#?}"
    );
    assert!(plan
        .iter()
        .any(|l| l.contains("recompute the storage from the definition")));
    exec(&c, "RESET duckmv.refresh_mode").await;
    exec(
        &c,
        "REFRESH MATERIALIZED VIEW mv; INSERT INTO t VALUES (3000, 3, 3)",
    )
    .await;
    let plan = explain(&c, "mv").await;
    assert!(
        plan[0].ends_with("changes pending in main.t (1 row)"),
        "{plan:#?}"
    );

    // A shape that is always recomputed says why.
    exec(
        &c,
        "CREATE MATERIALIZED VIEW w AS SELECT DISTINCT ON (k) k, v FROM t ORDER BY k, v",
    )
    .await;
    exec(&c, "INSERT INTO t VALUES (2000, 2, 2)").await;
    let plan = explain(&c, "w").await;
    assert!(plan[0].starts_with("Full refresh (full"), "{plan:#?}");
    exec(
        &c,
        "REFRESH MATERIALIZED VIEW mv; REFRESH MATERIALIZED VIEW w",
    )
    .await;
    assert_oracle(&c, "mv", Q, "after the second refresh", &tables).await;

    // In a transaction block, and for an unknown name: a clear error, the session goes on.
    exec(&c, "BEGIN").await;
    assert_eq!(explain(&c, "mv").await.len(), 1);
    exec(&c, "COMMIT").await;
    expect_sqlstate(
        c.simple_query("EXPLAIN REFRESH MATERIALIZED VIEW nope")
            .await,
        "42P01",
    );
    assert_eq!(explain(&c, "mv").await.len(), 1);

    // psql shows it like PostgreSQL's EXPLAIN.
    exec(&c, "DELETE FROM t WHERE k = 1").await;
    let out = server.psql_ok(&[], "EXPLAIN REFRESH MATERIALIZED VIEW mv;\n");
    assert!(
        out.contains("QUERY PLAN") && out.contains("Incremental refresh"),
        "{out}"
    );
}
