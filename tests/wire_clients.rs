//! What driver and tool suites (tests/clients) found missing, pinned down
//! with tokio-postgres: COPY TO one row per message (psycopg), oid types
//! (asyncpg's introspection), savepoints (psycopg / SQLAlchemy), and the
//! statements `pgbench -i` sends (multi-object DROP / TRUNCATE, storage
//! parameters).

mod common;

use common::{expect_sqlstate, simple, TestServer};
use futures::TryStreamExt;
use tokio_postgres::types::Type;

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_sends_one_row_per_message() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table t (a int, b text); insert into t values (1, 'x'), (2, 'y'), (3, null)",
    )
    .await
    .unwrap();
    let stream = c
        .copy_out("COPY (SELECT * FROM t ORDER BY a) TO STDOUT")
        .await
        .unwrap();
    let chunks: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
    let texts: Vec<String> = chunks
        .iter()
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
        .collect();
    assert_eq!(texts, ["1\tx\n", "2\ty\n", "3\t\\N\n"]);
}

/// COPY FROM STDIN over the extended protocol (tokio-postgres pipelines a Sync after Execute and
/// sends another after CopyDone), alone and inside a transaction that goes on after it, into a
/// table a view reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_over_the_extended_protocol_completes() {
    use futures::SinkExt;
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table t (a int, b text);
         create materialized view tv as select count(*) as n, sum(a) as s from t",
    )
    .await
    .unwrap();
    let copy = |body: &'static str| {
        let c = &c;
        async move {
            let sink = c.copy_in("COPY t FROM STDIN").await?;
            let mut sink = Box::pin(sink);
            sink.send(bytes::Bytes::from(body)).await?;
            sink.as_mut().finish().await
        }
    };
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), copy("1\tx\n2\ty\n"))
        .await
        .expect("COPY FROM STDIN did not complete")
        .unwrap();
    assert_eq!(n, 2);
    c.batch_execute("BEGIN").await.unwrap();
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), copy("3\tz\n"))
        .await
        .expect("COPY FROM STDIN in a transaction did not complete")
        .unwrap();
    assert_eq!(n, 1);
    c.batch_execute("INSERT INTO t VALUES (4, 'w'); COMMIT; REFRESH MATERIALIZED VIEW tv")
        .await
        .unwrap();
    assert_eq!(count(&c, "select n::bigint from tv").await, 4);
    assert_eq!(count(&c, "select s::bigint from tv").await, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oid_values_are_typed_oid() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table t (x integer, y text)")
        .await
        .unwrap();
    // asyncpg's type introspection: `= any($1::oid[])`, oid columns and
    // array_agg of them must be types asyncpg decodes without introspecting.
    let st = c
        .prepare(
            "SELECT t.oid, t.typname, (SELECT array_agg(a.atttypid ORDER BY a.attnum) FROM pg_attribute a \
             JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 't') AS cols \
             FROM pg_type t WHERE t.oid = any($1::oid[]) ORDER BY t.oid",
        )
        .await
        .unwrap();
    assert_eq!(st.params(), &[Type::OID_ARRAY]);
    let types: Vec<Type> = st.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, [Type::OID, Type::TEXT, Type::OID_ARRAY]);
    let rows = c.query(&st, &[&vec![25u32, 23u32]]).await.unwrap();
    let got: Vec<(u32, String, Vec<u32>)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        [
            (23, "int4".to_string(), vec![23, 25]),
            (25, "text".to_string(), vec![23, 25])
        ]
    );
    // `::oid` is PostgreSQL's unsigned 32-bit oid, not DuckDB's BIGINT.
    let r = c.query_one("SELECT '4000000000'::oid", &[]).await.unwrap();
    assert_eq!(r.columns()[0].type_(), &Type::OID);
    assert_eq!(r.get::<_, u32>(0), 4_000_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_roll_back_what_duckdb_can() {
    let server = TestServer::start();
    let mut c = server.client().await;
    c.batch_execute("create table t (a int)").await.unwrap();

    // Outside a transaction block, as PostgreSQL.
    expect_sqlstate(c.batch_execute("SAVEPOINT a").await, "25P01");

    // A failed statement after a savepoint aborted DuckDB's transaction,
    // writes before the savepoint included: refused, not silently lost.
    c.batch_execute("BEGIN; INSERT INTO t VALUES (1); SAVEPOINT s; SELECT 1")
        .await
        .unwrap();
    expect_sqlstate(
        c.batch_execute("SELECT * FROM no_such_table").await,
        "42P01",
    );
    expect_sqlstate(c.batch_execute("ROLLBACK TO SAVEPOINT s").await, "0A000");
    c.batch_execute("ROLLBACK").await.unwrap();
    // Back to a savepoint after which only reads ran: the writes before
    // it stay.
    c.batch_execute("BEGIN; INSERT INTO t VALUES (1); SAVEPOINT s; SELECT 1; ROLLBACK TO SAVEPOINT s; INSERT INTO t VALUES (2); COMMIT")
        .await
        .unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 2);

    // A savepoint set before any change: ROLLBACK TO undoes everything
    // after it, even from a failed transaction, and the block goes on.
    c.batch_execute("BEGIN; SAVEPOINT s; INSERT INTO t VALUES (10)")
        .await
        .unwrap();
    expect_sqlstate(
        c.batch_execute("SELECT 1/0 FROM no_such_table").await,
        "42P01",
    );
    let (tags, _) = simple(&c, "ROLLBACK TO s; INSERT INTO t VALUES (3); COMMIT")
        .await
        .unwrap();
    assert_eq!(tags.len(), 3);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE a = 10").await, 0);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE a = 3").await, 1);

    // Changes on both sides of a savepoint cannot be split: refused, and
    // the transaction must be rolled back as a whole.
    c.batch_execute("BEGIN; INSERT INTO t VALUES (20); SAVEPOINT s; INSERT INTO t VALUES (21)")
        .await
        .unwrap();
    expect_sqlstate(c.batch_execute("ROLLBACK TO SAVEPOINT s").await, "0A000");
    expect_sqlstate(c.batch_execute("SELECT 1").await, "25P02");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE a >= 20").await, 0);

    // Unknown names.
    c.batch_execute("BEGIN").await.unwrap();
    expect_sqlstate(c.batch_execute("RELEASE SAVEPOINT nope").await, "3B001");
    c.batch_execute("ROLLBACK").await.unwrap();

    // Driver-style nested transactions (tokio-postgres sends SAVEPOINT,
    // RELEASE and ROLLBACK TO over the extended protocol).
    let mut tx = c.transaction().await.unwrap();
    {
        let sp = tx.transaction().await.unwrap();
        sp.query("SELECT count(*) FROM t", &[]).await.unwrap();
        sp.commit().await.unwrap();
    }
    {
        let sp = tx.transaction().await.unwrap();
        assert!(sp.query("SELECT * FROM no_such_table", &[]).await.is_err());
        sp.rollback().await.unwrap();
    }
    tx.execute("INSERT INTO t VALUES (4)", &[]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE a = 4").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_and_truncate_take_lists() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table a (x int); create table b (x int); create table c (x int);
         insert into a values (1); insert into b values (2); insert into c values (3)",
    )
    .await
    .unwrap();
    let (tags, _) = simple(&c, "TRUNCATE TABLE a, b").await.unwrap();
    assert_eq!(tags, [0]);
    assert_eq!(
        count(
            &c,
            "SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)"
        )
        .await,
        0
    );
    assert_eq!(count(&c, "SELECT count(*) FROM c").await, 1);

    // All or nothing: a missing table leaves the others in place.
    expect_sqlstate(c.batch_execute("DROP TABLE a, missing, b").await, "42P01");
    assert_eq!(count(&c, "SELECT count(*) FROM a").await, 0);
    // A table a materialized view reads is still protected inside a list.
    c.batch_execute("CREATE MATERIALIZED VIEW mv AS SELECT x, count(*) AS n FROM c GROUP BY x")
        .await
        .unwrap();
    expect_sqlstate(c.batch_execute("DROP TABLE a, c").await, "2BP01");
    assert_eq!(count(&c, "SELECT count(*) FROM a").await, 0);

    c.batch_execute("DROP TABLE IF EXISTS a, b, never_was")
        .await
        .unwrap();
    let left = count(
        &c,
        "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('a', 'b')",
    )
    .await;
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_storage_parameters_are_accepted() {
    let server = TestServer::start();
    let c = server.client().await;
    // pgbench -i creates its tables this way.
    c.batch_execute(
        "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100);
         insert into pgbench_tellers(tid, bid, tbalance) values (1, 1, 0)",
    )
    .await
    .unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM pgbench_tellers").await, 1);
}
