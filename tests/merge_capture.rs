//! MERGE into a table materialized views read runs as plain statements (DuckDB refuses MERGE on
//! tables with triggers). Every statement here runs twice: on the tracked table and on an
//! untracked copy, where DuckDB runs the MERGE itself. Both must leave the same rows, send the
//! same command tag and the same RETURNING rows (or fail with the same SQLSTATE); the views over
//! the tracked table must equal their queries after a refresh.

mod common;

use common::{bag_difference, dump, exec, simple, TestServer};
use tokio_postgres::Client;

/// The views over the tracked table `t` (and the source `s`, for the join).
const VIEWS: &[(&str, &str)] = &[
    (
        "v_agg",
        "SELECT g, count(*) AS n, sum(v) AS sv, count(v) AS nv FROM t GROUP BY g",
    ),
    ("v_proj", "SELECT id, v FROM t WHERE v > 15"),
    ("v_distinct", "SELECT DISTINCT g FROM t"),
    (
        "v_join",
        "SELECT t.id, t.v, s.v AS sv FROM t JOIN s ON t.id = s.id",
    ),
    (
        "v_minmax",
        "SELECT g, min(v) AS lo, max(v) AS hi FROM t GROUP BY g",
    ),
];

const TARGET_ROWS: &str =
    "(1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 2, 40), (5, 3, NULL), (6, NULL, 60), (7, 3, 70)";

/// What a statement did: the command tag's row count and the rows it returned, sorted; or the
/// error's SQLSTATE.
type Outcome = Result<(Vec<u64>, Vec<String>), String>;

async fn outcome(c: &Client, sql: &str) -> Outcome {
    match simple(c, sql).await {
        Ok((counts, rows)) => {
            let mut rows: Vec<String> = rows
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|v| v.unwrap_or_else(|| "NULL".into()))
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect();
            rows.sort();
            Ok((counts, rows))
        }
        Err(e) => Err(common::sqlstate(&e)),
    }
}

/// Puts the same rows into the tracked table and its copy.
async fn reset(c: &Client) {
    for t in ["t", "u"] {
        exec(
            c,
            &format!("DELETE FROM {t}; INSERT INTO {t} VALUES {TARGET_ROWS}"),
        )
        .await;
    }
}

async fn check_views(c: &Client, context: &str) {
    for (name, q) in VIEWS {
        exec(c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        let n = bag_difference(c, name, q).await;
        assert_eq!(
            n,
            0,
            "{name} differs from its query by {n} rows after {context}\nview:\n{}\nquery:\n{}",
            dump(c, &format!("SELECT * FROM {name} ORDER BY ALL")).await,
            dump(c, &format!("SELECT * FROM ({q}) q ORDER BY ALL")).await
        );
    }
}

/// Runs `template` with `{t}` naming the tracked table, then the copy: how they differ, if they
/// do.
async fn compare(c: &Client, template: &str) -> Option<String> {
    reset(c).await;
    let tracked = outcome(c, &template.replace("{t}", "t")).await;
    let plain = outcome(c, &template.replace("{t}", "u")).await;
    if tracked != plain {
        return Some(format!(
            "{template}\n  tracked:   {tracked:?}\n  untracked: {plain:?}"
        ));
    }
    let n = bag_difference(c, "t", "SELECT * FROM u").await;
    if n != 0 {
        return Some(format!(
            "{template}\n  tables differ:\n{}\n  --\n{}",
            dump(c, "SELECT * FROM t ORDER BY ALL").await,
            dump(c, "SELECT * FROM u ORDER BY ALL").await
        ));
    }
    check_views(c, template).await;
    None
}

/// Every statement of `templates` does the same on both tables.
async fn all_same_as_duckdb(c: &Client, templates: &[&str]) {
    let mut failures = Vec::new();
    for m in templates {
        failures.extend(compare(c, m).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

async fn setup(server: &TestServer) -> Client {
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (id INT PRIMARY KEY, g INT, v INT);
         CREATE TABLE u (id INT PRIMARY KEY, g INT, v INT);
         CREATE TABLE s (id INT, g INT, v INT);
         INSERT INTO s VALUES (2, 9, 200), (3, 9, 300), (5, 8, 500), (8, 9, 800), (9, NULL, 900)",
    )
    .await;
    reset(&c).await;
    for (name, q) in VIEWS {
        exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
    }
    c
}

const ONE_KIND: &[&str] = &[
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = {t}.v + s.v, g = s.g",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v)",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED BY TARGET THEN INSERT VALUES (s.id, 0, -s.v)",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED THEN DO NOTHING",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0",
    "MERGE INTO {t} AS x USING s AS y ON x.id = y.id AND y.v > 250 WHEN MATCHED THEN UPDATE SET v = y.v",
    "MERGE INTO {t} USING (SELECT id AS k, v * 10 AS w FROM s WHERE g = 9) AS d ON {t}.id = d.k \
     WHEN MATCHED THEN UPDATE SET v = d.w",
];

const MIXES: &[&str] = &[
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v)",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED AND s.v > 250 THEN DELETE \
     WHEN MATCHED THEN UPDATE SET g = s.g WHEN NOT MATCHED AND s.g = 9 THEN INSERT VALUES (s.id, s.g, s.v) \
     WHEN NOT MATCHED THEN DO NOTHING",
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN MATCHED AND x.v < 25 THEN DO NOTHING \
     WHEN MATCHED THEN UPDATE SET v = x.v + s.v",
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN MATCHED AND s.g = 9 THEN UPDATE SET v = 1 \
     WHEN MATCHED AND s.g = 8 THEN UPDATE SET v = 2 WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN NOT MATCHED BY SOURCE AND x.g = 1 THEN UPDATE SET v = 0 \
     WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v \
     WHEN NOT MATCHED BY TARGET THEN INSERT VALUES (s.id, s.g, s.v)",
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN NOT MATCHED BY SOURCE AND x.v IS NULL THEN DELETE \
     WHEN NOT MATCHED BY SOURCE THEN DO NOTHING WHEN MATCHED AND x.g IS NULL THEN DELETE",
    // The clause order decides: the first clause whose condition holds wins.
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN MATCHED THEN UPDATE SET v = -1 \
     WHEN MATCHED AND s.v > 0 THEN DELETE",
    // Updating the key: the row moves, and the update is still one change.
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN MATCHED AND s.g = 9 THEN UPDATE SET id = x.id + 100",
];

const RETURNING: &[&str] = &[
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v RETURNING *",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN DELETE \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v) RETURNING merge_action(), {t}.*",
    "MERGE INTO {t} AS x USING s ON x.id = s.id WHEN MATCHED AND s.v > 250 THEN DELETE \
     WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0 \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.g, s.v) RETURNING merge_action(), x.id, x.v * 2 AS dbl",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET g = 0 RETURNING merge_action, id",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN DO NOTHING RETURNING id",
];

/// DuckDB's own forms that plain statements can express.
const DUCKDB_FORMS: &[&str] = &[
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED THEN INSERT *",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = 1 RETURNING merge_action, *",
];

/// Forms refused on a table views read (DuckDB runs them on the copy).
const REFUSED: &[&str] = &[
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET *",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN NOT MATCHED THEN INSERT",
    "MERGE INTO {t} USING (SELECT v, id FROM s) AS d ON {t}.id = d.id WHEN NOT MATCHED THEN INSERT BY NAME",
    "MERGE INTO {t} USING s ON {t}.id = s.id WHEN MATCHED AND s.v > 1000 THEN ERROR",
    "INSERT OR REPLACE INTO {t} VALUES (1, 5, 5)",
];

/// A target row matched by two source rows.
const TWICE: &[&str] = &[
    "MERGE INTO {t} USING (SELECT 2 AS id, 5 AS v UNION ALL SELECT 2, 6) AS d ON {t}.id = d.id \
     WHEN MATCHED THEN UPDATE SET v = d.v",
    "MERGE INTO {t} USING (SELECT 2 AS id, 5 AS v UNION ALL SELECT 2, 6) AS d ON {t}.id = d.id \
     WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 2 AS id, 5 AS v UNION ALL SELECT 2, 6) AS d ON {t}.id = d.id \
     WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO {t} USING (SELECT 2 AS id, 5 AS v UNION ALL SELECT 2, 6 UNION ALL SELECT 3, 1) AS d \
     ON {t}.id = d.id WHEN MATCHED AND d.v = 5 THEN DO NOTHING WHEN MATCHED THEN UPDATE SET v = d.v",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_a_tracked_table_matches_duckdbs_merge() {
    let server = TestServer::start();
    let c = setup(&server).await;
    all_same_as_duckdb(&c, &[ONE_KIND, MIXES, RETURNING, DUCKDB_FORMS].concat()).await;
}

/// What cannot run as plain statements is refused with 0A000 and a message naming the view,
/// never DuckDB's complaint about triggers, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_plain_statements_cannot_express_are_refused() {
    let server = TestServer::start();
    let c = setup(&server).await;
    reset(&c).await;
    for m in REFUSED {
        let e = c.batch_execute(&m.replace("{t}", "t")).await.unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(db.code().code(), "0A000", "{m}: {}", db.message());
        assert!(
            db.message().contains("materialized view") && !db.message().contains("trigger"),
            "{m}: {}",
            db.message()
        );
        c.batch_execute(&m.replace("{t}", "u"))
            .await
            .unwrap_or_else(|e| panic!("DuckDB runs {m}: {e}"));
        exec(
            &c,
            &format!("DELETE FROM u; INSERT INTO u VALUES {TARGET_ROWS}"),
        )
        .await;
    }
    assert_eq!(bag_difference(&c, "t", "SELECT * FROM u").await, 0);
    check_views(&c, "refused statements").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_row_matched_twice_is_21000_and_changes_nothing() {
    let server = TestServer::start();
    let c = setup(&server).await;
    all_same_as_duckdb(&c, TWICE).await;
    reset(&c).await;
    let e = c.batch_execute(&TWICE[0].replace("{t}", "t")).await;
    assert_eq!(common::sqlstate(&e.unwrap_err()), "21000");
}

/// In a block that commits or rolls back, and over the extended protocol (RETURNING rows are
/// described before they are sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_in_blocks_and_over_the_extended_protocol() {
    let server = TestServer::start();
    let c = setup(&server).await;
    let m = MIXES[0];
    reset(&c).await;
    exec(&c, &format!("BEGIN; {}; ROLLBACK", m.replace("{t}", "t"))).await;
    assert_eq!(bag_difference(&c, "t", "SELECT * FROM u").await, 0);
    check_views(&c, "a rolled-back MERGE").await;
    for t in ["t", "u"] {
        exec(
            &c,
            &format!(
                "BEGIN; {}; UPDATE {t} SET v = 1 WHERE id = 1; COMMIT",
                m.replace("{t}", t)
            ),
        )
        .await;
    }
    assert_eq!(bag_difference(&c, "t", "SELECT * FROM u").await, 0);
    check_views(&c, "a MERGE in a committed block").await;

    reset(&c).await;
    let sql = RETURNING[2];
    let mut got = Vec::new();
    for t in ["t", "u"] {
        let rows = c.query(&sql.replace("{t}", t), &[]).await.unwrap();
        let names: Vec<String> = rows[0]
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let mut vals: Vec<String> = rows
            .iter()
            .map(|r| {
                let a: String = r.get(0);
                let id: i32 = r.get(1);
                let d: Option<i32> = r.get(2);
                format!("{a}|{id}|{d:?}")
            })
            .collect();
        vals.sort();
        got.push((names, vals));
    }
    assert_eq!(got[0], got[1]);
    assert_eq!(got[0].0, ["merge_action", "id", "dbl"]);
    check_views(&c, "a MERGE … RETURNING over the extended protocol").await;
}
