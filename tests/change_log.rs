//! One change log per table, read by every view over it: many views over one table, refreshed
//! at different times (so each is at its own position in the log), created and dropped while
//! others have changes pending, under seeded random DML and concurrent writers — with the
//! oracle after each refresh: the view equals its defining query run fresh, as bags.

mod common;

use common::rng::Rng;
use common::{assert_oracle, dump, exec, TestServer};
use tokio_postgres::Client;

async fn oracle(c: &Client, view: &str, query: &str, context: &str) {
    assert_oracle(c, view, query, context, &["t", "d"]).await;
}

/// The `i`th view over table t(k, g, v, s) (and d(g, label) for the joins): aggregates,
/// MIN/MAX, DISTINCT, filters, a join, each with its own parameter so no two are alike.
fn view_query(i: usize) -> String {
    let m = i % 5 + 2;
    match i % 8 {
        0 => {
            format!("SELECT g % {m} AS gm, count(*) AS n, sum(v) AS total FROM t GROUP BY g % {m}")
        }
        1 => format!("SELECT g, min(v) AS lo, max(v) AS hi FROM t WHERE k > {i} GROUP BY g"),
        2 => format!("SELECT k, v FROM t WHERE v > {}", i * 3),
        3 => "SELECT DISTINCT g, s FROM t".to_string(),
        4 => format!("SELECT count(*) AS n, avg(v) AS av FROM t WHERE g <> {m}"),
        5 => format!(
            "SELECT t.k, d.label FROM t JOIN d ON t.g = d.g WHERE t.v < {}",
            50 + i
        ),
        6 => format!(
            "SELECT s, count(DISTINCT g) AS gs FROM t GROUP BY s HAVING count(*) > {}",
            i % 3
        ),
        _ => format!("SELECT g, sum(v) FILTER (WHERE k % {m} = 0) AS part FROM t GROUP BY g"),
    }
}

impl Rng {
    fn maybe_null(&mut self, range: u64) -> String {
        if self.below(9) == 0 {
            "NULL".into()
        } else {
            self.below(range).to_string()
        }
    }
}

/// One random change, most of them to t: single rows, bulk rows, updates that move rows between
/// groups, deletes; now and then a change to the join's dimension table.
fn random_dml(r: &mut Rng) -> String {
    let row = |r: &mut Rng| {
        format!(
            "({}, {}, {}, 's{}')",
            r.below(40),
            r.maybe_null(6),
            r.maybe_null(100),
            r.below(4)
        )
    };
    match r.below(10) {
        0..=2 => format!("INSERT INTO t VALUES {}", row(r)),
        3 => format!(
            "INSERT INTO t SELECT range % 40, range % 6, (range * {}) % 100, 's' || (range % 4) FROM range({})",
            r.below(7) + 1,
            r.below(30) + 1
        ),
        4 => format!("UPDATE t SET g = {} WHERE k = {}", r.maybe_null(6), r.below(40)),
        5 => format!("UPDATE t SET v = v + {} WHERE g = {}", r.below(9) - 4, r.below(6)),
        6 => format!("DELETE FROM t WHERE k = {}", r.below(40)),
        7 => format!("DELETE FROM t WHERE v > {}", 90 + r.below(10)),
        8 => format!("INSERT INTO d VALUES ({}, 'l{}')", r.below(6), r.below(3)),
        _ => format!("DELETE FROM d WHERE g = {}", r.below(6)),
    }
}

async fn setup(c: &Client, r: &mut Rng) {
    exec(
        c,
        "CREATE TABLE t (k INT, g INT, v INT, s VARCHAR); CREATE TABLE d (g INT, label VARCHAR)",
    )
    .await;
    for _ in 0..20 {
        exec(c, &random_dml(r)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_views_over_one_table_stay_exact_under_random_dml() {
    let server = TestServer::start();
    let c = server.client().await;
    let mut r = Rng(0x5DEE_CE66_D1CE_4E5B);
    setup(&c, &mut r).await;
    let mut views: Vec<(String, String)> = Vec::new();
    for i in 0..40 {
        views.push((format!("mv{i}"), view_query(i)));
    }
    // Two views over views: their refreshes read the change log an upstream refresh appends.
    views.push(("over0".into(), "SELECT gm, n FROM mv0 WHERE n > 1".into()));
    views.push(("over3".into(), "SELECT g FROM mv3 WHERE s <> 's0'".into()));
    for (name, q) in &views {
        exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
        oracle(&c, name, q, "create").await;
    }
    for round in 0..16 {
        for _ in 0..1 + r.below(4) {
            let sql = match r.below(6) {
                0 => format!(
                    "BEGIN; {}; {}; ROLLBACK",
                    random_dml(&mut r),
                    random_dml(&mut r)
                ),
                1 => format!(
                    "BEGIN; {}; {}; COMMIT",
                    random_dml(&mut r),
                    random_dml(&mut r)
                ),
                _ => random_dml(&mut r),
            };
            exec(&c, &sql).await;
        }
        if round == 5 {
            // Created while the others have changes pending: it starts at the log's end.
            let q = view_query(41);
            exec(&c, &format!("CREATE MATERIALIZED VIEW late AS {q}")).await;
            views.push(("late".into(), q));
        }
        if round == 9 {
            // Dropped while its changes are pending: the log keeps serving the others.
            exec(&c, "DROP MATERIALIZED VIEW mv17").await;
            views.retain(|(n, _)| n != "mv17");
        }
        // Each round refreshes a different subset, upstream views before their readers.
        for (name, q) in &views {
            if r.below(3) == 0 {
                continue;
            }
            exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
            oracle(&c, name, q, &format!("round {round}")).await;
        }
    }
    for (name, q) in &views {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        oracle(&c, name, q, "the last refresh").await;
        let pending = dump(
            &c,
            &format!("SELECT pending FROM duckmv.views WHERE name = '{name}'"),
        )
        .await;
        // NULL: a view refreshed by full recompute, which reads no log.
        assert!(
            pending == "NULL" || pending.split(", ").all(|p| p.ends_with(":0")),
            "{name} still has changes pending after its refresh: {pending}"
        );
    }
}

/// Writers in autocommit and in blocks that commit or roll back, while two sessions refresh
/// different views over the same table: every view ends exact, so no refresh skipped a change
/// committed after its snapshot and none applied one twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_and_refreshes_share_the_log_exactly() {
    let server = TestServer::start();
    let c = server.client().await;
    let mut r = Rng(0xA076_1D64_78BD_642F);
    setup(&c, &mut r).await;
    let views: Vec<(String, String)> = (0..12).map(|i| (format!("cv{i}"), view_query(i))).collect();
    for (name, q) in &views {
        exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
    }
    let mut writers = Vec::new();
    for seed in 1..=3u64 {
        let w = server.client().await;
        writers.push(tokio::spawn(async move {
            let mut r = Rng(seed * 104_729);
            for i in 0..30 {
                let sql = match i % 3 {
                    0 => random_dml(&mut r),
                    1 => format!(
                        "BEGIN; {}; {}; COMMIT",
                        random_dml(&mut r),
                        random_dml(&mut r)
                    ),
                    _ => format!("BEGIN; {}; ROLLBACK", random_dml(&mut r)),
                };
                w.batch_execute(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut refreshers = Vec::new();
    for half in 0..2 {
        let rc = server.client().await;
        let stop = stop.clone();
        let names: Vec<String> = views
            .iter()
            .skip(half)
            .step_by(2)
            .map(|(n, _)| n.clone())
            .collect();
        refreshers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for v in &names {
                    rc.batch_execute(&format!("REFRESH MATERIALIZED VIEW {v}"))
                        .await
                        .unwrap_or_else(|e| panic!("refresh {v}: {e}"));
                }
                n += 1;
            }
            n
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in refreshers {
        let n = t.await.unwrap();
        assert!(n > 1, "a refresher ran {n} times");
    }
    for (name, q) in &views {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        oracle(&c, name, q, "concurrent writers and refreshes").await;
    }
}

/// A writer that opened its transaction and wrote before a refresh, and commits after it, while
/// a second writer waits for the first (writers of a table views read take turns, so log
/// positions follow commit order): the refresh in between takes neither, the next takes both,
/// once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_committing_writer_is_neither_skipped_nor_applied_twice() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (k INT, g INT, v INT, s VARCHAR); CREATE TABLE d (g INT, label VARCHAR)",
    )
    .await;
    let q = "SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g";
    exec(&c, &format!("CREATE MATERIALIZED VIEW late_mv AS {q}")).await;
    let first = server.client().await;
    exec(&first, "BEGIN; INSERT INTO t VALUES (1, 1, 10, 'a')").await;
    let second = server.client().await;
    let waiting = tokio::spawn(async move {
        second
            .batch_execute("INSERT INTO t VALUES (2, 2, 20, 'b')")
            .await
            .unwrap();
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !waiting.is_finished(),
        "the second writer did not wait for the first"
    );
    exec(&c, "REFRESH MATERIALIZED VIEW late_mv").await;
    exec(&first, "INSERT INTO t VALUES (3, 1, 30, 'c'); COMMIT").await;
    waiting.await.unwrap();
    exec(&c, "REFRESH MATERIALIZED VIEW late_mv").await;
    oracle(&c, "late_mv", q, "a late-committing writer").await;
    assert_eq!(
        dump(&c, "SELECT * FROM late_mv ORDER BY g").await,
        "1|2|40\n2|1|20"
    );
}

/// Two refreshes of one view that read different changes cannot both commit. The first
/// session's refresh reads its own uncommitted insert into `t`; the second's reads an insert
/// into `d` committed after the first's snapshot, which the first cannot see. Both append to
/// the view's change log, which the view over it reads: if both committed, the later-committing
/// one's positions would come before the other's, and the view over it, refreshed in between,
/// would skip them for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_refreshes_of_one_view_never_both_commit() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (k INT, g INT, v INT, s VARCHAR); CREATE TABLE d (g INT, label VARCHAR); \
         INSERT INTO t VALUES (1, 1, 10, 'a'), (2, 2, 20, 'b'); INSERT INTO d VALUES (1, 'one')",
    )
    .await;
    let up = "SELECT t.k, t.g, d.label FROM t JOIN d ON t.g = d.g";
    let down = "SELECT g, count(*) AS n FROM up GROUP BY g";
    exec(&c, &format!("CREATE MATERIALIZED VIEW up AS {up}")).await;
    exec(&c, &format!("CREATE MATERIALIZED VIEW down AS {down}")).await;

    let first = server.client().await;
    exec(&first, "BEGIN; SELECT count(*) FROM d").await;
    exec(&c, "INSERT INTO d VALUES (2, 'two')").await;
    exec(&first, "INSERT INTO t VALUES (3, 1, 30, 'c')").await;
    exec(&first, "REFRESH MATERIALIZED VIEW up").await;
    let second = server.client().await;
    let second_refresh = second.batch_execute("REFRESH MATERIALIZED VIEW up").await;
    exec(&c, "REFRESH MATERIALIZED VIEW down").await;
    let first_commit = first.batch_execute("COMMIT").await;
    assert!(
        second_refresh.is_err() || first_commit.is_err(),
        "both refreshes committed"
    );
    exec(&c, "REFRESH MATERIALIZED VIEW up").await;
    exec(&c, "REFRESH MATERIALIZED VIEW down").await;
    oracle(&c, "up", up, "two concurrent refreshes").await;
    oracle(
        &c,
        "down",
        down,
        "two concurrent refreshes of the view it reads",
    )
    .await;
}

/// Changes that cancel inside one refresh's range — rows inserted then deleted, an UPDATE that
/// writes rows back as they were or changes only a column no view reads, a group's maximum
/// deleted and inserted again — never reach the delta queries of views that would carry them
/// through a join or recompute a group for them: those views read the log consolidated. Kept
/// extremes net them per value themselves and read the rows as they are. Every view stays
/// exact.
#[tokio::test]
async fn cancelling_changes_never_reach_the_delta_queries() {
    let server = TestServer::start();
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (k INT, g INT, v INT, s VARCHAR); CREATE TABLE d (g INT, label VARCHAR); \
         INSERT INTO t SELECT range, range % 6, range % 100, 's' || (range % 4) FROM range(200); \
         INSERT INTO d SELECT range, 'l' || range FROM range(6)",
    )
    .await;
    let views = [
        ("joined", "SELECT t.k, d.label FROM t JOIN d ON t.g = d.g"),
        (
            "extremes",
            "SELECT g, min(v) AS lo, max(v) AS hi FROM t GROUP BY g",
        ),
        ("sums", "SELECT g, sum(v) AS total FROM t GROUP BY g"),
        ("middles", "SELECT g, median(v) AS mid FROM t GROUP BY g"),
    ];
    for (name, q) in views {
        exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
    }
    for sql in [
        "INSERT INTO t SELECT range + 1000, range % 6, 50, 'x' FROM range(50)",
        "DELETE FROM t WHERE k >= 1000",
        "UPDATE t SET v = v WHERE g = 1",
        // No view reads s: the log leaves it out, so these rows are logged as they were.
        "UPDATE t SET s = 'changed' WHERE k < 100",
        // Rows 99 and 199 hold the maximum of groups 3 and 1.
        "DELETE FROM t WHERE k IN (99, 199)",
        "INSERT INTO t VALUES (99, 3, 99, 's3'), (199, 1, 99, 's3')",
    ] {
        exec(&c, sql).await;
    }
    let logged = dump(
        &c,
        "SELECT string_agg(column_name, ',' ORDER BY column_index) FROM duckdb_columns() \
         WHERE schema_name = '_duckmv' AND table_name = (SELECT split_part(log_table, '.', 2) \
         FROM _duckmv.change_logs WHERE source_name = 't') AND column_name NOT LIKE '\\_mv\\_%' ESCAPE '\\'",
    )
    .await;
    assert_eq!(
        logged, "k,g,v",
        "the log of t carries the columns views read"
    );
    for (name, summed) in [("joined", true), ("middles", true), ("extremes", false)] {
        let pending = dump(
            &c,
            &format!("SELECT pending FROM duckmv.views WHERE name = '{name}'"),
        )
        .await;
        assert!(
            pending.contains("main.t:") && !pending.contains("main.t:0"),
            "{name}: the log holds the changes: {pending}"
        );
        let reader = dump(
            &c,
            &format!(
                "SELECT r.reader FROM _duckmv.log_readers r JOIN _duckmv.views v \
                 ON v.id = r.view_id WHERE v.name = '{name}' AND r.reader LIKE '%\\_t' ESCAPE '\\'"
            ),
        )
        .await;
        let seen = dump(&c, &format!("SELECT count(*) FROM {reader}")).await;
        if summed {
            assert_eq!(seen, "0", "{name} reads cancelled changes through {reader}");
        } else {
            // Kept extremes net the rows themselves: the log's rows reach them as they are.
            assert_ne!(seen, "0", "{name} reads its change summed through {reader}");
        }
    }
    for (name, q) in views {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        oracle(&c, name, q, "after cancelling changes").await;
    }
    exec(
        &c,
        "DELETE FROM t WHERE k = 199; UPDATE t SET v = 0 WHERE k = 5",
    )
    .await;
    for (name, q) in views {
        exec(&c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        oracle(&c, name, q, "after changes that do not cancel").await;
    }
}
