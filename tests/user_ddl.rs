//! DDL a user types on materialized views and the tables they read. After every change each
//! view is refreshed and compared with its query run fresh (as bags, both ways).

mod common;

use common::{bag_difference, dump, exec, expect_sqlstate, text_rows, TestServer};
use tokio_postgres::Client;

async fn oracle(c: &Client, view: &str, query: &str, context: &str) {
    exec(c, &format!("REFRESH MATERIALIZED VIEW {view}")).await;
    let n = bag_difference(c, view, query).await;
    assert_eq!(
        n,
        0,
        "{view} differs from {query} by {n} rows after {context}\nview:\n{}\nquery:\n{}",
        dump(c, &format!("SELECT * FROM {view} ORDER BY ALL")).await,
        dump(c, &format!("SELECT * FROM ({query}) q ORDER BY ALL")).await
    );
}

async fn one(c: &Client, sql: &str) -> String {
    text_rows(c, sql).await[0][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_replace_materialized_view() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (k INT, v INT); INSERT INTO t VALUES (1, 1), (2, 2), (2, 5)",
    )
    .await;
    exec(&c, "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t").await;
    let q = "SELECT k, sum(v) * 10 AS s FROM t GROUP BY k";
    exec(
        &c,
        &format!("CREATE OR REPLACE MATERIALIZED VIEW mv AS {q}"),
    )
    .await;
    oracle(&c, "mv", q, "replace").await;
    let def = one(
        &c,
        "SELECT definition FROM pg_matviews WHERE matviewname = 'mv'",
    )
    .await;
    assert!(def.contains("sum(v) * 10"), "{def}");
    exec(
        &c,
        "INSERT INTO t VALUES (3, 3); UPDATE t SET v = v + 1 WHERE k = 2",
    )
    .await;
    oracle(&c, "mv", q, "writes after the replace").await;
    assert_eq!(one(&c, "SELECT count(*) FROM pg_matviews").await, "1");

    // Rolled back, or with a query that fails: the old definition stays.
    exec(
        &c,
        "BEGIN; CREATE OR REPLACE MATERIALIZED VIEW mv AS SELECT 1 AS one; ROLLBACK",
    )
    .await;
    expect_sqlstate(
        c.batch_execute("CREATE OR REPLACE MATERIALIZED VIEW mv AS SELECT nope FROM t")
            .await,
        "42703",
    );
    oracle(&c, "mv", q, "a rolled-back and a failed replace").await;

    // A view that reads it keeps it from being replaced.
    exec(
        &c,
        "CREATE MATERIALIZED VIEW over AS SELECT k FROM mv WHERE s > 20",
    )
    .await;
    let m = expect_sqlstate(
        c.batch_execute("CREATE OR REPLACE MATERIALIZED VIEW mv AS SELECT k, v FROM t")
            .await,
        "2BP01",
    );
    assert!(m.contains("mv"), "{m}");
    oracle(&c, "mv", q, "a refused replace").await;
    oracle(
        &c,
        "over",
        "SELECT k FROM mv WHERE s > 20",
        "a refused replace",
    )
    .await;

    // Only a materialized view is replaced; other relations of that name are not.
    exec(
        &c,
        "CREATE TABLE plain (x INT); CREATE VIEW pview AS SELECT 1 AS x",
    )
    .await;
    for name in ["plain", "pview"] {
        let m = expect_sqlstate(
            c.batch_execute(&format!(
                "CREATE OR REPLACE MATERIALIZED VIEW {name} AS SELECT k FROM t"
            ))
            .await,
            "42809",
        );
        assert!(m.contains(name), "{m}");
    }
    assert_eq!(one(&c, "SELECT count(*) FROM plain").await, "0");
    assert_eq!(one(&c, "SELECT x FROM pview").await, "1");

    // CREATE OR REPLACE VIEW/TABLE cannot replace a materialized view.
    for sql in [
        "CREATE OR REPLACE VIEW mv AS SELECT 1",
        "CREATE OR REPLACE TABLE mv (x INT)",
        "CREATE OR REPLACE TABLE mv AS SELECT 1 AS x",
    ] {
        expect_sqlstate(c.batch_execute(sql).await, "42809");
    }
    oracle(&c, "mv", q, "refused CREATE OR REPLACE VIEW/TABLE").await;
    // … but the same name in another schema is another relation.
    exec(
        &c,
        "CREATE SCHEMA s; CREATE OR REPLACE VIEW s.mv AS SELECT 7 AS x",
    )
    .await;
    assert_eq!(one(&c, "SELECT x FROM s.mv").await, "7");

    // A new name is simply created, WITH NO DATA too.
    exec(
        &c,
        "CREATE OR REPLACE MATERIALIZED VIEW fresh AS SELECT k FROM t WITH NO DATA",
    )
    .await;
    expect_sqlstate(c.simple_query("SELECT * FROM fresh").await, "55000");
    oracle(&c, "fresh", "SELECT k FROM t", "first refresh").await;
    exec(
        &c,
        "CREATE OR REPLACE MATERIALIZED VIEW fresh AS SELECT v FROM t",
    )
    .await;
    oracle(
        &c,
        "fresh",
        "SELECT v FROM t",
        "replacing an unpopulated view",
    )
    .await;
}
