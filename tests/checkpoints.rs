//! The server checkpoints in quiet moments, once the write-ahead log is past half of
//! `--max-wal-size`, so that a client that pauses between statements never waits for a
//! checkpoint inside its commit; never while a session is working. Nothing committed is lost.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{assert_oracle, exec, text_rows, TestServer};

const VIEW: &str = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g";
const MIB: u64 = 1024 * 1024;
/// `--max-wal-size` of these tests: checkpoints in quiet moments from 8 MiB of log. (A commit
/// checkpoints when the log and DuckDB's estimate of what it adds pass the limit: with these
/// UPDATEs, at about half of a 4 MiB limit already.)
const LIMIT: &str = "16";
const HALF: u64 = 8 * MIB;

fn wal_bytes(db: &Path) -> u64 {
    let wal = format!("{}.wal", db.display());
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

/// Waits until the log is under `limit` bytes; false after `within`.
fn wal_under(db: &Path, limit: u64, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if wal_bytes(db) < limit {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn start(db: &Path, extra: &[&str]) -> TestServer {
    // The set-up CHECKPOINTs, which needs a superuser.
    let mut args = vec!["--max-wal-size", LIMIT, "--superuser", "test"];
    args.extend_from_slice(extra);
    TestServer::start_on_with_args(db, &args)
}

/// A server on a fresh file, its client, and the table and view every test writes and reads.
struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
    server: TestServer,
    c: tokio_postgres::Client,
}

async fn fixture(extra: &[&str]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ck.duckdb");
    let server = start(&db, extra);
    let c = server.client().await;
    setup(&c, &db).await;
    Fixture {
        _dir: dir,
        db,
        server,
        c,
    }
}

async fn setup(c: &tokio_postgres::Client, db: &Path) {
    exec(
        c,
        "CREATE TABLE t AS SELECT i AS k, i % 100 AS g, i % 7 AS v FROM range(200000) r(i)",
    )
    .await;
    exec(c, &format!("CREATE MATERIALIZED VIEW mv AS {VIEW}")).await;
    exec(c, "CHECKPOINT").await;
    assert!(
        wal_bytes(db) < HALF,
        "log at {} bytes after CHECKPOINT",
        wal_bytes(db)
    );
}

/// Small UPDATEs back to back until the log is past half the limit (and under the limit: no
/// commit checkpointed); returns how many ran.
async fn fill_past_half(c: &tokio_postgres::Client, db: &Path) -> usize {
    for i in 0..400 {
        exec(
            c,
            &format!("UPDATE t SET v = v + 1 WHERE k % 40 = {}", i % 40),
        )
        .await;
        let size = wal_bytes(db);
        if size >= HALF {
            assert!(
                size < 2 * HALF,
                "one UPDATE took the log from under 2 to {size} bytes"
            );
            return i + 1;
        }
    }
    panic!("400 UPDATEs left the log at {} bytes", wal_bytes(db));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quiet_moment_past_half_the_limit_checkpoints() {
    let Fixture {
        _dir,
        db,
        server,
        c,
    } = fixture(&[]).await;
    let updates = fill_past_half(&c, &db).await;
    // Nothing more is written: no commit would checkpoint before the log reached the limit.
    assert!(
        wal_under(&db, HALF, Duration::from_secs(10)),
        "no checkpoint in a quiet moment: log at {} bytes",
        wal_bytes(&db)
    );
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_oracle(&c, "mv", VIEW, "after a checkpoint in a quiet moment", &[]).await;
    drop(c);
    server.terminate();

    // Everything committed is in the file.
    let server = start(&db, &[]);
    let c = server.client().await;
    let expected = format!(
        "SELECT sum(i % 7 + CASE WHEN i % 40 < {updates} % 40 THEN {updates} / 40 + 1 \
         ELSE {updates} / 40 END) FROM range(200000) r(i)"
    );
    assert_eq!(
        text_rows(&c, "SELECT sum(v) FROM t").await,
        text_rows(&c, &expected).await
    );
    assert_oracle(&c, "mv", VIEW, "after a restart", &[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_checkpoint_while_a_session_works() {
    let Fixture {
        _dir,
        db,
        server,
        c,
    } = fixture(&[]).await;
    let busy = server.client().await;
    // About 5 s here: longer than filling the log and watching it for a second.
    let long = "SELECT sum(i % 7) FROM range(1000000000) r(i)";
    let running = tokio::spawn(async move { text_rows(&busy, long).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !running.is_finished(),
        "the long statement ended too soon to test anything"
    );
    fill_past_half(&c, &db).await;
    assert!(
        !running.is_finished(),
        "the long statement ended before the log was filled: nothing was tested"
    );
    let start = Instant::now();
    while !running.is_finished() && start.elapsed() < Duration::from_secs(1) {
        assert!(
            wal_bytes(&db) >= HALF,
            "checkpointed while a session was working"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(running.await.unwrap(), [["2999999997"]]);
    assert!(
        wal_under(&db, HALF, Duration::from_secs(10)),
        "no checkpoint once the session stopped: log at {} bytes",
        wal_bytes(&db)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn commit_checkpoints_leave_quiet_moments_alone() {
    let Fixture {
        _dir,
        db,
        server: _server,
        c,
    } = fixture(&["--commit-checkpoints"]).await;
    fill_past_half(&c, &db).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        wal_bytes(&db) >= HALF,
        "checkpointed with --commit-checkpoints"
    );
}
