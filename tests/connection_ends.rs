//! However a connection ends, nothing it held or registered outlives it.
//!
//! A client that disconnected inside a transaction that wrote (or tried to write) a table a view
//! reads used to leave its writer registration behind: every later CREATE MATERIALIZED VIEW over
//! that table waited forever, and so did every writer queued behind it. Each test below ends a
//! writer's connection one way — Terminate, a dropped socket, a reset, a TLS session dropped, a
//! cancelled or timed-out wait — and then a CREATE MATERIALIZED VIEW and a writer must go through
//! within seconds, and the views must equal their queries.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{bag_difference, exec, TestServer};
use tokio_postgres::Client;

/// How long a statement may take that no open transaction holds up.
const PROMPT: Duration = Duration::from_secs(10);

fn startup(user: &str) -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec();
    for (k, v) in [("user", user), ("database", "test")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

fn query(sql: &str) -> Vec<u8> {
    let mut m = vec![b'Q'];
    m.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    m.extend_from_slice(sql.as_bytes());
    m.push(0);
    m
}

/// A raw connection that has run `sql` (waiting a moment for it to be processed).
fn raw_writer(server: &TestServer, sql: &str) -> TcpStream {
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(&startup("test")).unwrap();
    s.write_all(&query(sql)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s
}

/// CREATE MATERIALIZED VIEW over `t` and a write to `t` both finish promptly, and the view is
/// exact.
async fn nothing_waits(c: &Client, view: &str) {
    let q = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g";
    let create = format!("CREATE MATERIALIZED VIEW {view} AS {q}");
    tokio::time::timeout(PROMPT, c.batch_execute(&create))
        .await
        .unwrap_or_else(|_| panic!("CREATE MATERIALIZED VIEW {view} waited for a gone connection"))
        .unwrap();
    tokio::time::timeout(PROMPT, c.batch_execute("INSERT INTO t VALUES (9, 9)"))
        .await
        .expect("a writer waited for a gone connection")
        .unwrap();
    exec(c, &format!("REFRESH MATERIALIZED VIEW {view}")).await;
    assert_eq!(bag_difference(c, view, q).await, 0, "{view}");
}

async fn setup(server: &TestServer) -> Client {
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (g INT, v INT); INSERT INTO t VALUES (1, 1);
         CREATE MATERIALIZED VIEW base AS SELECT g, max(v) AS m FROM t GROUP BY g",
    )
    .await;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_terminates_releases_its_tables() {
    let server = TestServer::start();
    let c = setup(&server).await;
    let mut s = raw_writer(&server, "BEGIN; INSERT INTO t VALUES (2, 2)");
    s.write_all(&[b'X', 0, 0, 0, 4]).unwrap();
    drop(s);
    nothing_waits(&c, "after_terminate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_socket_closes_releases_its_tables() {
    let server = TestServer::start();
    let c = setup(&server).await;
    drop(raw_writer(&server, "BEGIN; INSERT INTO t VALUES (2, 2)"));
    nothing_waits(&c, "after_eof").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_connection_resets_releases_its_tables() {
    let server = TestServer::start();
    let c = setup(&server).await;
    let s = raw_writer(&server, "BEGIN; INSERT INTO t VALUES (2, 2)");
    // SO_LINGER 0: closing sends a reset instead of a FIN.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on an open socket we own, with a correctly sized value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as u32,
        )
    };
    drop(s);
    nothing_waits(&c, "after_reset").await;
}

/// The writer of a table no view reads yet: CREATE waits for it (its rows are in no delta), and
/// must stop waiting when it goes away — also when it goes away while CREATE is already waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_waiting_for_a_writer_goes_on_when_the_writer_disconnects() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (g INT, v INT); INSERT INTO t VALUES (1, 1)",
    )
    .await;
    let s = raw_writer(&server, "BEGIN; INSERT INTO t VALUES (2, 2)");
    let q = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g";
    let creating = tokio::spawn(async move {
        c.batch_execute(&format!("CREATE MATERIALIZED VIEW w AS {q}"))
            .await
            .unwrap();
        c
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !creating.is_finished(),
        "CREATE must wait for the open writer"
    );
    drop(s);
    let c = tokio::time::timeout(PROMPT, creating)
        .await
        .expect("CREATE went on waiting after the writer disconnected")
        .unwrap();
    // Every later writer goes through too.
    tokio::time::timeout(PROMPT, c.batch_execute("INSERT INTO t VALUES (3, 3)"))
        .await
        .expect("a writer waited")
        .unwrap();
    exec(&c, "REFRESH MATERIALIZED VIEW w").await;
    assert_eq!(bag_difference(&c, "w", q).await, 0);
}

/// A writer queued behind another's capture lock, whose client goes away while it waits, leaves
/// no registration behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_disconnects_while_waiting_for_the_lock_releases_everything() {
    let server = TestServer::start();
    let c = setup(&server).await;
    let holder = server.client().await;
    exec(&holder, "BEGIN; INSERT INTO t VALUES (5, 5)").await;
    let waiter = raw_writer(&server, "BEGIN; INSERT INTO t VALUES (6, 6)");
    drop(waiter);
    tokio::time::sleep(Duration::from_millis(300)).await;
    exec(&holder, "COMMIT").await;
    nothing_waits(&c, "after_waiter_left").await;
}

/// Cancel and statement_timeout end a CREATE's wait for writers (57014), and what the cancelled
/// statement registered is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_create_honours_cancel_and_statement_timeout() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (g INT, v INT)").await;
    let w = server.client().await;
    exec(&w, "BEGIN; INSERT INTO t VALUES (1, 1)").await;
    exec(&c, "SET statement_timeout = '300ms'").await;
    let e = c
        .batch_execute("CREATE MATERIALIZED VIEW x AS SELECT g FROM t")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|s| s.code()), Some("57014"), "{e}");
    exec(&c, "RESET statement_timeout").await;
    let token = c.cancel_token();
    let creating = tokio::spawn(async move {
        let r = c
            .batch_execute("CREATE MATERIALIZED VIEW x AS SELECT g FROM t")
            .await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    let (c, r) = tokio::time::timeout(PROMPT, creating)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.unwrap_err().code().map(|s| s.code()), Some("57014"));
    exec(&w, "COMMIT").await;
    nothing_waits(&c, "after_cancel").await;
}

/// A TLS session dropped mid-transaction releases its tables like a plain one.
#[test]
fn a_tls_writer_that_drops_releases_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed_cert(dir.path());
    let server = TestServer::start_with_args(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    server.psql_ok(
        &["-q", "-c", "CREATE TABLE t (g INT, v INT); CREATE MATERIALIZED VIEW base AS SELECT g, max(v) AS m FROM t GROUP BY g"],
        "",
    );
    // psql over TLS opens a transaction, writes, and is killed.
    let mut child = std::process::Command::new("psql")
        .args([
            "-X",
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "test",
            "-d",
            "test",
        ])
        .env("PGSSLMODE", "require")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"BEGIN;\nINSERT INTO t VALUES (2, 2);\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    child.kill().unwrap();
    let _ = child.wait();
    let out = server.psql_ok(
        &[
            "-At",
            "-c",
            "SET statement_timeout = '10s'",
            "-c",
            "CREATE MATERIALIZED VIEW after_tls AS SELECT g, count(*) AS n FROM t GROUP BY g",
            "-c",
            "INSERT INTO t VALUES (3, 3)",
            "-c",
            "REFRESH MATERIALIZED VIEW after_tls",
            "-c",
            "SELECT n FROM after_tls WHERE g = 3",
        ],
        "",
    );
    assert!(out.ends_with("1\n"), "{out}");
}
