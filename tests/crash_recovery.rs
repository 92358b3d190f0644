//! `kill -9` at any moment loses nothing acknowledged and keeps nothing rolled back.
//!
//! Each cycle starts the server on the same file; writers commit numbered rows (plain INSERT,
//! COPY FROM STDIN, deletes of their own earlier rows, and transactions they roll back) and record
//! what the server acknowledged; a bulk writer runs large INSERT … SELECTs; a refresher refreshes
//! the views; another session creates and drops a view and checkpoints. The server is killed with
//! SIGKILL at a random moment, restarted, and checked: every acknowledged insert is there unless
//! an acknowledged delete removed it, nothing rolled back is there, only the transaction in flight
//! at the kill is uncertain, and every view refreshes to exactly its query.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::rng::Rng;
use common::{bag_difference, exec, text_rows, TestServer};
use futures::SinkExt;
use tokio_postgres::Client;

const VIEWS: &[(&str, &str)] = &[
    ("per_writer", "SELECT writer, count(*) AS n, sum(seq) AS s, max(seq) AS hi FROM w GROUP BY writer"),
    ("bulk_total", "SELECT count(*) AS n, sum(x) AS s FROM bulk"),
    ("joined", "SELECT w.writer, count(*) AS n FROM w JOIN tags t ON t.writer = w.writer GROUP BY w.writer"),
    ("distinct_mod", "SELECT DISTINCT seq % 10 AS m FROM w"),
];

/// What one writer knows about its rows.
#[derive(Default)]
struct Ledger {
    /// Inserts the server acknowledged.
    inserted: BTreeSet<i64>,
    /// Deletes the server acknowledged.
    deleted: BTreeSet<i64>,
    /// Inserts of transactions the writer rolled back (or that failed).
    rolled_back: BTreeSet<i64>,
    /// What the transaction in flight at the kill would have done: (inserted, deleted).
    in_flight: (Vec<i64>, Vec<i64>),
    next: i64,
}

/// Runs transactions until the server goes away; records everything acknowledged.
async fn writer(c: Client, id: i64, ledger: Arc<Mutex<Ledger>>, seed: u64) {
    let mut r = Rng(seed);
    loop {
        let (ins, del): (Vec<i64>, Vec<i64>) = {
            let mut l = ledger.lock().unwrap();
            let n = 1 + r.below(3);
            let ins: Vec<i64> = (l.next..l.next + n).collect();
            l.next += n;
            let live: Vec<i64> = l.inserted.difference(&l.deleted).copied().collect();
            let del = if !live.is_empty() && r.below(4) == 0 {
                vec![live[r.below(live.len() as u64) as usize]]
            } else {
                Vec::new()
            };
            l.in_flight = (ins.clone(), del.clone());
            (ins, del)
        };
        let rollback = r.below(6) == 0;
        let use_copy = r.below(3) == 0;
        let result = async {
            c.batch_execute("BEGIN").await?;
            if use_copy {
                let sink = c.copy_in("COPY w (writer, seq) FROM STDIN").await?;
                let body: String = ins.iter().map(|s| format!("{id}\t{s}\n")).collect();
                let mut sink = Box::pin(sink);
                sink.send(bytes::Bytes::from(body)).await?;
                sink.as_mut().finish().await?;
            } else {
                let values: Vec<String> = ins.iter().map(|s| format!("({id}, {s})")).collect();
                c.batch_execute(&format!(
                    "INSERT INTO w (writer, seq) VALUES {}",
                    values.join(",")
                ))
                .await?;
            }
            for d in &del {
                c.batch_execute(&format!("DELETE FROM w WHERE writer = {id} AND seq = {d}"))
                    .await?;
            }
            c.batch_execute(if rollback { "ROLLBACK" } else { "COMMIT" })
                .await
        }
        .await;
        let refused = match &result {
            // The connection broke: the server is gone, and this transaction is uncertain.
            Err(e) if e.as_db_error().is_none() => return,
            // Refused by the server (a serialization failure): nothing of it stays.
            Err(_) => true,
            Ok(()) => false,
        };
        {
            let mut l = ledger.lock().unwrap();
            if refused || rollback {
                l.rolled_back.extend(&ins);
            } else {
                l.inserted.extend(&ins);
                l.deleted.extend(&del);
            }
            l.in_flight = (Vec::new(), Vec::new());
        }
        if refused {
            let _ = c.batch_execute("ROLLBACK").await;
        }
    }
}

/// Large writes, refreshes, DDL and checkpoints, until the server goes away.
async fn background(c: Client, seed: u64) {
    let mut r = Rng(seed);
    loop {
        let sql = match r.below(6) {
            0 => "INSERT INTO bulk SELECT range, range % 7 FROM range(5000)".to_string(),
            1 => "CREATE MATERIALIZED VIEW IF NOT EXISTS tmp_mv AS SELECT writer, count(*) AS n FROM w GROUP BY writer".into(),
            2 => "DROP MATERIALIZED VIEW IF EXISTS tmp_mv".into(),
            3 => "CHECKPOINT".into(),
            _ => format!("REFRESH MATERIALIZED VIEW {}", VIEWS[r.below(VIEWS.len() as u64) as usize].0),
        };
        match c.batch_execute(&sql).await {
            Ok(()) => {}
            Err(e) if e.as_db_error().is_some() => {}
            Err(_) => return,
        }
        // Leave the writers room: they are what the test counts.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ids(rows: Vec<Vec<String>>) -> BTreeSet<i64> {
    rows.into_iter().map(|r| r[0].parse().unwrap()).collect()
}

async fn check(c: &Client, ledgers: &[Arc<Mutex<Ledger>>], cycle: usize) {
    for (id, ledger) in ledgers.iter().enumerate() {
        let present = ids(text_rows(c, &format!("SELECT seq FROM w WHERE writer = {id}")).await);
        let mut l = ledger.lock().unwrap();
        let (maybe_ins, maybe_del) = &l.in_flight;
        for s in l.inserted.difference(&l.deleted) {
            assert!(
                present.contains(s) || maybe_del.contains(s),
                "cycle {cycle}: writer {id}'s acknowledged row {s} was lost"
            );
        }
        for s in &present {
            let expected =
                (l.inserted.contains(s) && !l.deleted.contains(s)) || maybe_ins.contains(s);
            assert!(
                expected,
                "cycle {cycle}: writer {id}'s row {s} is there although it was {}",
                if l.rolled_back.contains(s) {
                    "rolled back"
                } else if l.deleted.contains(s) {
                    "deleted"
                } else {
                    "never committed"
                }
            );
        }
        // The uncertain transaction either committed whole or not at all; now it is known.
        let (maybe_ins, maybe_del) = std::mem::take(&mut l.in_flight);
        let committed = maybe_ins.iter().any(|s| present.contains(s))
            || (maybe_ins.is_empty() && maybe_del.iter().any(|s| !present.contains(s)));
        if committed {
            assert!(
                maybe_ins.iter().all(|s| present.contains(s))
                    && maybe_del.iter().all(|s| !present.contains(s)),
                "cycle {cycle}: writer {id}'s last transaction was applied in part"
            );
            l.inserted.extend(maybe_ins);
            l.deleted.extend(maybe_del);
        } else {
            l.rolled_back.extend(maybe_ins);
        }
    }
    let mut views: Vec<(String, String)> = VIEWS
        .iter()
        .map(|(n, q)| (n.to_string(), q.to_string()))
        .collect();
    if !text_rows(c, "SELECT 1 FROM duckmv.views WHERE name = 'tmp_mv'")
        .await
        .is_empty()
    {
        views.push((
            "tmp_mv".into(),
            "SELECT writer, count(*) AS n FROM w GROUP BY writer".into(),
        ));
    }
    for (name, q) in &views {
        exec(c, &format!("REFRESH MATERIALIZED VIEW {name}")).await;
        let n = bag_difference(c, name, q).await;
        assert_eq!(
            n, 0,
            "cycle {cycle}: {name} differs from its query by {n} rows"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_loses_no_acknowledged_commit() {
    let cycles: usize = std::env::var("CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.duckdb");
    let ledgers: Vec<Arc<Mutex<Ledger>>> = (0..3).map(|_| Arc::default()).collect();
    let mut r = Rng(0xdead_beef_1234_5678);
    for cycle in 0..cycles {
        // A superuser, so the checkpoints run.
        let server = TestServer::start_on_with_args(&db, &["--superuser", "test"]);
        let c = server.client().await;
        if cycle == 0 {
            exec(
                &c,
                "CREATE TABLE w (writer INT, seq BIGINT, payload VARCHAR DEFAULT 'x');
                 CREATE TABLE bulk (x BIGINT, g INT);
                 CREATE TABLE tags (writer INT, tag VARCHAR);
                 INSERT INTO tags VALUES (0, 'a'), (1, 'b'), (2, 'c'), (1, 'd');",
            )
            .await;
            for (name, q) in VIEWS {
                exec(&c, &format!("CREATE MATERIALIZED VIEW {name} AS {q}")).await;
            }
        } else {
            check(&c, &ledgers, cycle).await;
        }
        let mut tasks = Vec::new();
        for (id, ledger) in ledgers.iter().enumerate() {
            let wc = server.client().await;
            let seed = r.next();
            tasks.push(tokio::spawn(writer(wc, id as i64, ledger.clone(), seed)));
        }
        for _ in 0..2 {
            let bc = server.client().await;
            tasks.push(tokio::spawn(background(bc, r.next())));
        }
        // Kill only once work is under way (however loaded the machine), at a random moment.
        let acked = || -> usize {
            ledgers
                .iter()
                .map(|l| l.lock().unwrap().inserted.len())
                .sum()
        };
        let before = acked();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while acked() < before + 5 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(r.below(800) as u64)).await;

        // SAFETY: kill(2) on the server process this test started.
        unsafe { libc::kill(server.pid as libc::pid_t, libc::SIGKILL) };
        for t in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
        }
        drop(server);
    }
    let server = TestServer::start_with(&db);
    let c = server.client().await;
    check(&c, &ledgers, cycles).await;
    let acked: usize = ledgers
        .iter()
        .map(|l| l.lock().unwrap().inserted.len())
        .sum();
    assert!(
        acked > 50,
        "only {acked} rows were acknowledged in {cycles} cycles"
    );
}

/// The COPY spool directories in `tmp`, by name.
fn spools(tmp: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("duckmv-spool-"))
        .collect()
}

fn spool_of(tmp: &std::path::Path, server: &TestServer) -> String {
    let prefix = format!("duckmv-spool-{}-", server.pid);
    let mine: Vec<String> = spools(tmp)
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert_eq!(mine.len(), 1, "spools of pid {}: {mine:?}", server.pid);
    mine[0].clone()
}

/// A server killed in the middle of a COPY cannot remove its spool directory, which holds the
/// rows copied so far. The next server to start in the same temporary directory removes it, and
/// leaves alone the spool of a server that is still running.
#[tokio::test(flavor = "multi_thread")]
async fn the_next_start_removes_a_killed_servers_copy_spool() {
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().to_str().unwrap())];
    let killed = TestServer::start_with_args_env(&[], &env);
    let dead = tmp.path().join(spool_of(tmp.path(), &killed));
    let c = killed.client().await;
    exec(&c, "CREATE TABLE t (x int)").await;
    let mut sink = Box::pin(c.copy_in("COPY t FROM STDIN").await.unwrap());
    sink.send(bytes::Bytes::from("1\n2\n")).await.unwrap();
    let spooled = || {
        std::fs::read_dir(&dead)
            .map(|d| d.flatten().any(|e| e.file_name() != ".lock"))
            .unwrap_or(false)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !spooled() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(spooled(), "the COPY spooled no file in {}", dead.display());
    drop(sink);
    drop(killed); // SIGKILL
    assert!(dead.exists(), "a killed server cannot remove its spool");

    let running = TestServer::start_with_args_env(&[], &env);
    let live = spool_of(tmp.path(), &running);
    assert_eq!(spools(tmp.path()), BTreeSet::from([live.clone()]));

    let next = TestServer::start_with_args_env(&[], &env);
    let other = spool_of(tmp.path(), &next);
    assert_eq!(spools(tmp.path()), BTreeSet::from([live.clone(), other]));
    next.terminate();
    assert_eq!(spools(tmp.path()), BTreeSet::from([live]));
    // The running server's spool still works.
    let c = running.client().await;
    exec(&c, "CREATE TABLE t (x int)").await;
    let mut sink = Box::pin(c.copy_in("COPY t FROM STDIN").await.unwrap());
    sink.send(bytes::Bytes::from("1\n2\n")).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
}
