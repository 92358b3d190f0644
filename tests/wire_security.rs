//! Authentication, TLS, cancel requests and statement_timeout, through real
//! clients.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;

async fn connect(
    server: &TestServer,
    user: &str,
    password: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let conn = format!(
        "host=127.0.0.1 port={} user={user} password={password} dbname=test connect_timeout=10",
        server.port
    );
    let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_are_checked_with_each_method() {
    for method in ["scram-sha-256", "md5", "password"] {
        let server = TestServer::start_with_args_env(
            &["--auth", method],
            &[("DUCKMV_USERS", "alice:s3cret,bob:x:y")],
        );
        let c = connect(&server, "alice", "s3cret")
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        let v: i32 = c.query_one("select 41 + 1", &[]).await.unwrap().get(0);
        assert_eq!(v, 42);
        let wrong = connect(&server, "alice", "nope").await;
        assert!(wrong.is_err(), "{method}: a wrong password was accepted");
        let unknown = connect(&server, "mallory", "s3cret").await;
        assert!(unknown.is_err(), "{method}: an unknown user was accepted");
    }
}

#[test]
fn remote_listening_without_users_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duckmv"))
        .args(["--listen", "0.0.0.0:0", "--database", ":memory:"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without authentication"));
}

#[test]
fn tls_with_sslmode_require_and_tls_only() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed_cert(dir.path());
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let server = TestServer::start_with_args(&["--tls-cert", cert, "--tls-key", key, "--tls-only"]);
    let out = server.psql_ok(
        &[
            "-d",
            "dbname=test sslmode=require",
            "-c",
            "\\conninfo",
            "-c",
            "select 42",
        ],
        "",
    );
    assert!(out.contains("SSL connection"), "psql: {out}");
    assert!(out.contains("42"));
    let plain = server.psql(&["-d", "dbname=test sslmode=disable", "-c", "select 1"], "");
    assert!(!plain.status.success());
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("TLS"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_interrupts_the_running_query_and_the_session_survives() {
    let server = TestServer::start();
    let c = server.client().await;
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let start = Instant::now();
    let err = c
        .simple_query("select count(*) from range(100000000000)")
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("57014"), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(20));
    canceller.await.unwrap();
    let v: i64 = c.query_one("select 7::bigint", &[]).await.unwrap().get(0);
    assert_eq!(v, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_long_statements() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("SET statement_timeout = '300ms'")
        .await
        .unwrap();
    let shown = c.simple_query("SHOW statement_timeout").await.unwrap();
    assert!(
        matches!(&shown[1], tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("300ms"))
    );
    let err = c
        .simple_query("select count(*) from range(100000000000)")
        .await
        .unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(db.code().code(), "57014");
    assert!(
        db.message().contains("statement timeout"),
        "{}",
        db.message()
    );
    c.batch_execute("RESET statement_timeout").await.unwrap();
    let v: i32 = c.query_one("select 1", &[]).await.unwrap().get(0);
    assert_eq!(v, 1);
}
