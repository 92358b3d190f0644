//! Nothing exposed: probed as an ordinary client, the server reads and writes no server files,
//! lets no session change another's settings, and lets nobody change duckmv's own objects.

mod common;

use common::{bag_difference, exec, expect_sqlstate, text_rows, TestServer};
use tokio_postgres::Client;

async fn refused(c: &Client, sql: &str) {
    let r = c.batch_execute(sql).await;
    let e = r.expect_err(sql);
    let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
    assert_eq!(code, "42501", "{sql}: {e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_files_cannot_be_read_or_written() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (a INT); INSERT INTO t VALUES (1)").await;
    let out = std::env::temp_dir().join(format!("duckmv-exposure-{}", std::process::id()));
    let out = out.display();
    for sql in [
        "SELECT * FROM read_csv('/etc/passwd')".to_string(),
        "SELECT * FROM read_text('/proc/self/environ')".into(),
        "SELECT * FROM read_text('/proc/self/cmdline')".into(),
        "SELECT * FROM read_blob('/etc/hostname')".into(),
        "SELECT * FROM glob('/etc/*')".into(),
        "SELECT * FROM '/etc/passwd'".into(),
        "SELECT * FROM read_json_auto('/etc/hosts')".into(),
        "SELECT * FROM sniff_csv('/etc/passwd')".into(),
        "COPY t FROM '/etc/passwd'".into(),
        format!("COPY (SELECT 1) TO '{out}.csv'"),
        format!("COPY t TO '{out}.json' (FORMAT json)"),
        format!("COPY t TO '{out}.parquet' (FORMAT parquet)"),
        format!("EXPORT DATABASE '{out}-export'"),
        format!("ATTACH '{out}.duckdb' AS other"),
        format!("SET log_query_path = '{out}.log'"),
        format!("PRAGMA profiling_output = '{out}.prof'"),
        "INSTALL httpfs".into(),
        "LOAD httpfs".into(),
    ] {
        let r = c.batch_execute(&sql).await;
        assert!(r.is_err(), "{sql} was allowed");
        assert!(
            c.simple_query("SELECT 1").await.is_ok(),
            "session lost after {sql}"
        );
    }
    for ext in ["csv", "json", "parquet", "duckdb", "log", "prof"] {
        let p = format!("{out}.{ext}");
        assert!(!std::path::Path::new(&p).exists(), "{p} was written");
    }
    assert!(!std::path::Path::new(&format!("{out}-export")).exists());
    // The client's own file transfers still work.
    let mut copied = Vec::new();
    let stream = c.copy_out("COPY t TO STDOUT").await.unwrap();
    futures::pin_mut!(stream);
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        copied.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(copied, b"1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_changes_only_its_own_settings() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    for sql in [
        "SET threads = 1",
        "SET memory_limit = '100MB'",
        "SET checkpoint_threshold = '1KB'",
        "SET GLOBAL default_order = 'desc'",
        "SET temp_directory = '/tmp/elsewhere'",
        "SET lock_configuration = true",
        "SET autoinstall_known_extensions = true",
        "SET custom_extension_repository = 'http://example.com'",
        "PRAGMA threads = 1",
        "RESET threads",
    ] {
        refused(&a, sql).await;
    }
    let threads = "SELECT current_setting('threads')";
    let before = text_rows(&b, threads).await;
    // A setting a session may change applies to it alone.
    exec(&a, "SET default_null_order = 'nulls_first'").await;
    exec(&a, "PRAGMA default_order = 'desc'").await;
    let order = "SELECT x FROM (VALUES (1), (NULL), (2)) v(x) ORDER BY x";
    assert_eq!(
        text_rows(&a, order).await,
        [["NULL"], ["2"], ["1"]].map(|r| r.map(String::from))
    );
    assert_eq!(
        text_rows(&b, order).await,
        [["1"], ["2"], ["NULL"]].map(|r| r.map(String::from))
    );
    assert_eq!(text_rows(&b, threads).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duckmv_s_own_objects_cannot_be_changed() {
    let server = TestServer::start();
    let c = server.client().await;
    let q = "SELECT k, sum(v) AS s FROM src GROUP BY k";
    exec(
        &c,
        &format!(
            "CREATE TABLE src (k INT, v INT); INSERT INTO src VALUES (1, 1), (2, 2);
             CREATE MATERIALIZED VIEW mv2 AS {q}"
        ),
    )
    .await;
    let id = text_rows(&c, "SELECT id FROM _duckmv.views WHERE name = 'mv2'").await[0][0].clone();
    let delta = text_rows(
        &c,
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = '_duckmv' AND table_name LIKE 'log\\_%' ESCAPE '\\' LIMIT 1",
    )
    .await[0][0]
        .clone();
    let trigger =
        text_rows(&c, "SELECT trigger_name FROM duckdb_triggers() LIMIT 1").await[0][0].clone();
    for sql in [
        format!("PREPARE p AS INSERT INTO _duckmv.{delta} SELECT * FROM _duckmv.{delta}"),
        format!("INSERT INTO _duckmv.{delta} SELECT * FROM _duckmv.{delta}"),
        "USE _duckmv".into(),
        "SET schema = '_duckmv'".into(),
        format!("DROP TRIGGER {trigger} ON src"),
        "CREATE OR REPLACE VIEW duckmv.views AS SELECT 1 AS x".into(),
        "DROP VIEW duckmv.views".into(),
        "DROP SCHEMA _duckmv CASCADE".into(),
        format!("UPDATE _duckmv.views SET populated = false WHERE id = {id}"),
        format!("WITH x AS (DELETE FROM _duckmv.{delta} RETURNING *) SELECT count(*) FROM x"),
        "ALTER TABLE _duckmv.views RENAME TO gone".into(),
    ] {
        refused(&c, &sql).await;
    }
    // The materialized view cannot be swapped for a plain one.
    expect_sqlstate(
        c.batch_execute("CREATE OR REPLACE VIEW mv2 AS SELECT 1 AS k, 2 AS s")
            .await,
        "42809",
    );
    expect_sqlstate(
        c.batch_execute("CREATE OR REPLACE TABLE mv2 AS SELECT 1 AS k")
            .await,
        "42809",
    );
    // Capture still works and the view is exact.
    exec(
        &c,
        "INSERT INTO src VALUES (1, 10), (3, 3); DELETE FROM src WHERE k = 2",
    )
    .await;
    exec(&c, "REFRESH MATERIALIZED VIEW mv2").await;
    assert_eq!(bag_difference(&c, "mv2", q).await, 0);
    // Reading duckmv's catalog is fine.
    assert!(!text_rows(&c, "SELECT * FROM duckmv.views").await.is_empty());
}

/// With --allow-file-access, superusers may read files; other users may not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_access_is_for_superusers_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.csv");
    std::fs::write(&file, "a,b\n1,2\n").unwrap();
    let server = TestServer::start_with_args(&["--allow-file-access", "--superuser", "admin"]);
    let connect = |user: &'static str| {
        let conn = format!(
            "host=127.0.0.1 port={} user={user} dbname=test connect_timeout=10",
            server.port
        );
        async move {
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
        }
    };
    let read = format!("SELECT b FROM read_csv('{}')", file.display());
    let admin = connect("admin").await;
    assert_eq!(text_rows(&admin, &read).await, [["2"]]);
    let user = connect("someone").await;
    refused(&user, &read).await;
    refused(&user, &format!("SELECT * FROM '{}'", file.display())).await;
    refused(&user, "SET threads = 2").await;
    exec(&admin, "SET threads = 2").await;
}
