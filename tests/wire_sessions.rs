//! The server process: configuration by flags and environment, `--help`,
//! `:memory:`, and graceful shutdown on SIGTERM/SIGINT that keeps committed
//! data across a restart.

mod common;

use std::process::Command;

use common::TestServer;

#[test]
fn help_lists_the_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_duckmv"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["--listen", "--database", "DUCKMV_LISTEN", "DUCKMV_DATABASE"] {
        assert!(text.contains(word), "--help should mention {word}:\n{text}");
    }
}

#[test]
fn environment_variables_configure_listen_and_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from_env.duckdb");
    let server = TestServer::start_with_env(&db);
    assert_ne!(
        server.port, 5433,
        "DUCKMV_LISTEN=127.0.0.1:0 should pick a free port"
    );
    server.psql_ok(&["-c", "create table t(a int)"], "");
    server.terminate();
    assert!(db.exists(), "DUCKMV_DATABASE should name the database file");
}

#[test]
fn memory_database_is_allowed() {
    let server = TestServer::start_with(":memory:");
    let out = server.psql_ok(
        &[
            "-Atq",
            "-c",
            "create table t(a int); insert into t values (7); select a from t",
        ],
        "",
    );
    assert_eq!(out, "7\n");
    server.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_data_survives_sigterm_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("restart.duckdb");

    let server = TestServer::start_with(&db);
    assert!(db.exists(), "the database file is created when absent");
    let c = server.client().await;
    c.batch_execute(
        "create table t(id integer, name text); \
         insert into t select i, 'row ' || i from range(1000) r(i)",
    )
    .await
    .unwrap();
    // A transaction still open at the signal must not survive.
    let open = server.client().await;
    open.batch_execute("begin; insert into t values (-1, 'uncommitted')")
        .await
        .unwrap();
    server.terminate();

    // Shutdown checkpointed: nothing is left to replay from the WAL.
    let wal = dir.path().join("restart.duckdb.wal");
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(
        wal_len, 0,
        "the WAL should be checkpointed away at shutdown"
    );

    let server = TestServer::start_with(&db);
    let c = server.client().await;
    let row = c
        .query_one("select count(*), min(id), max(name) from t", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1000);
    assert_eq!(row.get::<_, i32>(1), 0);
    assert_eq!(row.get::<_, String>(2), "row 999");
    server.terminate();
}

#[test]
fn sigint_also_shuts_down_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sigint.duckdb");
    let server = TestServer::start_with(&db);
    server.psql_ok(
        &["-c", "create table t(a int); insert into t values (1), (2)"],
        "",
    );
    server.stop(libc::SIGINT);

    let server = TestServer::start_with(&db);
    assert_eq!(
        server.psql_ok(&["-At", "-c", "select sum(a) from t"], ""),
        "3\n"
    );
}

#[test]
fn shutdown_closes_idle_connections() {
    let server = TestServer::start();
    // An idle session: a shutdown that waited for it would never end.
    let mut conn = server.raw();
    server.terminate();
    assert!(
        conn.closed_by_server(),
        "open sessions are closed at shutdown"
    );
}
