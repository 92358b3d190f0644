//! COPY FROM STDIN in the forms drivers send: PostgreSQL's binary format (tokio-postgres's
//! `BinaryCopyInWriter`; asyncpg's `copy_records_to_table` is in the asyncpg suite), and text
//! whose values only PostgreSQL's text forms spell (bytea's `\x…`, `{…}` arrays). Each loads
//! exactly what the same values bound as parameters would, and views see the rows.

mod common;

use common::{assert_oracle, exec, TestServer};
use futures::SinkExt;
use rust_decimal::Decimal;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;

const COLUMNS: &str = "id int, name text, price numeric(10,2), f double precision, ok boolean, \
     day date, at timestamp, raw bytea, tags text[], nums int[], u uuid";
const TYPES: &[Type] = &[
    Type::INT4,
    Type::TEXT,
    Type::NUMERIC,
    Type::FLOAT8,
    Type::BOOL,
    Type::DATE,
    Type::TIMESTAMP,
    Type::BYTEA,
    Type::TEXT_ARRAY,
    Type::INT4_ARRAY,
    Type::UUID,
];

type Row = (
    i32,
    Option<String>,
    Option<Decimal>,
    Option<f64>,
    Option<bool>,
    Option<chrono::NaiveDate>,
    Option<chrono::NaiveDateTime>,
    Option<Vec<u8>>,
    Option<Vec<Option<String>>>,
    Option<Vec<Option<i32>>>,
    Option<uuid::Uuid>,
);

fn rows(n: i32) -> Vec<Row> {
    let day = chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    (0..n)
        .map(|i| {
            let some = i % 7 != 3;
            (
                i,
                some.then(|| format!("name\t{i} \"q\" \\")),
                some.then(|| Decimal::new(i as i64 * 125 - 9_000, 2)),
                some.then_some(i as f64 / 3.0),
                some.then_some(i % 2 == 0),
                some.then(|| day + chrono::Days::new(i as u64)),
                some.then(|| day.and_hms_micro_opt(1, 2, 3, i as u32).unwrap()),
                some.then(|| vec![0, 1, 255, (i % 256) as u8, b'\\', b'x']),
                some.then(|| vec![Some(format!("t,{i}")), None, Some("{}".into())]),
                some.then(|| vec![Some(i), None, Some(-i)]),
                some.then(|| uuid::Uuid::from_u128(i as u128 * 7919)),
            )
        })
        .collect()
}

fn params(r: &Row) -> [&(dyn ToSql + Sync); 11] {
    [
        &r.0, &r.1, &r.2, &r.3, &r.4, &r.5, &r.6, &r.7, &r.8, &r.9, &r.10,
    ]
}

async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

/// The rows of `a` and `b` differ in neither direction.
async fn same_rows(c: &Client, a: &str, b: &str) {
    let diff = format!(
        "SELECT count(*) FROM ((SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b}) \
         UNION ALL (SELECT * FROM {b} EXCEPT ALL SELECT * FROM {a})) d"
    );
    assert_eq!(count(c, &diff).await, 0, "{a} and {b} differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_loads_what_binary_parameters_would() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, &format!("CREATE TABLE copied ({COLUMNS})")).await;
    exec(&c, &format!("CREATE TABLE bound ({COLUMNS})")).await;
    let q =
        "SELECT ok, count(*) AS n, sum(price) AS total, max(day) AS last FROM copied GROUP BY ok";
    exec(&c, &format!("CREATE MATERIALIZED VIEW per_ok AS {q}")).await;
    // Enough rows for several INSERT batches and a partial last one.
    let data = rows(1000);
    let sink = c
        .copy_in("COPY copied FROM STDIN (FORMAT binary)")
        .await
        .unwrap();
    let writer = BinaryCopyInWriter::new(sink, TYPES);
    futures::pin_mut!(writer);
    for r in &data {
        writer.as_mut().write(&params(r)).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 1000);
    let insert = c
        .prepare("INSERT INTO bound VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .await
        .unwrap();
    for r in &data {
        c.execute(&insert, &params(r)).await.unwrap();
    }
    same_rows(&c, "copied", "bound").await;
    let back: Vec<u8> = c
        .query_one("SELECT raw FROM copied WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(back, data[1].7.clone().unwrap());
    exec(&c, "REFRESH MATERIALIZED VIEW per_ok").await;
    assert_oracle(&c, "per_ok", q, "binary COPY", &["copied"]).await;

    // A column list; a client that closes right after keeps its rows.
    let c2 = server.client().await;
    let sink = c2
        .copy_in("COPY copied (id, tags) FROM STDIN BINARY")
        .await
        .unwrap();
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT4, Type::TEXT_ARRAY]);
    futures::pin_mut!(writer);
    let tags = vec![Some("only".to_string())];
    writer.as_mut().write(&[&5000i32, &tags]).await.unwrap();
    assert_eq!(writer.finish().await.unwrap(), 1);
    drop(c2);
    let got: Vec<Option<String>> = c
        .query_one("SELECT tags FROM copied WHERE id = 5000", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(got, tags);
}

/// Text-format COPY of the same values as PostgreSQL writes them (`\copy … to`): bytea in hex
/// and escape forms, arrays with quotes, NULLs and commas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_copy_reads_bytea_and_arrays_as_postgresql_writes_them() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (id int, raw bytea, tags text[], nums int[])",
    )
    .await;
    let text = "1\t\\\\x0001ff5c\t{a,\"b,c\",NULL,\"\\\\\"q\\\\\"\"}\t{1,NULL,-3}\n\
                2\t\\\\000\\\\001abc\\\\\\\\\t{}\t\\N\n\
                \\.\n";
    let mut sink = Box::pin(c.copy_in("COPY t FROM STDIN").await.unwrap());
    sink.send(bytes::Bytes::from(text)).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
    let rows = c
        .query("SELECT raw, tags, nums FROM t ORDER BY id", &[])
        .await
        .unwrap();
    let raw: Vec<Vec<u8>> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        raw,
        [vec![0, 1, 255, b'\\'], vec![0, 1, b'a', b'b', b'c', b'\\']]
    );
    let tags: Vec<Vec<Option<String>>> = rows.iter().map(|r| r.get(1)).collect();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(tags, [vec![s("a"), s("b,c"), None, s("\"q\"")], vec![]]);
    let nums: Vec<Option<Vec<Option<i32>>>> = rows.iter().map(|r| r.get(2)).collect();
    assert_eq!(nums, [Some(vec![Some(1), None, Some(-3)]), None]);
}

/// CSV COPY of bytea in PostgreSQL's hex form (what `\copy … to … csv` writes), and the same
/// values as untyped literals: three bytes each, not DuckDB's reading (one escaped byte, then
/// the rest as characters).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_copy_and_literals_read_bytea_hex_as_postgresql_does() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (id int, raw bytea)").await;
    let mut sink = Box::pin(
        c.copy_in("COPY t FROM STDIN WITH (FORMAT csv)")
            .await
            .unwrap(),
    );
    let csv = "1,\\x0001ff\n2,\\x\n";
    sink.send(bytes::Bytes::from(csv)).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
    exec(&c, "INSERT INTO t VALUES (3, '\\x0001ff'), (4, 'ab')").await;
    exec(&c, "UPDATE t SET raw = '\\x 10 20' WHERE id = 4").await;
    let rows = c.query("SELECT raw FROM t ORDER BY id", &[]).await.unwrap();
    let raw: Vec<Vec<u8>> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        raw,
        [vec![0, 1, 255], vec![], vec![0, 1, 255], vec![16, 32]]
    );
    let n = count(
        &c,
        "SELECT count(*) FROM t WHERE raw = '\\x0001ff' AND length(raw) = 3",
    )
    .await;
    assert_eq!(n, 2);
}

/// Malformed binary data: 22P04, nothing loaded, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_binary_copy_data_is_refused_whole() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (id int, name text)").await;
    let mut header = b"PGCOPY\n\xff\r\n\0".to_vec();
    header.extend([0u8; 8]);
    let tuple = |fields: &[&[u8]]| {
        let mut out = (fields.len() as i16).to_be_bytes().to_vec();
        for f in fields {
            out.extend((f.len() as i32).to_be_bytes());
            out.extend(*f);
        }
        out
    };
    let good = tuple(&[&7i32.to_be_bytes(), b"x"]);
    let cases: [(&str, Vec<u8>); 3] = [
        (
            "a bad signature",
            b"PGCOPY\nxx\r\n\0\0\0\0\0\0\0\0\0".to_vec(),
        ),
        (
            "a missing field",
            [&header[..], &good, &tuple(&[&1i32.to_be_bytes()])].concat(),
        ),
        ("data cut short", [&header[..], &good, &good[..7]].concat()),
    ];
    for (what, data) in cases {
        let mut sink = Box::pin(
            c.copy_in("COPY t FROM STDIN (FORMAT binary)")
                .await
                .unwrap(),
        );
        sink.send(bytes::Bytes::from(data)).await.unwrap();
        let err = sink.as_mut().finish().await.expect_err(what);
        assert_eq!(common::sqlstate(&err), "22P04", "{what}: {err:?}");
        assert_eq!(count(&c, "SELECT count(*) FROM t").await, 0, "{what}");
    }
}

/// Rows of the wrong width or with a value the column cannot hold, in text and CSV: PostgreSQL's
/// message and SQLSTATE, nothing loaded, the session goes on, and no error names the server's
/// spool file (DuckDB's reader printed its path with a page of diagnostics).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_text_and_csv_copy_data_is_refused_in_postgresql_words() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (a int, b int)").await;
    let cases = [
        (
            "",
            "1\t2\t3\n",
            "22P04",
            "extra data after last expected column",
        ),
        ("", "1\t2\n3\n", "22P04", "missing data for column \"b\""),
        (
            " (FORMAT csv)",
            "1,2,3\n",
            "22P04",
            "extra data after last expected column",
        ),
        (
            " (FORMAT csv)",
            "1,2\nabc,3\n",
            "22P02",
            "invalid input syntax for type integer: \"abc\"",
        ),
    ];
    for (options, data, code, message) in cases {
        let sql = format!("COPY t FROM STDIN{options}");
        let mut sink = Box::pin(c.copy_in(&sql).await.unwrap());
        sink.send(bytes::Bytes::from(data)).await.unwrap();
        let err = sink.as_mut().finish().await.expect_err(data);
        let db = err.as_db_error().expect("a server error");
        assert_eq!(common::sqlstate(&err), code, "{data:?}: {err:?}");
        assert_eq!(db.message(), message, "{data:?}");
        let said = format!("{} {:?} {:?}", db.message(), db.detail(), db.hint());
        assert!(!said.contains("spool"), "{data:?} names the spool: {said}");
        assert_eq!(count(&c, "SELECT count(*) FROM t").await, 0, "{data:?}");
    }
}
