//! LISTEN / NOTIFY / UNLISTEN and pg_notify between sessions, as PostgreSQL clients use them:
//! delivery at commit only, to other sessions and the sender, before ReadyForQuery and while
//! the connection is idle; and the notifications a REFRESH that changed a view sends.

mod common;

use std::time::Duration;

use common::pgraw::{self, Msg};
use common::TestServer;
use futures::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_postgres::{AsyncMessage, Client, NoTls, SimpleQueryMessage};

/// How long a notification may take to arrive.
const ARRIVES: Duration = Duration::from_secs(10);
/// How long to wait before deciding that no notification comes.
const QUIET: Duration = Duration::from_millis(500);

/// (channel, payload, sender's pid)
type Note = (String, String, i32);

/// A client whose notifications arrive on a channel: tokio-postgres hands them over only
/// through `Connection::poll_message`.
async fn listener(server: &TestServer) -> (Client, UnboundedReceiver<Note>) {
    let (client, mut conn) = tokio_postgres::connect(&server.conn_str(), NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", server.log()));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    let note = (n.channel().into(), n.payload().into(), n.process_id());
                    let _ = tx.send(note);
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("connection ended: {e}");
                    break;
                }
            }
        }
    });
    (client, rx)
}

async fn next(rx: &mut UnboundedReceiver<Note>) -> Note {
    tokio::time::timeout(ARRIVES, rx.recv())
        .await
        .expect("a notification within the timeout")
        .expect("the connection is open")
}

async fn nothing(rx: &mut UnboundedReceiver<Note>) {
    if let Ok(Some(n)) = tokio::time::timeout(QUIET, rx.recv()).await {
        panic!("no notification expected, got {n:?}");
    }
}

async fn pid(c: &Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

fn note(channel: &str, payload: &str, pid: i32) -> Note {
    (channel.into(), payload.into(), pid)
}

async fn code(c: &Client, sql: &str) -> String {
    let e = c.batch_execute(sql).await.expect_err(sql);
    e.code().map(|c| c.code().to_string()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_reaches_listeners_at_commit_with_the_sender_pid() {
    let server = TestServer::start();
    let (a, mut ra) = listener(&server).await;
    let (b, _rb) = listener(&server).await;
    let bpid = pid(&b).await;
    assert_ne!(bpid, 0, "pg_backend_pid() is the connection's pid");
    a.batch_execute("LISTEN events").await.unwrap();

    // Autocommit, both protocols.
    b.batch_execute("NOTIFY events, 'hello'").await.unwrap();
    assert_eq!(next(&mut ra).await, note("events", "hello", bpid));
    b.execute("NOTIFY Events", &[]).await.unwrap();
    assert_eq!(next(&mut ra).await, note("events", "", bpid));

    // A block: delivered at COMMIT, not before; duplicates folded, order kept.
    b.batch_execute("BEGIN; NOTIFY events, 'd'; NOTIFY events, 'x'")
        .await
        .unwrap();
    b.batch_execute("NOTIFY events, 'd'").await.unwrap();
    nothing(&mut ra).await;
    b.batch_execute("COMMIT").await.unwrap();
    assert_eq!(next(&mut ra).await, note("events", "d", bpid));
    assert_eq!(next(&mut ra).await, note("events", "x", bpid));
    nothing(&mut ra).await;

    // ROLLBACK, and an error that aborts the block (or the implicit transaction), drop them.
    b.batch_execute("BEGIN; NOTIFY events, 'rolled back'; ROLLBACK")
        .await
        .unwrap();
    b.batch_execute("BEGIN; NOTIFY events, 'failed'")
        .await
        .unwrap();
    assert_eq!(code(&b, "SELECT * FROM no_such_table").await, "42P01");
    b.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        code(&b, "NOTIFY events, 'implicit'; SELECT * FROM no_such_table").await,
        "42P01"
    );
    nothing(&mut ra).await;

    // The session goes on.
    b.batch_execute("NOTIFY events, 'after'").await.unwrap();
    assert_eq!(next(&mut ra).await, note("events", "after", bpid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_are_identifiers_and_unlisten_stops_delivery() {
    let server = TestServer::start();
    let (a, mut ra) = listener(&server).await;
    let b = server.client().await;
    let bpid = pid(&b).await;
    a.batch_execute("LISTEN MixedCase; LISTEN \"Quoted.Dot\"; LISTEN other")
        .await
        .unwrap();
    b.batch_execute(
        "NOTIFY \"MixedCase\", 'not folded'; NOTIFY mixedcase, '1'; \
         NOTIFY \"Quoted.Dot\", '2'; NOTIFY quoted.dot, 'no'",
    )
    .await
    .unwrap_err();
    // `quoted.dot` is a syntax error: the whole query string was one transaction, undone.
    nothing(&mut ra).await;
    b.batch_execute(
        "NOTIFY \"MixedCase\", 'not folded'; NOTIFY mixedcase, '1'; NOTIFY \"Quoted.Dot\", '2'",
    )
    .await
    .unwrap();
    assert_eq!(next(&mut ra).await, note("mixedcase", "1", bpid));
    assert_eq!(next(&mut ra).await, note("Quoted.Dot", "2", bpid));

    a.batch_execute("UNLISTEN mixedcase").await.unwrap();
    b.batch_execute("NOTIFY mixedcase, '3'; NOTIFY other, '4'")
        .await
        .unwrap();
    assert_eq!(next(&mut ra).await, note("other", "4", bpid));
    a.batch_execute("UNLISTEN *").await.unwrap();
    b.batch_execute("NOTIFY other, '5'; NOTIFY \"Quoted.Dot\", '6'")
        .await
        .unwrap();
    nothing(&mut ra).await;

    // DISCARD ALL includes UNLISTEN *.
    a.batch_execute("LISTEN other").await.unwrap();
    a.batch_execute("DISCARD ALL").await.unwrap();
    b.batch_execute("NOTIFY other, '7'").await.unwrap();
    nothing(&mut ra).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_notify_takes_literals_and_bound_parameters() {
    let server = TestServer::start();
    let (a, mut ra) = listener(&server).await;
    let b = server.client().await;
    let bpid = pid(&b).await;
    a.batch_execute("LISTEN \"Ch\"").await.unwrap();

    let msgs = b
        .simple_query("SELECT pg_notify('Ch', 'literal')")
        .await
        .unwrap();
    let rows: Vec<_> = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
            _ => None,
        })
        .collect();
    assert_eq!(rows, [Some(String::new())], "one row, as PostgreSQL's void");
    assert_eq!(next(&mut ra).await, note("Ch", "literal", bpid));

    let row = b
        .query_one("SELECT pg_notify($1, $2)", &[&"Ch", &"bound"])
        .await
        .unwrap();
    assert_eq!(row.columns()[0].name(), "pg_notify");
    assert_eq!(next(&mut ra).await, note("Ch", "bound", bpid));

    // A NULL payload is an empty one; inside a block, pg_notify waits for COMMIT too.
    b.batch_execute("BEGIN; SELECT pg_notify('Ch', NULL)")
        .await
        .unwrap();
    nothing(&mut ra).await;
    b.batch_execute("COMMIT").await.unwrap();
    assert_eq!(next(&mut ra).await, note("Ch", "", bpid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_notifications_are_postgresql_errors() {
    let server = TestServer::start();
    let (a, mut ra) = listener(&server).await;
    a.batch_execute("LISTEN c").await.unwrap();
    let b = server.client().await;
    for sql in [
        "LISTEN",
        "LISTEN a b",
        "UNLISTEN",
        "NOTIFY",
        "NOTIFY c, 1",
        "NOTIFY c 'x'",
    ] {
        assert_eq!(code(&b, sql).await, "42601", "{sql}");
    }
    let long = "x".repeat(8000);
    let e = b
        .batch_execute(&format!("NOTIFY c, '{long}'"))
        .await
        .unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "22023");
    assert_eq!(db.message(), "payload string too long");
    assert_eq!(
        code(&b, &format!("SELECT pg_notify('c', '{long}')")).await,
        "22023"
    );
    assert_eq!(code(&b, "SELECT pg_notify('', 'x')").await, "22023");
    nothing(&mut ra).await;
    // Just under the limit is fine, and the session survived all of the above.
    b.batch_execute(&format!("NOTIFY c, '{}'", &long[1..]))
        .await
        .unwrap();
    assert_eq!(next(&mut ra).await.1.len(), 7999);
}

/// Decodes a NotificationResponse body: (channel, payload, pid).
fn notification(m: &Msg) -> Option<Note> {
    let Msg::Other(b'A', body) = m else {
        return None;
    };
    let pid = i32::from_be_bytes(body[..4].try_into().unwrap());
    let mut parts = body[4..].split(|b| *b == 0);
    let mut text = || String::from_utf8(parts.next().unwrap().to_vec()).unwrap();
    Some((text(), text(), pid))
}

/// What the messages are, in order: tags, notifications and ReadyForQuery.
fn outline(msgs: &[Msg]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            Msg::CommandComplete(t) => Some(t.clone()),
            Msg::ReadyForQuery(s) => Some(format!("ready {s}")),
            m => notification(m).map(|(c, p, _)| format!("notify {c} {p}")),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_come_before_ready_for_query_and_never_inside_a_block() {
    let server = TestServer::start();
    let mut raw = server.raw();
    let b = server.client().await;
    // The session's own notification: after its commands, before ReadyForQuery, with the
    // command tags PostgreSQL sends.
    let msgs = raw.simple("LISTEN me; NOTIFY me, 'self'");
    assert_eq!(
        outline(&msgs),
        ["LISTEN", "NOTIFY", "notify me self", "ready I"]
    );
    let msgs = raw.simple("SELECT pg_backend_pid()");
    let own: i32 = pgraw::rows(&msgs)[0][0].as_ref().unwrap().parse().unwrap();
    assert_eq!(
        notification(&raw.simple("NOTIFY me, 'pid'")[1]).unwrap().2,
        own
    );

    // Another session's notification waits while this one is in a block, and comes after
    // COMMIT's tag.
    assert_eq!(outline(&raw.simple("BEGIN")), ["BEGIN", "ready T"]);
    b.batch_execute("NOTIFY me, 'other'").await.unwrap();
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        outline(&raw.simple("COMMIT")),
        ["COMMIT", "notify me other", "ready I"]
    );

    // While idle, it comes by itself, with nothing asked.
    b.batch_execute("NOTIFY me, 'idle'").await.unwrap();
    let m = tokio::task::spawn_blocking(move || (raw.recv(), raw))
        .await
        .unwrap();
    let (msg, mut raw) = m;
    assert_eq!(notification(&msg).map(|n| n.1), Some("idle".to_string()));
    assert_eq!(outline(&raw.simple("UNLISTEN *")), ["UNLISTEN", "ready I"]);
}

/// (channel, view, rows) of a refresh notification.
fn refresh_note(n: &Note) -> (String, String, u64) {
    let v: serde_json::Value = serde_json::from_str(&n.1).expect("a JSON payload");
    let view = v["view"].as_str().expect("view").to_string();
    (n.0.clone(), view, v["rows"].as_u64().expect("rows"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_that_changed_the_view_notifies_both_refresh_channels() {
    let server = TestServer::start();
    let (a, mut ra) = listener(&server).await;
    let b = server.client().await;
    b.batch_execute(
        "CREATE TABLE sales (region TEXT, amount INT); \
         CREATE MATERIALIZED VIEW totals AS \
             SELECT region, sum(amount) AS total FROM sales GROUP BY region",
    )
    .await
    .unwrap();
    a.batch_execute("LISTEN duckmv_refresh; LISTEN \"duckmv_refresh.totals\"")
        .await
        .unwrap();

    b.batch_execute("INSERT INTO sales VALUES ('n', 10), ('n', 5), ('s', 7)")
        .await
        .unwrap();
    nothing(&mut ra).await;
    b.batch_execute("REFRESH MATERIALIZED VIEW totals")
        .await
        .unwrap();
    let first = refresh_note(&next(&mut ra).await);
    let second = refresh_note(&next(&mut ra).await);
    assert_eq!(first, ("duckmv_refresh".into(), "totals".into(), 2));
    assert_eq!(second, ("duckmv_refresh.totals".into(), "totals".into(), 2));
    // They come with the view's new contents committed.
    let total: i64 = a
        .query_one("SELECT sum(total)::BIGINT FROM totals", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, 22);

    // Nothing pending: no notification.
    b.batch_execute("REFRESH MATERIALIZED VIEW totals")
        .await
        .unwrap();
    nothing(&mut ra).await;

    // In a block they come at COMMIT, and not at all after ROLLBACK.
    b.batch_execute("BEGIN; INSERT INTO sales VALUES ('e', 1); REFRESH MATERIALIZED VIEW totals")
        .await
        .unwrap();
    nothing(&mut ra).await;
    b.batch_execute("COMMIT").await.unwrap();
    assert_eq!(refresh_note(&next(&mut ra).await).2, 1);
    assert_eq!(refresh_note(&next(&mut ra).await).2, 1);
    b.batch_execute(
        "BEGIN; INSERT INTO sales VALUES ('w', 1); REFRESH MATERIALIZED VIEW totals; ROLLBACK",
    )
    .await
    .unwrap();
    nothing(&mut ra).await;

    // A listener on one view's channel only hears that view.
    a.batch_execute("UNLISTEN duckmv_refresh").await.unwrap();
    b.batch_execute(
        "CREATE MATERIALIZED VIEW counts AS SELECT region, count(*) AS n FROM sales GROUP BY region; \
         INSERT INTO sales VALUES ('n', 1); REFRESH MATERIALIZED VIEW counts",
    )
    .await
    .unwrap();
    nothing(&mut ra).await;
    b.batch_execute("REFRESH MATERIALIZED VIEW totals")
        .await
        .unwrap();
    let n = refresh_note(&next(&mut ra).await);
    assert_eq!(n, ("duckmv_refresh.totals".into(), "totals".into(), 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_disconnects_does_not_disturb_the_others() {
    let server = TestServer::start();
    let (gone, _rg) = listener(&server).await;
    gone.batch_execute("LISTEN c").await.unwrap();
    let (a, mut ra) = listener(&server).await;
    a.batch_execute("LISTEN c").await.unwrap();
    drop(gone);
    let b = server.client().await;
    let bpid = pid(&b).await;
    for i in 0..3 {
        b.batch_execute(&format!("NOTIFY c, '{i}'")).await.unwrap();
        assert_eq!(next(&mut ra).await, note("c", &i.to_string(), bpid));
    }
}
