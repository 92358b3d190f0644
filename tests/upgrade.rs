//! A database written by a duckmv that kept one delta table per (view, source) — with changes
//! still pending in them — opens on this server: the views move to the shared change logs,
//! lose nothing that was pending, and stay exact afterwards.

mod common;

use common::{bag_difference, exec, text_rows, TestServer};

const BASE: &str = "SELECT g, sum(v) AS s, count(*) AS n FROM t GROUP BY g";
const OVER: &str = "SELECT g, s FROM a WHERE n > 10";
const FILTER: &str = "SELECT k, v FROM t WHERE v > 50";

/// Rewrites the capture of every view in the (closed) database file to the earlier layout:
/// per-view delta tables filled by per-view triggers, no change logs.
fn downgrade(path: &std::path::Path) {
    let db = duckdb::Connection::open(path).unwrap();
    let run = |sql: &str| {
        db.execute_batch(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    let triggers: Vec<(String, String)> = db
        .prepare("SELECT trigger_name, table_name FROM duckdb_triggers()")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (name, table) in triggers {
        run(&format!("DROP TRIGGER {name} ON {table}"));
    }
    let sources: Vec<(i64, String, String, String)> = db
        .prepare(
            "SELECT view_id, source_name, kind, delta_table FROM _duckmv.view_sources \
             WHERE delta_table IS NOT NULL ORDER BY view_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (k, (view, source, kind, delta)) in sources.iter().enumerate() {
        run(&format!("DROP VIEW {delta}"));
        let relation = if kind == "table" {
            format!("main.{source}")
        } else {
            let id: i64 = db
                .query_row(
                    &format!("SELECT id FROM _duckmv.views WHERE name = '{source}'"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            format!("_duckmv.out_{id}")
        };
        run(&format!(
            "CREATE TABLE {delta} AS SELECT *, CAST(0 AS BIGINT) AS _mv_mult FROM {relation} LIMIT 0"
        ));
        if kind == "table" {
            run(&format!(
                "CREATE TRIGGER _duckmv_{view}_{k}_ins AFTER INSERT ON {relation} REFERENCING NEW TABLE AS n \
                 FOR EACH STATEMENT INSERT INTO {delta} SELECT *, 1 FROM n"
            ));
            run(&format!(
                "CREATE TRIGGER _duckmv_{view}_{k}_del AFTER DELETE ON {relation} REFERENCING OLD TABLE AS o \
                 FOR EACH STATEMENT INSERT INTO {delta} SELECT *, -1 FROM o"
            ));
            run(&format!(
                "CREATE TRIGGER _duckmv_{view}_{k}_upd AFTER UPDATE ON {relation} REFERENCING OLD TABLE AS o \
                 NEW TABLE AS n FOR EACH STATEMENT INSERT INTO {delta} SELECT *, -1 FROM o UNION ALL SELECT *, 1 FROM n"
            ));
        }
    }
    let logs: Vec<String> = db
        .prepare("SELECT log_table FROM _duckmv.change_logs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for log in logs {
        run(&format!("DROP TABLE {log}"));
    }
    run(
        "DROP TABLE _duckmv.change_logs; DROP TABLE _duckmv.log_readers; \
         DROP SEQUENCE _duckmv.log_ids; DROP SEQUENCE _duckmv.log_pos",
    );
    // Plans of that version name no log.
    let plans: Vec<(i64, String)> = db
        .prepare("SELECT id, plan FROM _duckmv.views")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, plan) in plans {
        let mut p: serde_json::Value = serde_json::from_str(&plan).unwrap();
        for s in p["sources"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("log");
        }
        db.execute(
            "UPDATE _duckmv.views SET plan = ? WHERE id = ?",
            duckdb::params![p.to_string(), id],
        )
        .unwrap();
    }
    // Changes the earlier server captured and no refresh applied yet.
    run(
        "INSERT INTO t VALUES (1000, 1, 5), (1001, 7, 70); DELETE FROM t WHERE k < 10; \
         UPDATE t SET g = 2 WHERE k = 60",
    );
    let pending: i64 = db
        .query_row(
            "SELECT (SELECT count(*) FROM _duckmv.d_1_t) + (SELECT count(*) FROM _duckmv.d_3_t)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(pending > 0, "the earlier layout captured nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_on_per_view_delta_tables_move_to_change_logs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("earlier.duckdb");
    {
        let server = TestServer::start_with(&path);
        let c = server.client().await;
        exec(&c, "CREATE TABLE t (k INT, g INT, v INT); INSERT INTO t SELECT range, range % 5, range FROM range(100)").await;
        for (name, q) in [("a", BASE), ("b", OVER), ("c", FILTER)] {
            exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
        }
        drop(c);
        server.terminate();
    }
    downgrade(&path);
    let server = TestServer::start_with(&path);
    let c = server.client().await;
    assert!(
        server
            .log()
            .contains("brought up to date with this server: a, b, c"),
        "{}",
        server.log()
    );
    let old = text_rows(
        &c,
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = '_duckmv' AND table_name LIKE 'd\\_%' ESCAPE '\\'",
    )
    .await;
    assert_eq!(
        old[0][0], "0",
        "delta tables of the earlier layout are left"
    );
    exec(&c, "INSERT INTO t VALUES (2000, 3, 3)").await;
    for (name, q) in [("a", BASE), ("b", OVER), ("c", FILTER)] {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        assert_eq!(
            bag_difference(&c, name, q).await,
            0,
            "{name} after the upgrade"
        );
    }
    exec(
        &c,
        "UPDATE t SET v = v + 100 WHERE g = 1; DELETE FROM t WHERE k = 2000",
    )
    .await;
    for (name, q) in [("a", BASE), ("b", OVER), ("c", FILTER)] {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        assert_eq!(
            bag_difference(&c, name, q).await,
            0,
            "{name} after later changes"
        );
    }
}

/// A database whose views were computed when `/` on integers gave fractions: at start-up the
/// views that divide are recomputed (once), so they hold what their queries give now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_that_divide_are_recomputed_for_integer_division() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("earlier.duckdb");
    let halves = "SELECT k, v / 2 AS h FROM t";
    {
        let server = TestServer::start_with(&path);
        let c = server.client().await;
        exec(
            &c,
            "CREATE TABLE t (k INT, v INT); INSERT INTO t SELECT range, range FROM range(1, 50)",
        )
        .await;
        exec(&c, &format!("CREATE MATERIALIZED VIEW halves AS {halves}")).await;
        exec(&c, &format!("CREATE MATERIALIZED VIEW plain AS {FILTER}")).await;
        let sevens = text_rows(&c, "SELECT h FROM halves WHERE k = 7").await;
        assert_eq!(sevens[0][0], "3", "7 / 2 is 3 in PostgreSQL");
        drop(c);
        server.terminate();
    }
    // What an earlier server left: rows from fractional division, and no mark.
    {
        let db = duckdb::Connection::open(&path).unwrap();
        let id: i64 = db
            .query_row(
                "SELECT id FROM _duckmv.views WHERE name = 'halves'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        db.execute_batch(&format!(
            "UPDATE _duckmv.mv_{id} SET c2 = c2 + 1 WHERE c1 % 2 = 1; \
             DELETE FROM _duckmv.settings WHERE name = 'division'"
        ))
        .unwrap();
    }
    let server = TestServer::start_with(&path);
    let c = server.client().await;
    assert!(
        server
            .log()
            .contains("brought up to date with this server: halves"),
        "{}",
        server.log()
    );
    assert_eq!(bag_difference(&c, "halves", halves).await, 0);
    // The mark is written: the next start recomputes nothing.
    drop(c);
    server.terminate();
    let server = TestServer::start_with(&path);
    assert!(
        !server.log().contains("brought up to date"),
        "{}",
        server.log()
    );
    let c = server.client().await;
    exec(
        &c,
        "INSERT INTO t VALUES (100, 9); DELETE FROM t WHERE k = 3",
    )
    .await;
    exec(&c, "REFRESH MATERIALIZED VIEW halves").await;
    assert_eq!(bag_difference(&c, "halves", halves).await, 0);
}
