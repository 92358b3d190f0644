//! The extended query protocol as drivers use it (tokio-postgres): named and
//! unnamed statements, portals fetched in pieces, errors with SQLSTATE that
//! leave the connection usable, and transactions seen from a second client.

mod common;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

use common::{expect_sqlstate, simple, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_statements_are_reused_and_interleaved() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table kv(k integer primary key, v text)")
        .await
        .unwrap();
    let insert = c.prepare("insert into kv values ($1, $2)").await.unwrap();
    let get = c.prepare("select v from kv where k = $1").await.unwrap();
    // Parameter types come from the target columns.
    assert_eq!(insert.params()[0], Type::INT4);
    assert!(matches!(insert.params()[1], Type::TEXT | Type::VARCHAR));
    for k in 0..20i32 {
        assert_eq!(
            c.execute(&insert, &[&k, &format!("v{k}")]).await.unwrap(),
            1
        );
        let row = c.query_one(&get, &[&k]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), format!("v{k}"));
    }
    assert!(c.query_opt(&get, &[&99i32]).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_statements_with_typed_parameters() {
    let server = TestServer::start();
    let c = server.client().await;
    // query_typed sends Parse/Bind/Execute on the unnamed statement in one go.
    let rows = c
        .query_typed(
            "select $1 + 1, $2 || '!'",
            &[(&41i32, Type::INT4), (&"hi", Type::TEXT)],
        )
        .await
        .unwrap();
    assert_eq!(rows[0].get::<_, i32>(0), 42);
    assert_eq!(rows[0].get::<_, String>(1), "hi!");
    // The next unnamed statement replaces it.
    let rows = c
        .query_typed("select $1::bigint * 2", &[(&21i64, Type::INT8)])
        .await
        .unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portal_with_row_limit_returns_rows_in_pieces() {
    let server = TestServer::start();
    let mut c = server.client().await;
    let tx = c.transaction().await.unwrap();
    let stmt = tx
        .prepare("select i::integer from range($1::integer) r(i) order by i")
        .await
        .unwrap();
    let portal = tx.bind(&stmt, &[&10i32]).await.unwrap();
    let mut sizes = Vec::new();
    let mut values = Vec::new();
    loop {
        let rows = tx.query_portal(&portal, 3).await.unwrap();
        sizes.push(rows.len());
        values.extend(rows.iter().map(|r| r.get::<_, i32>(0)));
        if rows.len() < 3 {
            break;
        }
    }
    assert_eq!(sizes, [3, 3, 3, 1]);
    assert_eq!(values, (0..10).collect::<Vec<_>>());
    tx.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_portals_of_one_statement_are_independent() {
    let server = TestServer::start();
    let mut c = server.client().await;
    let tx = c.transaction().await.unwrap();
    let stmt = tx
        .prepare("select i::integer from range($1::integer, $2::integer) r(i) order by i")
        .await
        .unwrap();
    let a = tx.bind(&stmt, &[&0i32, &4i32]).await.unwrap();
    let b = tx.bind(&stmt, &[&100i32, &104i32]).await.unwrap();
    let get =
        |rows: Vec<tokio_postgres::Row>| -> Vec<i32> { rows.iter().map(|r| r.get(0)).collect() };
    assert_eq!(get(tx.query_portal(&a, 2).await.unwrap()), [0, 1]);
    assert_eq!(get(tx.query_portal(&b, 2).await.unwrap()), [100, 101]);
    assert_eq!(get(tx.query_portal(&a, 2).await.unwrap()), [2, 3]);
    assert_eq!(get(tx.query_portal(&b, 5).await.unwrap()), [102, 103]);
    tx.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_sqlstate_and_connection_survives() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table u(id integer primary key, v integer not null)")
        .await
        .unwrap();
    c.execute("insert into u values (1, 1)", &[]).await.unwrap();

    expect_sqlstate(c.prepare("selec 1").await, SqlState::SYNTAX_ERROR.code());
    still_alive(&c).await;
    expect_sqlstate(
        c.prepare("select * from no_such_table").await,
        SqlState::UNDEFINED_TABLE.code(),
    );
    still_alive(&c).await;
    expect_sqlstate(
        c.prepare("select no_such_column from u").await,
        SqlState::UNDEFINED_COLUMN.code(),
    );
    still_alive(&c).await;
    expect_sqlstate(
        c.batch_execute("create table u(a integer)").await,
        SqlState::DUPLICATE_TABLE.code(),
    );
    still_alive(&c).await;

    // Errors raised while executing a prepared statement with parameters.
    let insert = c.prepare("insert into u values ($1, $2)").await.unwrap();
    let msg = expect_sqlstate(
        c.execute(&insert, &[&1i32, &5i32]).await,
        SqlState::UNIQUE_VIOLATION.code(),
    );
    assert!(!msg.is_empty());
    still_alive(&c).await;
    expect_sqlstate(
        c.execute(&insert, &[&2i32, &None::<i32>]).await,
        SqlState::NOT_NULL_VIOLATION.code(),
    );
    still_alive(&c).await;
    let div = c.prepare("select 10 // $1::integer").await.unwrap();
    expect_sqlstate(
        c.query(&div, &[&0i32]).await,
        SqlState::DIVISION_BY_ZERO.code(),
    );
    // The same statement still works with good input.
    assert_eq!(
        c.query_one(&div, &[&5i32]).await.unwrap().get::<_, i32>(0),
        2
    );
    // The failed inserts left nothing behind.
    let n: i64 = c
        .query_one("select count(*) from u", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
}

async fn still_alive(c: &tokio_postgres::Client) {
    let row = c
        .query_one("select 1::integer", &[])
        .await
        .expect("connection still works");
    assert_eq!(row.get::<_, i32>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_transaction_answers_25p02_until_rollback() {
    let server = TestServer::start();
    let mut c = server.client().await;
    c.batch_execute("create table t(a integer)").await.unwrap();
    let tx = c.transaction().await.unwrap();
    tx.execute("insert into t values (1)", &[]).await.unwrap();
    expect_sqlstate(
        tx.query("select * from no_such_table", &[]).await,
        SqlState::UNDEFINED_TABLE.code(),
    );
    expect_sqlstate(
        tx.query("select 1", &[]).await,
        SqlState::IN_FAILED_SQL_TRANSACTION.code(),
    );
    tx.rollback().await.unwrap();
    let n: i64 = c
        .query_one("select count(*) from t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

async fn count(c: &tokio_postgres::Client) -> i64 {
    c.query_one("select count(*) from t", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_commit_and_rollback_visibility_across_clients() {
    let server = TestServer::start();
    let mut a = server.client().await;
    let b = server.client().await;
    a.batch_execute("create table t(a integer)").await.unwrap();
    let tx = a.transaction().await.unwrap();
    tx.execute("insert into t values (1), (2)", &[])
        .await
        .unwrap();
    let inside: i64 = tx
        .query_one("select count(*) from t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(inside, 2, "a transaction sees its own writes");
    assert_eq!(
        count(&b).await,
        0,
        "uncommitted rows are invisible to others"
    );
    tx.commit().await.unwrap();
    assert_eq!(count(&b).await, 2, "committed rows are visible to others");

    let tx = a.transaction().await.unwrap();
    tx.execute("delete from t", &[]).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(count(&b).await, 2, "a rolled back delete changes nothing");
    assert_eq!(count(&a).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_conflict_is_reported_as_40001() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute(
        "create table t(id integer primary key, v integer); insert into t values (1, 0)",
    )
    .await
    .unwrap();
    a.batch_execute("begin; update t set v = 1 where id = 1")
        .await
        .unwrap();
    b.batch_execute("begin").await.unwrap();
    expect_sqlstate(
        simple(&b, "update t set v = 2 where id = 1").await,
        SqlState::T_R_SERIALIZATION_FAILURE.code(),
    );
    b.batch_execute("rollback").await.unwrap();
    a.batch_execute("commit").await.unwrap();
    let v: i32 = b
        .query_one("select v from t where id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 1);
}

/// Result column names, as the simple protocol and the extended protocol's Describe report them.
async fn column_names(c: &tokio_postgres::Client, sql: &str) -> (Vec<String>, Vec<String>) {
    let simple = c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::RowDescription(cols) => {
                Some(cols.iter().map(|c| c.name().to_string()).collect())
            }
            _ => None,
        })
        .unwrap_or_default();
    let described = c
        .prepare(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    (simple, described)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_result_columns_take_postgres_names() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table t (x varchar, n int); insert into t values ('1', 2)")
        .await
        .unwrap();
    let sql = "select count(*), sum(n), 1, x::int, case when n > 1 then 'big' end, \
               (select max(n) from t), n + 1, t.x, upper(x) as shout from t group by x, n";
    let expected = [
        "count", "sum", "?column?", "x", "case", "max", "?column?", "x", "shout",
    ];
    let (simple, described) = column_names(&c, sql).await;
    assert_eq!(simple, expected);
    assert_eq!(described, expected);
    // Relations made from such queries keep the names.
    c.batch_execute(
        "create view v as select count(*), max(n) from t; \
         create table c as select x::int, n * 2 from t; \
         create materialized view m as select x, count(*) from t group by x",
    )
    .await
    .unwrap();
    for (rel, cols) in [
        ("v", vec!["count", "max"]),
        ("c", vec!["x", "?column?"]),
        ("m", vec!["x", "count"]),
    ] {
        let (names, _) = column_names(&c, &format!("select * from {rel}")).await;
        assert_eq!(names, cols, "{rel}");
    }
    let row = c.query_one("select count from m", &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_duckdb_reserves_serve_as_names() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table jt (id int, at timestamp, by text); \
         insert into jt (id, at, by) values (1, '2024-05-01 10:00', 'me')",
    )
    .await
    .unwrap();
    let rows = c
        .query(
            "select at.id, at.by, at.at < '2030-01-01' as past from jt at where at.at > '2024-01-01' order by at",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(1), "me");
    assert!(rows[0].get::<_, bool>(2));
    let (names, _) = column_names(&c, "select at, by from jt").await;
    assert_eq!(names, ["at", "by"]);
    // pgAdmin's alias for pg_attribute.
    let cols = c
        .query(
            "select at.attname from pg_catalog.pg_attribute at join pg_catalog.pg_class c \
             on c.oid = at.attrelid where c.relname = 'jt' order by at.attnum",
            &[],
        )
        .await
        .unwrap();
    let names: Vec<String> = cols.iter().map(|r| r.get(0)).collect();
    assert_eq!(names, ["id", "at", "by"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_show_describes_its_row() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table s (a int)").await.unwrap();
    for (sql, column) in [
        ("SHOW TimeZone", "TimeZone"),
        ("SHOW transaction isolation level", "transaction_isolation"),
        ("SHOW search_path", "search_path"),
        ("SHOW threads", "threads"),
        ("SHOW memory_limit", "memory_limit"),
        ("SHOW TABLES", "name"),
    ] {
        let (simple, described) = column_names(&c, sql).await;
        assert_eq!(described.first().map(String::as_str), Some(column), "{sql}");
        assert_eq!(simple, described, "{sql}");
        let rows = c
            .query(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(!rows.is_empty(), "{sql}");
    }
}

/// `SELECT FROM t` (an empty select list) gives t's rows without columns, as in PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_select_list_gives_rows_without_columns() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table e (a int); insert into e values (1), (2)")
        .await
        .unwrap();
    let rows = c.query("select from e where a > 0", &[]).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.is_empty()));
    let (counts, rows) = simple(&c, "SELECT FROM e").await.unwrap();
    assert_eq!(counts, [2]);
    assert!(rows.iter().all(|r| r.is_empty()));
    let (names, described) = column_names(&c, "select from e").await;
    assert!(names.is_empty() && described.is_empty());
}
