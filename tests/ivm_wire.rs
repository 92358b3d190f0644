//! Materialized views over the wire: capture of every DML form, concurrent
//! writers, waits, restarts and protections, each checked with the oracle —
//! the view equals its defining query run fresh, as bags, in both directions.
//! (The shapes under random DML are `tests/shapes`, run by `ivm_shapes`.)

mod common;

use common::rng::Rng;
use common::shapes::Family;
use common::{assert_oracle, dump, exec, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

async fn count(c: &Client, sql: &str) -> i64 {
    let rows = c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    for m in rows {
        if let SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap().parse().unwrap();
        }
    }
    panic!("no row from {sql}");
}

/// The oracle: the view equals its query run fresh, as bags.
async fn oracle(c: &Client, view: &str, query: &str, context: &str) {
    assert_oracle(c, view, query, context, &[]).await;
}

#[test]
fn the_issue_example_through_psql() {
    let server = TestServer::start();
    let out = server.psql_ok(
        &["-A", "-t", "-v", "ON_ERROR_STOP=1"],
        "CREATE TABLE sales (region VARCHAR, product VARCHAR, amount INT);
         INSERT INTO sales VALUES ('US','Widget',100), ('EU','Gadget',200);
         CREATE MATERIALIZED VIEW regional AS
           SELECT region, SUM(amount) AS total, COUNT(*) AS n, MAX(amount) AS top
           FROM sales GROUP BY region;
         INSERT INTO sales VALUES ('US','Bolt',50), ('JP','Gear',300);
         DELETE FROM sales WHERE product = 'Gadget';
         REFRESH MATERIALIZED VIEW regional;
         SELECT * FROM regional ORDER BY region;
         SELECT count(*) FROM ((SELECT * FROM regional EXCEPT ALL SELECT region, SUM(amount), COUNT(*), MAX(amount) FROM sales GROUP BY region)
            UNION ALL (SELECT region, SUM(amount), COUNT(*), MAX(amount) FROM sales GROUP BY region EXCEPT ALL SELECT * FROM regional)) d;",
    );
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    let tail = &lines[lines.len() - 3..];
    assert_eq!(
        tail,
        ["JP|300|1|300", "US|150|2|100", "0"],
        "psql printed:\n{out}"
    );
}

/// Every DML form is captured, and its rolled-back twin leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dml_form_is_captured_and_rollbacks_leave_no_delta() {
    // COPY from a server file is one of the forms: only superusers of a server started with
    // --allow-file-access may read one.
    let server = TestServer::start_with_args(&["--allow-file-access", "--superuser", "test"]);
    let c = server.client().await;
    exec(&c, "CREATE SEQUENCE ids START 100000; CREATE TABLE t (id INT PRIMARY KEY DEFAULT nextval('ids'), grp VARCHAR DEFAULT 'd', amount INT DEFAULT 7)").await;
    exec(&c, "CREATE TABLE src (id INT, grp VARCHAR, amount INT)").await;
    exec(
        &c,
        "INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20), (3, 'x', 30)",
    )
    .await;
    exec(
        &c,
        "INSERT INTO src VALUES (2, 'z', 200), (4, 'z', 400), (5, 'x', 500)",
    )
    .await;
    let q = "SELECT grp, count(*) AS n, sum(amount) AS s, max(amount) AS hi FROM t GROUP BY grp";
    exec(&c, &format!("CREATE MATERIALIZED VIEW tv AS {q}")).await;
    let csv = std::env::temp_dir().join(format!("duckmv_copy_{}.csv", std::process::id()));
    std::fs::write(&csv, "id,grp,amount\n60,c,6\n61,c,7\n").unwrap();
    let forms: Vec<String> = vec![
        "INSERT INTO t VALUES (10, 'a', 1), (11, 'b', 2)".into(),
        "INSERT INTO t SELECT id + 20, grp, amount FROM src".into(),
        "INSERT INTO t (id) VALUES (30)".into(),
        "INSERT INTO t DEFAULT VALUES".into(),
        "INSERT INTO t VALUES (31, 'r', 3) RETURNING id".into(),
        "UPDATE t SET amount = amount + 1 WHERE grp = 'x'".into(),
        "UPDATE t SET amount = src.amount FROM src WHERE t.id = src.id".into(),
        "DELETE FROM t WHERE id = 1".into(),
        "DELETE FROM t USING src WHERE t.id = src.id".into(),
        "INSERT INTO t VALUES (1, 'n', 5), (40, 'n', 6) ON CONFLICT DO NOTHING".into(),
        "INSERT INTO t VALUES (3, 'u', 33), (41, 'u', 44) ON CONFLICT (id) DO UPDATE SET amount = excluded.amount, grp = excluded.grp".into(),
        "MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET amount = src.amount WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.grp, src.amount)".into(),
        "WITH gone AS (DELETE FROM t WHERE amount > 100 RETURNING id) SELECT count(*) FROM gone".into(),
        format!("COPY t FROM '{}' (HEADER)", csv.display()),
        "TRUNCATE t".into(),
    ];
    for form in &forms {
        // Rolled back: the view, refreshed, still equals the (unchanged) query.
        let before = dump(&c, "SELECT * FROM t ORDER BY id").await;
        exec(&c, &format!("BEGIN; {form}; ROLLBACK")).await;
        exec(&c, "REFRESH MATERIALIZED VIEW tv").await;
        oracle(&c, "tv", q, &format!("rolled-back {form}")).await;
        assert_eq!(before, dump(&c, "SELECT * FROM t ORDER BY id").await);
        // Committed: captured.
        exec(&c, form).await;
        exec(&c, "REFRESH MATERIALIZED VIEW tv").await;
        oracle(&c, "tv", q, form).await;
        // Keep some rows around for the next forms.
        exec(&c, "INSERT INTO t SELECT id + 100 + (SELECT coalesce(max(id), 0) FROM t), grp, amount FROM src").await;
        exec(&c, "REFRESH MATERIALIZED VIEW tv").await;
        oracle(&c, "tv", q, &format!("after {form}")).await;
    }
    let _ = std::fs::remove_file(csv);
}

/// Writers that touch the same rows, in autocommit and in blocks that
/// commit or roll back, while views refresh. The server serialises writes
/// to tables views read (DuckDB 2.0 lets a DELETE remove a row another open
/// transaction updated, without a conflict), so none of them fails and the
/// views stay exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_writers_keep_views_exact() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE a (k INT, g INT, v INT); CREATE TABLE b (k INT, w INT)",
    )
    .await;
    let q = "SELECT g, count(*) AS n, sum(v) AS s, min(v) AS lo FROM a GROUP BY g";
    let qj = "SELECT a.g, b.w FROM a JOIN b ON a.k = b.k";
    exec(&c, &format!("CREATE MATERIALIZED VIEW cv AS {q}")).await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW cj AS {qj}")).await;
    let schema = Family::load("wire").schema;
    let mut writers = Vec::new();
    for seed in 1..=4u64 {
        let w = server.client().await;
        let schema = schema.clone();
        writers.push(tokio::spawn(async move {
            let mut r = Rng::seeded(seed);
            let random_dml = |r: &mut Rng| schema.statement(r);
            for i in 0..40 {
                let sql = match i % 4 {
                    0 => random_dml(&mut r),
                    1 => format!(
                        "BEGIN; {}; {}; COMMIT",
                        random_dml(&mut r),
                        random_dml(&mut r)
                    ),
                    2 => format!("BEGIN; {}; ROLLBACK", random_dml(&mut r)),
                    // A read first fixes the snapshot: if another writer
                    // commits before this one writes, it must fail (40001).
                    _ => format!(
                        "BEGIN; SELECT count(*) FROM a; {}; COMMIT",
                        random_dml(&mut r)
                    ),
                };
                match w.batch_execute(&sql).await {
                    Ok(()) => {}
                    Err(e) if i % 4 == 3 && e.code().map(|c| c.code()) == Some("40001") => {
                        w.batch_execute("ROLLBACK").await.unwrap();
                    }
                    Err(e) => panic!("{sql}: {e} {:?}", e.as_db_error()),
                }
            }
        }));
    }
    let refresher = server.client().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let loop_task = tokio::spawn(async move {
        let mut n = 0;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            for v in ["cv", "cj"] {
                refresher
                    .batch_execute(&format!("REFRESH MATERIALIZED VIEW {v}"))
                    .await
                    .unwrap_or_else(|e| panic!("refresh {v}: {e}"));
            }
            n += 1;
        }
        n
    });
    for w in writers {
        w.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let refreshes = loop_task.await.unwrap();
    assert!(refreshes > 1, "the refresher ran {refreshes} times");
    for (v, vq) in [("cv", q), ("cj", qj)] {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {v}")).await;
        oracle(&c, v, vq, "conflicting writers").await;
    }
}

/// A transaction that wrote a table before any view read it: CREATE
/// MATERIALIZED VIEW over that table waits for it, so its rows end up in
/// the view (they are in no delta). Writing that table again while the
/// CREATE waits is a deadlock, reported as 40P01.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_waits_for_earlier_writers_of_its_tables() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (k INT, g INT)").await;
    exec(&c, "INSERT INTO t VALUES (1, 1)").await;
    let w = server.client().await;
    exec(&w, "BEGIN; INSERT INTO t VALUES (2, 2)").await;
    let q = "SELECT g, count(*) AS n FROM t GROUP BY g";
    let creating = tokio::spawn(async move {
        exec(&c, &format!("CREATE MATERIALIZED VIEW tv AS {q}")).await;
        c
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !creating.is_finished(),
        "CREATE must wait for the open writer"
    );
    exec(&w, "COMMIT").await;
    let c = creating.await.unwrap();
    exec(&c, "REFRESH MATERIALIZED VIEW tv").await;
    oracle(&c, "tv", q, "writer before create").await;

    // u has no view yet: its writer holds no lock while CREATE waits.
    exec(&w, "CREATE TABLE u (k INT, g INT)").await;
    exec(&w, "BEGIN; INSERT INTO u VALUES (4, 4)").await;
    let creating = tokio::spawn(async move {
        exec(
            &c,
            "CREATE MATERIALIZED VIEW uv AS SELECT k FROM u WHERE g > 1",
        )
        .await;
        c
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let e = w
        .batch_execute("INSERT INTO u VALUES (5, 5)")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("40P01"), "{e}");
    exec(&w, "ROLLBACK").await;
    let c = creating.await.unwrap();
    exec(&w, "INSERT INTO u VALUES (6, 6)").await;
    exec(&c, "REFRESH MATERIALIZED VIEW uv").await;
    oracle(&c, "uv", "SELECT k FROM u WHERE g > 1", "deadlock victim").await;
}

/// A writer waiting for another transaction's writes to a tracked table
/// can be cancelled, and writes to tables no view reads never wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_writer_can_be_cancelled() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE a (k INT, g INT, v INT); CREATE TABLE free (x INT)",
    )
    .await;
    exec(
        &c,
        "CREATE MATERIALIZED VIEW cv AS SELECT g, count(*) AS n FROM a GROUP BY g",
    )
    .await;
    exec(&c, "BEGIN; INSERT INTO a VALUES (1, 1, 1)").await;
    let w = server.client().await;
    exec(&w, "INSERT INTO free VALUES (1)").await;
    exec(&w, "SET statement_timeout = '300ms'").await;
    let e = w
        .batch_execute("INSERT INTO a VALUES (2, 2, 2)")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e}");
    exec(&w, "RESET statement_timeout").await;
    let waiting = tokio::spawn(async move {
        w.batch_execute("INSERT INTO a VALUES (3, 3, 3)")
            .await
            .unwrap();
        w
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the second writer must wait");
    exec(&c, "COMMIT").await;
    let w = waiting.await.unwrap();
    exec(&w, "REFRESH MATERIALIZED VIEW cv").await;
    oracle(
        &w,
        "cv",
        "SELECT g, count(*) AS n FROM a GROUP BY g",
        "after waiting",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deltas_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("restart.duckdb");
    let q = "SELECT g, count(*) AS n, sum(v) AS s, max(v) AS hi FROM a GROUP BY g";
    {
        let server = TestServer::start_with(&db);
        let c = server.client().await;
        exec(&c, "CREATE TABLE a (k INT, g INT, v INT)").await;
        exec(
            &c,
            "INSERT INTO a VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30)",
        )
        .await;
        exec(&c, &format!("CREATE MATERIALIZED VIEW rv AS {q}")).await;
        exec(
            &c,
            "INSERT INTO a VALUES (4, 2, 40); DELETE FROM a WHERE k = 2",
        )
        .await;
        drop(c);
        server.terminate();
    }
    let server = TestServer::start_with(&db);
    let c = server.client().await;
    exec(&c, "REFRESH MATERIALIZED VIEW rv").await;
    oracle(&c, "rv", q, "restart").await;
    exec(
        &c,
        "UPDATE a SET g = 3 WHERE k = 4; REFRESH MATERIALIZED VIEW rv",
    )
    .await;
    oracle(&c, "rv", q, "restart + update").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_refuse_writes_and_protect_their_sources() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE base (x INT); INSERT INTO base VALUES (1), (2)",
    )
    .await;
    exec(&c, "CREATE MATERIALIZED VIEW mv AS SELECT x FROM base").await;
    let code =
        |r: Result<u64, tokio_postgres::Error>| r.unwrap_err().code().unwrap().code().to_string();
    assert_eq!(
        code(c.execute("INSERT INTO mv VALUES (3)", &[]).await),
        "42809"
    );
    assert_eq!(code(c.execute("DELETE FROM mv", &[]).await), "42809");
    assert_eq!(code(c.execute("DROP TABLE base", &[]).await), "2BP01");
    assert_eq!(
        code(
            c.execute("ALTER TABLE base ALTER COLUMN x TYPE VARCHAR", &[])
                .await
        ),
        "2BP01"
    );
    assert_eq!(
        code(c.execute("DELETE FROM _duckmv.views", &[]).await),
        "42501"
    );
    // The session survives and the view is listed.
    let listed = dump(&c, "SELECT matviewname, ispopulated FROM pg_matviews").await;
    assert!(
        listed.contains("mv|t") || listed.contains("mv|true"),
        "pg_matviews: {listed}"
    );
    // WITH NO DATA: unreadable until refreshed.
    exec(
        &c,
        "CREATE MATERIALIZED VIEW lazy AS SELECT x FROM base WITH NO DATA",
    )
    .await;
    assert_eq!(code(c.execute("SELECT * FROM lazy", &[]).await), "55000");
    exec(&c, "REFRESH MATERIALIZED VIEW lazy").await;
    oracle(&c, "lazy", "SELECT x FROM base", "first refresh").await;
    // Rename, then CASCADE drops dependants with the table.
    exec(&c, "ALTER MATERIALIZED VIEW lazy RENAME TO eager").await;
    oracle(&c, "eager", "SELECT x FROM base", "rename").await;
    exec(&c, "DROP TABLE base CASCADE").await;
    assert_eq!(count(&c, "SELECT count(*) FROM pg_matviews").await, 0);
}

/// COPY FROM STDIN (psql's \copy, text and CSV) loads rows that views see,
/// and COPY TO STDOUT writes them back in PostgreSQL's text format.
#[test]
fn copy_from_stdin_is_captured_and_copy_to_stdout_round_trips() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("in.tsv");
    let csv = dir.path().join("in.csv");
    std::fs::write(&tsv, "1\tone\n2\t\\N\n3\ttab\\there\n").unwrap();
    std::fs::write(&csv, "id,name\n4,\"x,y\"\n5,\n6,one\n").unwrap();
    let script = format!(
        "CREATE TABLE cp (id INT, name TEXT);
         CREATE MATERIALIZED VIEW cpv AS SELECT name, count(*) AS n FROM cp GROUP BY name;
         \\copy cp from '{}'
         \\copy cp from '{}' csv header
         REFRESH MATERIALIZED VIEW cpv;
         SELECT count(*) FROM ((SELECT * FROM cpv EXCEPT ALL SELECT name, count(*) FROM cp GROUP BY name)
            UNION ALL (SELECT name, count(*) FROM cp GROUP BY name EXCEPT ALL SELECT * FROM cpv)) d;
         SELECT n FROM cpv WHERE name = 'one';
         \\copy (SELECT id, name FROM cp ORDER BY id) to stdout
",
        tsv.display(),
        csv.display()
    );
    let out = server.psql_ok(&["-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"], &script);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "0",
            "2",
            "1\tone",
            "2\t\\N",
            "3\ttab\\there",
            "4\tx,y",
            "5\t\\N",
            "6\tone"
        ],
        "psql printed:\n{out}"
    );
}

/// A COPY FROM STDIN that ends its psql session (`psql -c '\copy …'`, a script's last line)
/// keeps its rows: it commits when it completes, as the query string it ends would, before the
/// client disconnects. Inside a transaction block it waits for the block's end.
#[test]
fn a_copy_that_ends_the_session_keeps_its_rows() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("in.tsv");
    std::fs::write(&tsv, "1\tone\n2\ttwo\n3\tone\n").unwrap();
    let copy = format!("\\copy cp from '{}'", tsv.display());
    let q = "SELECT name, count(*) AS n FROM cp GROUP BY name";
    server.psql_ok(
        &["-q", "-v", "ON_ERROR_STOP=1"],
        &format!("CREATE TABLE cp (id INT, name TEXT);\nCREATE MATERIALIZED VIEW cpv AS {q};\n"),
    );
    let copied = server.psql_ok(&["-At", "-v", "ON_ERROR_STOP=1", "-c", &copy], "");
    assert_eq!(copied.trim(), "COPY 3");
    server.psql_ok(&["-q", "-v", "ON_ERROR_STOP=1"], &format!("{copy}\n"));
    let rolled_back = format!("BEGIN;\n{copy}\nROLLBACK;\n");
    server.psql_ok(&["-q", "-v", "ON_ERROR_STOP=1"], &rolled_back);
    let check = format!(
        "REFRESH MATERIALIZED VIEW cpv;
         SELECT count(*) FROM cp;
         SELECT count(*) FROM ((SELECT * FROM cpv EXCEPT ALL {q})
            UNION ALL ({q} EXCEPT ALL SELECT * FROM cpv)) d;"
    );
    let out = server.psql_ok(&["-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"], &check);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["6", "0"],
        "psql printed:\n{out}"
    );
}

/// The same through the extended protocol (tokio-postgres): a client that closes its connection
/// right after `finish()` returned keeps the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extended_copy_that_ends_the_connection_keeps_its_rows() {
    use futures::SinkExt;
    let server = TestServer::start();
    let c = server.client().await;
    exec(&c, "CREATE TABLE cp (id INT, name TEXT)").await;
    for _ in 0..2 {
        let c = server.client().await;
        let mut sink = Box::pin(c.copy_in("COPY cp FROM STDIN").await.unwrap());
        sink.send(bytes::Bytes::from("1\tone\n2\ttwo\n"))
            .await
            .unwrap();
        assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
    }
    let n: i64 = c
        .query_one("SELECT count(*) FROM cp", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 4);
}

/// A refresh with nothing pending is answered without asking DuckDB; every way a view can get
/// work after such a refresh must still reach it: another session's commit (not its
/// uncommitted writes), a refresh of the view it reads, REFRESH WITH NO DATA, a rolled-back
/// refresh, and a view dropped and created again under the same name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_with_nothing_pending_still_sees_every_later_change() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    let (q1, q2) = (
        "SELECT g, sum(v) AS s, count(*) AS n FROM t GROUP BY g",
        "SELECT g, s FROM v1 WHERE n > 1",
    );
    exec(&a, "CREATE TABLE t (g INT, v INT)").await;
    exec(&a, "INSERT INTO t SELECT i % 3, i FROM range(10) r(i)").await;
    exec(&a, &format!("CREATE MATERIALIZED VIEW v1 AS {q1}")).await;
    exec(&a, &format!("CREATE MATERIALIZED VIEW v2 AS {q2}")).await;
    for v in ["v1", "v2", "v1", "v2"] {
        exec(&a, &format!("REFRESH MATERIALIZED VIEW {v}")).await;
    }

    // Uncommitted writes of another session are not this refresh's; its commit is the next's.
    exec(&b, "BEGIN; INSERT INTO t VALUES (1, 100), (5, 1), (5, 2)").await;
    exec(&a, "REFRESH MATERIALIZED VIEW v1").await;
    oracle(&a, "v1", q1, "a writer still open").await;
    exec(&b, "COMMIT").await;
    // v2 has nothing pending until v1 is refreshed, which feeds its delta.
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    exec(&a, "REFRESH MATERIALIZED VIEW v1").await;
    oracle(&a, "v1", q1, "the writer committed").await;
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    oracle(&a, "v2", q2, "v1 fed v2").await;

    // Changes consumed inside a rolled-back block are still pending afterwards.
    exec(&b, "DELETE FROM t WHERE g = 5").await;
    exec(&a, "BEGIN; REFRESH MATERIALIZED VIEW v1; ROLLBACK").await;
    exec(&a, "REFRESH MATERIALIZED VIEW v1").await;
    oracle(&a, "v1", q1, "a rolled-back refresh").await;

    // WITH NO DATA empties the view; the next refresh fills it again.
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    exec(&b, "REFRESH MATERIALIZED VIEW v2 WITH NO DATA").await;
    assert!(a.simple_query("SELECT * FROM v2").await.is_err());
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    oracle(&a, "v2", q2, "WITH NO DATA, then a refresh").await;

    // The same name for a new, unpopulated view with another definition.
    exec(&b, "DROP MATERIALIZED VIEW v2").await;
    let q3 = "SELECT g FROM v1";
    exec(
        &b,
        &format!("CREATE MATERIALIZED VIEW v2 AS {q3} WITH NO DATA"),
    )
    .await;
    exec(&a, "REFRESH MATERIALIZED VIEW v2").await;
    oracle(&a, "v2", q3, "a new view under the same name").await;

    // A block that wrote before refreshing consumes its own change.
    exec(&a, "REFRESH MATERIALIZED VIEW v1").await;
    exec(
        &a,
        "BEGIN; INSERT INTO t VALUES (7, 7); REFRESH MATERIALIZED VIEW v1; COMMIT",
    )
    .await;
    oracle(&a, "v1", q1, "a write and a refresh in one block").await;
}

/// CREATE MATERIALIZED VIEW inside a transaction that already read: a write to the view's
/// table committed after that snapshot is neither visible to the view's first population nor
/// captured, so the CREATE fails with 40001 (and succeeds when retried in a new transaction).
/// A block whose first statement is the CREATE waits for the writer and sees its rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_in_a_block_fails_when_its_snapshot_misses_a_write() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    let q = "SELECT g, count(*) AS n FROM t GROUP BY g";
    exec(&a, "CREATE TABLE t (k INT, g INT)").await;
    exec(&a, "CREATE TABLE other (x INT)").await;
    exec(&a, "INSERT INTO t VALUES (1, 1)").await;

    exec(&a, "BEGIN; SELECT count(*) FROM t").await;
    exec(&b, "INSERT INTO other VALUES (1)").await; // another table: no conflict
    exec(&b, "INSERT INTO t VALUES (2, 2)").await;
    let e = a
        .batch_execute(&format!("CREATE MATERIALIZED VIEW tv AS {q}"))
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("40001"), "{e}");
    exec(&a, "ROLLBACK").await;

    exec(&a, "BEGIN; SELECT count(*) FROM other").await;
    exec(&b, "INSERT INTO other VALUES (2)").await;
    exec(&a, &format!("CREATE MATERIALIZED VIEW tv AS {q}")).await;
    exec(&a, "COMMIT").await;
    oracle(
        &a,
        "tv",
        q,
        "a block whose snapshot predates only writes to other tables",
    )
    .await;

    exec(&b, "BEGIN; INSERT INTO t VALUES (3, 3)").await;
    let waiting = tokio::spawn(async move {
        exec(
            &a,
            "BEGIN; CREATE MATERIALIZED VIEW tv2 AS SELECT k FROM t WHERE g > 1; COMMIT",
        )
        .await;
        a
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    exec(&b, "COMMIT").await;
    let a = waiting.await.unwrap();
    exec(&b, "INSERT INTO t VALUES (4, 4)").await;
    exec(
        &a,
        "REFRESH MATERIALIZED VIEW tv; REFRESH MATERIALIZED VIEW tv2",
    )
    .await;
    oracle(&a, "tv", q, "later writes").await;
    oracle(
        &a,
        "tv2",
        "SELECT k FROM t WHERE g > 1",
        "a CREATE that waited in a block",
    )
    .await;
}

/// A transaction whose snapshot is older than another writer's commit may still insert into a
/// table a view reads (adding rows cannot touch rows the other writer changed), but not update
/// or delete tracked rows afterwards (40001). The view stays exact either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_with_an_old_snapshot_go_on_updates_fail() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    let q = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g";
    exec(&a, "CREATE TABLE t (g INT, v INT)").await;
    exec(&a, "INSERT INTO t SELECT i % 3, i FROM range(9) r(i)").await;
    exec(&a, &format!("CREATE MATERIALIZED VIEW tv AS {q}")).await;

    exec(&a, "BEGIN; SELECT count(*) FROM t").await;
    exec(&b, "UPDATE t SET v = v + 100 WHERE g = 1").await;
    exec(&a, "INSERT INTO t VALUES (1, 7), (5, 5)").await;
    exec(&a, "INSERT INTO t SELECT 6, v FROM t WHERE g = 0").await;
    let e = a
        .batch_execute("DELETE FROM t WHERE g = 1")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("40001"), "{e}");
    exec(&a, "ROLLBACK").await;
    exec(&a, "REFRESH MATERIALIZED VIEW tv").await;
    oracle(
        &a,
        "tv",
        q,
        "a rolled-back transaction with a stale snapshot",
    )
    .await;

    exec(&a, "BEGIN; SELECT count(*) FROM t").await;
    exec(&b, "DELETE FROM t WHERE g = 2").await;
    exec(&a, "INSERT INTO t VALUES (2, 1), (7, 7); COMMIT").await;
    exec(&a, "REFRESH MATERIALIZED VIEW tv").await;
    oracle(&a, "tv", q, "inserts committed with a stale snapshot").await;
}

/// A view with a final ORDER BY created in the same transaction as its table (several
/// statements in one `psql -c` run as one): the table is not committed when the definition is
/// analysed, and the view is still maintained without its ORDER BY, not recomputed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordered_view_created_with_its_table_is_incremental() {
    let server = TestServer::start();
    let c = server.client().await;
    let q = "SELECT g, sum(v) AS s, count(*) AS n FROM t GROUP BY g ORDER BY s DESC, g";
    exec(
        &c,
        &format!(
            "CREATE TABLE t (g INT, v INT); \
             INSERT INTO t SELECT i % 5, i FROM range(50) r(i); \
             CREATE MATERIALIZED VIEW o AS {q}"
        ),
    )
    .await;
    let strategy = dump(&c, "SELECT strategy FROM duckmv.views WHERE name = 'o'").await;
    assert!(strategy.starts_with("incremental"), "{strategy}");
    exec(
        &c,
        "INSERT INTO t VALUES (9, 1000), (1, -400); DELETE FROM t WHERE v % 7 = 0",
    )
    .await;
    exec(&c, "REFRESH MATERIALIZED VIEW o").await;
    oracle(&c, "o", q, "after a refresh").await;
    let mode = dump(
        &c,
        "SELECT last_refresh_mode FROM duckmv.views WHERE name = 'o'",
    )
    .await;
    assert_eq!(mode, "incremental");
    // The view's rows come in the ORDER BY's order.
    assert_eq!(
        dump(&c, "SELECT g FROM o").await,
        dump(&c, &format!("SELECT g FROM ({q})")).await
    );
}
