//! DDL a user types on materialized views and the tables they read: CREATE OR REPLACE, ALTER
//! TABLE, and names in other schemas and attached databases. After every change each view is
//! refreshed and compared with its query run fresh (as bags, both ways).

mod common;

use common::{assert_oracle, exec, expect_sqlstate, text_rows, TestServer};
use tokio_postgres::Client;

async fn oracle(c: &Client, view: &str, query: &str, context: &str) {
    exec(c, &format!("REFRESH MATERIALIZED VIEW {view}")).await;
    assert_oracle(c, view, query, context, &[]).await;
}

/// The SQLSTATE of a failure, and its message with the detail (where DROP names the views).
fn failure<T: std::fmt::Debug>(r: Result<T, tokio_postgres::Error>) -> (String, String) {
    let e = r.expect_err("expected an error");
    let db = e.as_db_error().expect("a server error");
    let text = format!("{}\n{}", db.message(), db.detail().unwrap_or(""));
    (db.code().code().to_string(), text)
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

/// The views every ALTER test watches over t(id, g, v) and u(id, w).
async fn alter_setup(c: &Client) {
    exec(
        c,
        "CREATE TABLE t (id INT, g INT, v INT); CREATE TABLE u (id INT, w INT);
         INSERT INTO t SELECT i, i % 3, i * 10 FROM range(12) r(i);
         INSERT INTO u SELECT i, i % 4 FROM range(0, 12, 2) r(i);
         CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g;
         CREATE MATERIALIZED VIEW star AS SELECT * FROM t;
         CREATE MATERIALIZED VIEW win AS SELECT *, row_number() OVER (ORDER BY id) AS rn FROM t;
         CREATE MATERIALIZED VIEW joined AS SELECT t.id, t.v, u.w FROM t JOIN u ON t.id = u.id;
         CREATE MATERIALIZED VIEW keys AS SELECT t.id, u.w FROM t JOIN u ON t.id = u.id;
         CREATE MATERIALIZED VIEW upper AS SELECT g, n FROM agg WHERE n > 1",
    )
    .await;
}

/// Every view equals its query after some writes; `g` and `v` name t's columns now.
async fn alter_check(c: &Client, g: &str, v: &str, context: &str) {
    exec(
        c,
        &format!(
            "INSERT INTO t (id, {g}, {v}) VALUES (100, 1, 7), (101, NULL, 8);
             UPDATE t SET {v} = {v} + 1 WHERE id % 2 = 0; DELETE FROM t WHERE id = 3;
             INSERT INTO u VALUES (100, 9)"
        ),
    )
    .await;
    let views = [
        (
            "agg",
            format!("SELECT {g}, count(*), sum({v}) FROM t GROUP BY {g}"),
        ),
        ("star", format!("SELECT id, {g}, {v} FROM t")),
        (
            "win",
            format!("SELECT id, {g}, {v}, row_number() OVER (ORDER BY id) FROM t"),
        ),
        (
            "joined",
            format!("SELECT t.id, t.{v}, u.w FROM t JOIN u ON t.id = u.id"),
        ),
        (
            "keys",
            "SELECT t.id, u.w FROM t JOIN u ON t.id = u.id".to_string(),
        ),
        ("upper", "SELECT g, n FROM agg WHERE n > 1".to_string()),
    ];
    exec(c, "REFRESH MATERIALIZED VIEW agg").await;
    for (name, q) in &views {
        oracle(c, name, q, context).await;
    }
    exec(
        c,
        "DELETE FROM t WHERE id >= 100; DELETE FROM u WHERE id >= 100",
    )
    .await;
}

/// Each view's name and how it is maintained (`incremental` or `full`).
async fn strategies(c: &Client) -> Vec<(String, String)> {
    text_rows(c, "SELECT name, strategy FROM duckmv.views ORDER BY name")
        .await
        .into_iter()
        .map(|r| (r[0].clone(), r[1].split(':').next().unwrap().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_table_keeps_the_views_that_read_it() {
    let server = TestServer::start();
    let c = server.client().await;
    alter_setup(&c).await;
    let before = strategies(&c).await;

    // ADD COLUMN: the views keep their columns (PostgreSQL expanded * at creation) and stay
    // incremental.
    exec(&c, "ALTER TABLE t ADD COLUMN x INT DEFAULT 5").await;
    assert_eq!(strategies(&c).await, before);
    exec(&c, "INSERT INTO t VALUES (50, 2, 500, 1)").await;
    alter_check(&c, "g", "v", "ADD COLUMN").await;
    let cols = text_rows(&c, "SELECT * FROM star LIMIT 1").await;
    assert_eq!(cols[0].len(), 3, "star gained a column: {cols:?}");

    // A column no view reads goes; the views are rebuilt and stay incremental.
    exec(&c, "ALTER TABLE t DROP COLUMN x").await;
    assert_eq!(strategies(&c).await, before);
    alter_check(&c, "g", "v", "DROP COLUMN of an unread column").await;

    // RENAME COLUMN: the views keep the old name, as in PostgreSQL.
    exec(&c, "ALTER TABLE t RENAME COLUMN g TO grp").await;
    assert_eq!(strategies(&c).await, before);
    alter_check(&c, "grp", "v", "RENAME COLUMN").await;
    let agg = c.prepare("SELECT * FROM agg").await.unwrap();
    let named: Vec<&str> = agg.columns().iter().map(|c| c.name()).collect();
    assert_eq!(named, ["g", "n", "s"]);

    // Constraints: nothing changes for the views.
    exec(&c, "ALTER TABLE t ALTER COLUMN id SET NOT NULL").await;
    exec(&c, "ALTER TABLE t ALTER COLUMN id DROP NOT NULL").await;
    alter_check(&c, "grp", "v", "SET/DROP NOT NULL").await;

    // A column a view reads cannot be dropped, nor change the type of a view's column: the
    // error names the view, and nothing changes.
    let m = expect_sqlstate(
        c.batch_execute("ALTER TABLE t DROP COLUMN v").await,
        "2BP01",
    );
    assert!(m.contains("agg"), "{m}");
    let m = expect_sqlstate(
        c.batch_execute("ALTER TABLE t ALTER COLUMN v TYPE BIGINT")
            .await,
        "2BP01",
    );
    assert!(m.contains("star"), "{m}");
    let m = expect_sqlstate(c.batch_execute("ALTER TABLE t RENAME TO t2").await, "0A000");
    assert!(m.contains("agg"), "{m}");
    alter_check(&c, "grp", "v", "refused ALTERs").await;
    assert_eq!(strategies(&c).await, before);

    // CASCADE drops the views the change breaks (and the views reading them), keeps the rest.
    exec(&c, "ALTER TABLE t DROP COLUMN v CASCADE").await;
    let left = text_rows(&c, "SELECT matviewname FROM pg_matviews ORDER BY 1").await;
    assert_eq!(left, [["keys"]]);
    assert_eq!(
        text_rows(&c, "SELECT name FROM duckmv.views").await,
        [["keys"]]
    );
    exec(&c, "INSERT INTO t VALUES (4, 1)").await;
    oracle(
        &c,
        "keys",
        "SELECT t.id, u.w FROM t JOIN u ON t.id = u.id",
        "CASCADE",
    )
    .await;
}

/// ALTER COLUMN TYPE where no view's columns change type: the views are recomputed from the
/// converted values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_column_type_recomputes_views_over_the_column() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (id INT, g VARCHAR, v INT);
         INSERT INTO t SELECT i, (i % 3)::VARCHAR, i FROM range(10) r(i);
         CREATE MATERIALIZED VIEW sums AS SELECT g, sum(v) AS s, count(*) AS n FROM t GROUP BY g;
         CREATE MATERIALIZED VIEW ids AS SELECT id FROM t WHERE v > 3",
    )
    .await;
    exec(&c, "ALTER TABLE t ALTER COLUMN v TYPE BIGINT USING v * 100").await;
    exec(&c, "INSERT INTO t VALUES (20, '1', 20000000000)").await;
    oracle(
        &c,
        "sums",
        "SELECT g, sum(v), count(*) FROM t GROUP BY g",
        "ALTER TYPE",
    )
    .await;
    oracle(&c, "ids", "SELECT id FROM t WHERE v > 3", "ALTER TYPE").await;
    let m = expect_sqlstate(
        c.batch_execute("ALTER TABLE t ALTER COLUMN g TYPE INT USING g::INT")
            .await,
        "2BP01",
    );
    assert!(m.contains("sums"), "{m}");
    let m = expect_sqlstate(
        c.batch_execute("ALTER TABLE t ALTER COLUMN id TYPE BIGINT")
            .await,
        "2BP01",
    );
    assert!(m.contains("ids"), "{m}");
    oracle(
        &c,
        "ids",
        "SELECT id FROM t WHERE v > 3",
        "refused ALTER TYPE",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_in_other_schemas_and_over_quoted_names() {
    let server = TestServer::start();
    let c = server.client().await;
    let q = "SELECT \"Key\", sum(\"Some Value\") AS total FROM s.\"My Table\" GROUP BY \"Key\"";
    exec(
        &c,
        &format!(
            "CREATE SCHEMA s;
             CREATE TABLE s.\"My Table\" (\"Key\" INT PRIMARY KEY, \"Some Value\" INT);
             CREATE TABLE \"My Table\" (other VARCHAR);
             INSERT INTO s.\"My Table\" VALUES (1, 10), (2, 20);
             CREATE MATERIALIZED VIEW s.mv AS {q};
             CREATE MATERIALIZED VIEW mv AS SELECT count(*) AS n FROM \"My Table\""
        ),
    )
    .await;
    let listed = text_rows(
        &c,
        "SELECT schemaname, matviewname FROM pg_matviews ORDER BY 1, 2",
    )
    .await;
    assert_eq!(listed, [["public", "mv"], ["s", "mv"]]);
    let listed = text_rows(
        &c,
        "SELECT schema, name, strategy FROM duckmv.views ORDER BY 1",
    )
    .await;
    assert_eq!(listed[1][..2], ["s".to_string(), "mv".to_string()]);
    assert!(listed[1][2].starts_with("incremental"), "{listed:?}");
    for w in [
        "INSERT INTO s.\"My Table\" VALUES (3, 30)",
        "UPDATE s.\"My Table\" SET \"Some Value\" = \"Some Value\" + 1 WHERE \"Key\" = 1",
        "DELETE FROM s.\"My Table\" WHERE \"Key\" = 2",
        "INSERT INTO s.\"My Table\" VALUES (3, 5) ON CONFLICT (\"Key\") DO UPDATE SET \"Some Value\" = excluded.\"Some Value\"",
        "MERGE INTO s.\"My Table\" AS m USING (SELECT 4 AS k, 40 AS x) AS d ON m.\"Key\" = d.k \
         WHEN NOT MATCHED THEN INSERT VALUES (d.k, d.x)",
        "ALTER TABLE s.\"My Table\" ADD COLUMN note VARCHAR",
        "ALTER TABLE s.\"My Table\" RENAME COLUMN note TO remark",
        "INSERT INTO \"My Table\" VALUES ('x')",
    ] {
        exec(&c, w).await;
        oracle(&c, "s.mv", q, w).await;
        oracle(&c, "mv", "SELECT count(*) FROM \"My Table\"", w).await;
    }
    // The schema's table is protected, not the same name in main, and the other way round.
    let (code, m) = failure(c.batch_execute("DROP TABLE s.\"My Table\"").await);
    assert_eq!(code, "2BP01");
    assert!(m.contains("My Table") && m.contains("mv"), "{m}");
    exec(&c, "DROP MATERIALIZED VIEW mv; DROP TABLE \"My Table\"").await;
    oracle(&c, "s.mv", q, "dropping main's table of the same name").await;
    exec(&c, "ALTER MATERIALIZED VIEW s.mv RENAME TO mv2").await;
    oracle(&c, "s.mv2", q, "rename").await;
    exec(&c, "DROP MATERIALIZED VIEW s.mv2").await;
    assert_eq!(one(&c, "SELECT count(*) FROM pg_matviews").await, "0");
    assert_eq!(one(&c, "SELECT count(*) FROM duckmv.views").await, "0");
    exec(&c, "DROP TABLE s.\"My Table\"").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_in_attached_databases() {
    let server = TestServer::start_with_args(&["--superuser", "test"]);
    let c = server.client().await;
    // One by one: a transaction writes one database.
    for sql in [
        "ATTACH ':memory:' AS \"hyphen-cat\"",
        "CREATE TABLE \"hyphen-cat\".main.t (k INT, v INT)",
        "INSERT INTO \"hyphen-cat\".main.t VALUES (1, 10), (2, 20)",
        "CREATE TABLE t (id INT, k INT, g INT, v INT)",
        "INSERT INTO t VALUES (1, 1, 1, 1)",
    ] {
        exec(&c, sql).await;
    }
    let qh = "SELECT k, sum(v) AS s FROM \"hyphen-cat\".main.t GROUP BY k";
    let qm = "SELECT k, g, v FROM t";
    exec(&c, &format!("CREATE MATERIALIZED VIEW hv AS {qh}")).await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW lv AS {qm}")).await;
    let strategy = one(&c, "SELECT strategy FROM duckmv.views WHERE name = 'hv'").await;
    assert!(strategy.contains("hyphen-cat"), "{strategy}");
    let strategy = one(&c, "SELECT strategy FROM duckmv.views WHERE name = 'lv'").await;
    assert!(strategy.starts_with("incremental"), "{strategy}");
    for w in [
        "INSERT INTO \"hyphen-cat\".main.t VALUES (3, 30), (1, 1)",
        "UPDATE \"hyphen-cat\".main.t SET v = v * 2 WHERE k = 2",
        "DELETE FROM \"hyphen-cat\".main.t WHERE k = 3",
        "MERGE INTO \"hyphen-cat\".main.t AS x USING (SELECT 9 AS k, 90 AS v) AS d ON x.k = d.k \
         WHEN NOT MATCHED THEN INSERT VALUES (d.k, d.v)",
        "INSERT INTO t VALUES (2, 2, 2, 2)",
        "UPDATE t SET v = 5",
        "ALTER TABLE \"hyphen-cat\".main.t ADD COLUMN z INT",
        "INSERT INTO \"hyphen-cat\".main.t VALUES (4, 4, 4)",
    ] {
        exec(&c, w).await;
        oracle(&c, "hv", qh, w).await;
        oracle(&c, "lv", qm, w).await;
    }
    // Each database's table protects its own views only.
    let (code, m) = failure(c.batch_execute("DROP TABLE \"hyphen-cat\".main.t").await);
    assert_eq!(code, "2BP01");
    assert!(m.contains("hv") && !m.contains("lv"), "{m}");
    let (code, m) = failure(c.batch_execute("DROP TABLE t").await);
    assert_eq!(code, "2BP01");
    assert!(m.contains("lv") && !m.contains("hv"), "{m}");
    expect_sqlstate(
        c.batch_execute("CREATE MATERIALIZED VIEW \"hyphen-cat\".main.mv AS SELECT 1")
            .await,
        "0A000",
    );
    // One transaction cannot write both databases (DuckDB): the views go first.
    let (code, m) = failure(
        c.batch_execute("DROP TABLE \"hyphen-cat\".main.t CASCADE")
            .await,
    );
    assert_eq!(code, "0A000");
    assert!(m.contains("hv"), "{m}");
    let (code, m) = failure(
        c.batch_execute("ALTER TABLE \"hyphen-cat\".main.t RENAME COLUMN v TO w")
            .await,
    );
    assert_eq!(code, "0A000");
    assert!(m.contains("hv"), "{m}");
    oracle(&c, "hv", qh, "refused DDL").await;
    exec(&c, "DROP MATERIALIZED VIEW hv").await;
    exec(&c, "DROP TABLE \"hyphen-cat\".main.t").await;
    assert_eq!(
        one(&c, "SELECT string_agg(name, ',') FROM duckmv.views").await,
        "lv"
    );
    oracle(&c, "lv", qm, "dropping the other database's table").await;
}
