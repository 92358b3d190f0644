//! Protocol v3 at the message level, through the raw client: what psql and
//! drivers rely on but do not show (status bytes, exact tags, Flush, text
//! parameters, portals, Close, Terminate, SSLRequest).

mod common;

use std::time::Duration;

use common::pgraw::{errors, ready_status, rows, tags, Msg, RawConn};
use common::TestServer;

const INT4: u32 = 23;

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

#[test]
fn harness_parses_listening_line() {
    use common::{parse_listening, strip_ansi};
    let a: std::net::SocketAddr = "127.0.0.1:40123".parse().unwrap();
    assert_eq!(
        parse_listening("INFO duckmv: listening on 127.0.0.1:40123"),
        Some(a)
    );
    assert_eq!(
        parse_listening("listening on addr=127.0.0.1:40123 db=x"),
        Some(a)
    );
    assert_eq!(parse_listening("listening on \"127.0.0.1:40123\""), Some(a));
    assert_eq!(parse_listening("starting"), None);
    assert_eq!(
        strip_ansi("\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m listening on 127.0.0.1:1"),
        "2026  INFO listening on 127.0.0.1:1"
    );
}

#[test]
fn ssl_request_is_refused_and_plain_startup_continues() {
    let server = TestServer::start();
    let (answer, stream) = RawConn::ssl_request(server.addr);
    assert_eq!(
        answer, b'N',
        "SSLRequest must be refused with 'N' until TLS exists"
    );
    let mut conn = RawConn::startup(stream);
    assert_eq!(rows(&conn.simple("select 42")), vec![vec![s("42")]]);
}

#[test]
fn simple_query_returns_every_statement_result_in_order() {
    let server = TestServer::start();
    let mut conn = server.raw();
    let msgs = conn.simple("select 1 as a; select 'two' as b, null as c");
    let descs: Vec<Vec<String>> = msgs
        .iter()
        .filter_map(|m| match m {
            Msg::RowDescription(f) => Some(f.iter().map(|f| f.name.clone()).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(
        descs,
        vec![vec!["a".to_owned()], vec!["b".to_owned(), "c".to_owned()]]
    );
    assert_eq!(rows(&msgs), vec![vec![s("1")], vec![s("two"), None]]);
    assert_eq!(tags(&msgs), vec!["SELECT 1", "SELECT 1"]);
    assert_eq!(ready_status(&msgs), 'I');
}

#[test]
fn empty_query_answers_empty_query_response() {
    let server = TestServer::start();
    let mut conn = server.raw();
    let msgs = conn.simple("");
    assert_eq!(msgs, vec![Msg::EmptyQuery, Msg::ReadyForQuery('I')]);
    // The session is still usable.
    assert_eq!(rows(&conn.simple("select 1")), vec![vec![s("1")]]);
}

#[test]
fn command_tags_are_written_as_postgres_writes_them() {
    let server = TestServer::start();
    let mut conn = server.raw();
    let cases = [
        ("create table t(a int, b text)", "CREATE TABLE"),
        ("insert into t values (1,'x'),(2,'y'),(3,'z')", "INSERT 0 3"),
        ("update t set b = 'w' where a >= 2", "UPDATE 2"),
        ("delete from t where a = 1", "DELETE 1"),
        (
            "insert into t select i, 'r' from range(10, 13) r(i)",
            "INSERT 0 3",
        ),
        ("select * from t", "SELECT 5"),
        ("select * from t where false", "SELECT 0"),
        ("begin", "BEGIN"),
        ("commit", "COMMIT"),
        ("start transaction", "START TRANSACTION"),
        ("rollback", "ROLLBACK"),
        ("begin", "BEGIN"),
        ("end", "COMMIT"),
        ("create view v as select a from t", "CREATE VIEW"),
        ("drop view v", "DROP VIEW"),
        ("drop table t", "DROP TABLE"),
    ];
    for (sql, tag) in cases {
        let msgs = conn.simple(sql);
        assert_eq!(errors(&msgs), Vec::<String>::new(), "{sql}: {msgs:?}");
        assert_eq!(tags(&msgs), vec![tag.to_owned()], "command tag of `{sql}`");
    }
}

#[test]
fn ready_for_query_status_tracks_the_transaction() {
    let server = TestServer::start();
    let mut conn = server.raw();
    assert_eq!(ready_status(&conn.simple("create table t(a int)")), 'I');
    assert_eq!(ready_status(&conn.simple("begin")), 'T');
    assert_eq!(ready_status(&conn.simple("insert into t values (1)")), 'T');

    let msgs = conn.simple("select * from no_such_table");
    assert_eq!(errors(&msgs), vec!["42P01"]);
    assert_eq!(ready_status(&msgs), 'E');

    // Every statement of a failed transaction is refused with 25P02...
    for sql in ["select 1", "insert into t values (2)"] {
        let msgs = conn.simple(sql);
        assert_eq!(
            errors(&msgs),
            vec!["25P02"],
            "{sql} in a failed transaction"
        );
        assert_eq!(ready_status(&msgs), 'E');
    }
    // ...and COMMIT of a failed transaction answers ROLLBACK.
    let msgs = conn.simple("commit");
    assert_eq!(errors(&msgs), Vec::<String>::new());
    assert_eq!(tags(&msgs), vec!["ROLLBACK"]);
    assert_eq!(ready_status(&msgs), 'I');
    assert_eq!(
        rows(&conn.simple("select count(*) from t")),
        vec![vec![s("0")]]
    );

    // ROLLBACK also leaves the failed state.
    conn.simple("begin");
    conn.simple("select 1/'x'::int");
    let msgs = conn.simple("rollback");
    assert_eq!(tags(&msgs), vec!["ROLLBACK"]);
    assert_eq!(ready_status(&msgs), 'I');
}

#[test]
fn failing_statement_rolls_back_its_whole_message() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.simple("create table t(a int)");
    let msgs = conn.simple(
        "insert into t values (1); insert into no_such_table values (1); insert into t values (2)",
    );
    // The first statement completed, the second failed, the third never ran.
    assert_eq!(tags(&msgs), vec!["INSERT 0 1"]);
    assert_eq!(errors(&msgs), vec!["42P01"]);
    assert_eq!(ready_status(&msgs), 'I');
    // The implicit transaction of the message was rolled back.
    assert_eq!(
        rows(&conn.simple("select count(*) from t")),
        vec![vec![s("0")]]
    );
}

#[test]
fn message_with_explicit_commit_keeps_the_committed_part() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.simple("create table t(a int)");
    let msgs = conn.simple(
        "begin; insert into t values (1); commit; insert into t values (2); \
         select * from no_such_table; insert into t values (3)",
    );
    assert_eq!(
        tags(&msgs),
        vec!["BEGIN", "INSERT 0 1", "COMMIT", "INSERT 0 1"]
    );
    assert_eq!(errors(&msgs), vec!["42P01"]);
    assert_eq!(ready_status(&msgs), 'I');
    // 1 was committed explicitly; 2 belonged to the failed implicit
    // transaction; 3 was skipped.
    assert_eq!(
        rows(&conn.simple("select a from t order by a")),
        vec![vec![s("1")]]
    );
}

#[test]
fn message_that_opens_a_transaction_leaves_it_open() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.simple("create table t(a int)");
    let msgs = conn.simple("begin; insert into t values (1)");
    assert_eq!(ready_status(&msgs), 'T');
    let msgs = conn.simple("rollback");
    assert_eq!(ready_status(&msgs), 'I');
    assert_eq!(
        rows(&conn.simple("select count(*) from t")),
        vec![vec![s("0")]]
    );
}

#[test]
fn extended_query_accepts_text_parameters() {
    let server = TestServer::start();
    let mut conn = server.raw();
    // Unknown parameter type (0): the server infers int4 from the cast.
    conn.parse("", "select $1::integer + 1 as answer", &[0]);
    conn.bind("", "", 0, &[Some(b"41")], 0);
    conn.describe(b'P', "");
    conn.execute("", 0);
    conn.sync();
    let msgs = conn.until_ready();
    assert_eq!(msgs[0], Msg::ParseComplete);
    assert_eq!(msgs[1], Msg::BindComplete);
    match &msgs[2] {
        Msg::RowDescription(f) => {
            assert_eq!(f[0].name, "answer");
            assert_eq!(f[0].type_oid, INT4);
            assert_eq!(f[0].format, 0);
        }
        other => panic!("expected RowDescription, got {other:?}"),
    }
    assert_eq!(rows(&msgs), vec![vec![s("42")]]);
    assert_eq!(tags(&msgs), vec!["SELECT 1"]);
    assert_eq!(ready_status(&msgs), 'I');

    // Declared type, text parameters, binary result.
    conn.parse("", "select ($1 * 2)::integer, $2::text", &[INT4, 25]);
    conn.bind("", "", 0, &[Some(b"21"), None], 1);
    conn.execute("", 0);
    conn.sync();
    let msgs = conn.until_ready();
    let row = msgs
        .iter()
        .find_map(|m| match m {
            Msg::DataRow(v) => Some(v.clone()),
            _ => None,
        })
        .expect("a data row");
    assert_eq!(row[0].as_deref(), Some(&42i32.to_be_bytes()[..]));
    assert_eq!(row[1], None, "NULL parameter comes back as NULL");
}

#[test]
fn extended_query_accepts_binary_parameters() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.parse("", "select $1 + 1", &[INT4]);
    conn.bind("", "", 1, &[Some(&41i32.to_be_bytes())], 0);
    conn.execute("", 0);
    conn.sync();
    assert_eq!(rows(&conn.until_ready()), vec![vec![s("42")]]);
}

#[test]
fn named_statement_with_flush_describe_and_close() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.simple("create table t(a int, b text)");
    conn.simple("insert into t values (1, 'one'), (2, 'two')");

    // Flush makes the server answer without a Sync.
    conn.parse("by_a", "select b from t where a = $1", &[0]);
    conn.flush();
    assert_eq!(conn.recv(), Msg::ParseComplete);

    conn.describe(b'S', "by_a");
    conn.sync();
    let msgs = conn.until_ready();
    assert_eq!(msgs[0], Msg::ParameterDescription(vec![INT4]));
    match &msgs[1] {
        Msg::RowDescription(f) => assert_eq!(f[0].name, "b"),
        other => panic!("expected RowDescription, got {other:?}"),
    }

    // The named statement can be bound several times, to named portals.
    for (a, b) in [("1", "one"), ("2", "two")] {
        conn.bind("p", "by_a", 0, &[Some(a.as_bytes())], 0);
        conn.execute("p", 0);
        conn.sync();
        let msgs = conn.until_ready();
        assert_eq!(rows(&msgs), vec![vec![s(b)]], "by_a({a})");
    }

    // A statement without a result describes as NoData.
    conn.parse("ins", "insert into t values ($1, $2)", &[0, 0]);
    conn.bind("", "ins", 0, &[Some(b"3"), Some(b"three")], 0);
    conn.describe(b'P', "");
    conn.execute("", 0);
    conn.sync();
    let msgs = conn.until_ready();
    assert!(msgs.contains(&Msg::NoData), "{msgs:?}");
    assert_eq!(tags(&msgs), vec!["INSERT 0 1"]);

    // After Close the name is gone: binding it fails with 26000.
    conn.close(b'S', "by_a");
    conn.sync();
    assert_eq!(
        conn.until_ready(),
        vec![Msg::CloseComplete, Msg::ReadyForQuery('I')]
    );
    conn.bind("", "by_a", 0, &[Some(b"1")], 0);
    conn.execute("", 0);
    conn.sync();
    let msgs = conn.until_ready();
    assert_eq!(errors(&msgs), vec!["26000"]);
    assert_eq!(ready_status(&msgs), 'I');
}

#[test]
fn execute_with_row_limit_suspends_the_portal() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.parse("", "select i from range(5) r(i) order by i", &[]);
    conn.bind("", "", 0, &[], 0);
    conn.execute("", 2);
    conn.execute("", 2);
    conn.execute("", 2);
    conn.sync();
    let msgs = conn.until_ready();
    let kinds: Vec<&str> = msgs
        .iter()
        .map(|m| match m {
            Msg::ParseComplete => "parse",
            Msg::BindComplete => "bind",
            Msg::DataRow(_) => "row",
            Msg::PortalSuspended => "suspended",
            Msg::CommandComplete(_) => "complete",
            Msg::ReadyForQuery(_) => "ready",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "parse",
            "bind",
            "row",
            "row",
            "suspended",
            "row",
            "row",
            "suspended",
            "row",
            "complete",
            "ready"
        ],
        "{msgs:?}"
    );
    let values: Vec<String> = rows(&msgs)
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    assert_eq!(values, ["0", "1", "2", "3", "4"]);
}

#[test]
fn error_in_extended_query_skips_to_sync() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.parse("", "selec 1", &[]);
    conn.bind("", "", 0, &[], 0);
    conn.execute("", 0);
    conn.sync();
    let msgs = conn.until_ready();
    // Nothing after the error until ReadyForQuery.
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(errors(&msgs), vec!["42601"]);
    assert_eq!(ready_status(&msgs), 'I');
    assert_eq!(rows(&conn.simple("select 1")), vec![vec![s("1")]]);
}

/// Messages up to a Sync are one implicit transaction, whatever reaches the server before their
/// replies are read: a failure rolls back the writes before it and discards every message after
/// it until the Sync, a simple Query included, as PostgreSQL does.
#[test]
fn a_pipelined_failure_rolls_back_and_discards_until_sync() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.simple("create table t(a int)");
    let run = |conn: &mut RawConn, sql: &str| {
        conn.parse("", sql, &[]);
        conn.bind("", "", 0, &[], 0);
        conn.execute("", 0);
    };
    run(&mut conn, "insert into t values (1)");
    run(&mut conn, "select count(*) from t");
    run(&mut conn, "select * from no_such_table");
    run(&mut conn, "insert into t values (2)");
    conn.query("insert into t values (3)");
    conn.sync();
    let msgs = conn.until_ready();
    assert_eq!(tags(&msgs), vec!["INSERT 0 1", "SELECT 1"], "{msgs:?}");
    assert_eq!(
        rows(&msgs),
        vec![vec![s("1")]],
        "the read sees the write before it"
    );
    assert_eq!(errors(&msgs), vec!["42P01"]);
    // One ReadyForQuery, for the Sync; nothing after the error but it.
    assert_eq!(msgs.last(), Some(&Msg::ReadyForQuery('I')), "{msgs:?}");
    assert_eq!(
        msgs.iter()
            .filter(|m| matches!(m, Msg::ReadyForQuery(_)))
            .count(),
        1
    );
    assert_eq!(
        rows(&conn.simple("select count(*) from t")),
        vec![vec![s("0")]]
    );

    // Reads and writes pipelined without a failure all take effect, in order.
    run(&mut conn, "insert into t values (4)");
    run(&mut conn, "select a from t");
    run(&mut conn, "insert into t values (5)");
    conn.sync();
    let msgs = conn.until_ready();
    assert_eq!(tags(&msgs), vec!["INSERT 0 1", "SELECT 1", "INSERT 0 1"]);
    assert_eq!(ready_status(&msgs), 'I');
    assert_eq!(
        rows(&conn.simple("select count(*) from t")),
        vec![vec![s("2")]]
    );
}

#[test]
fn terminate_closes_the_connection() {
    let server = TestServer::start();
    let mut conn = server.raw();
    conn.terminate();
    assert!(
        conn.closed_by_server(),
        "server should close the socket after Terminate"
    );
    // The server keeps serving others.
    let mut other = server.raw();
    other.set_read_timeout(Duration::from_secs(30));
    assert_eq!(rows(&other.simple("select 1")), vec![vec![s("1")]]);
}
