//! The server checkpoints in the background, not inside the commit that takes the write-ahead
//! log past `--max-wal-size`; commits checkpoint again only when writers leave no time
//! between them. Nothing committed is lost either way.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{assert_oracle, exec, text_rows, TestServer};

const VIEW: &str = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g";

fn wal_bytes(db: &Path) -> u64 {
    let wal = format!("{}.wal", db.display());
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

const MIB: u64 = 1024 * 1024;

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

async fn setup(c: &tokio_postgres::Client) {
    exec(
        c,
        "CREATE TABLE t AS SELECT i AS k, i % 100 AS g, i % 7 AS v FROM range(200000) r(i)",
    )
    .await;
    exec(c, &format!("CREATE MATERIALIZED VIEW mv AS {VIEW}")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_commit_that_crosses_the_limit_does_not_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ck.duckdb");
    let server = TestServer::start_on_with_args(&db, &["--max-wal-size", "1"]);
    let c = server.client().await;
    setup(&c).await;
    assert!(
        wal_under(&db, MIB, Duration::from_secs(10)),
        "no checkpoint after set-up"
    );
    // One commit writes several MiB of log: DuckDB would checkpoint inside it.
    exec(&c, "UPDATE t SET v = v + 1").await;
    let after_commit = wal_bytes(&db);
    assert!(
        after_commit >= MIB,
        "the UPDATE's commit checkpointed (log at {after_commit} bytes right after it)"
    );
    assert!(
        wal_under(&db, MIB, Duration::from_secs(10)),
        "the background did not checkpoint: log at {} bytes",
        wal_bytes(&db)
    );
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_oracle(&c, "mv", VIEW, "after a background checkpoint", &[]).await;
    drop(c);
    server.terminate();

    // Everything committed is in the file.
    let server = TestServer::start_on_with_args(&db, &["--max-wal-size", "1"]);
    let c = server.client().await;
    let sum = text_rows(&c, "SELECT sum(v) FROM t").await;
    let expected = text_rows(&c, "SELECT sum(i % 7 + 1) FROM range(200000) r(i)").await;
    assert_eq!(sum, expected);
    assert_oracle(&c, "mv", VIEW, "after a restart", &[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn commits_checkpoint_again_when_writers_leave_no_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ck.duckdb");
    let server = TestServer::start_on_with_args(&db, &["--max-wal-size", "1"]);
    let c = server.client().await;
    setup(&c).await;
    exec(&c, "CREATE TABLE other (x INT)").await;
    assert!(
        wal_under(&db, MIB, Duration::from_secs(10)),
        "no checkpoint after set-up"
    );

    // A write transaction left open keeps every checkpoint out, the background's and commits'.
    let holder = server.client().await;
    exec(&holder, "BEGIN").await;
    exec(&holder, "INSERT INTO other VALUES (1)").await;
    for _ in 0..3 {
        exec(&c, "UPDATE t SET v = v + 1").await;
    }
    let grown = wal_bytes(&db);
    assert!(grown >= 2 * MIB, "log at {grown} bytes");
    let start = Instant::now();
    while !server.log().contains("commits checkpoint again") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the server did not hand checkpoints back to commits; log:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    exec(&holder, "COMMIT").await;
    assert!(
        wal_under(&db, MIB, Duration::from_secs(10)),
        "no checkpoint once the writer ended: log at {} bytes",
        wal_bytes(&db)
    );
    exec(&c, "REFRESH MATERIALIZED VIEW mv").await;
    assert_oracle(&c, "mv", VIEW, "after the writer ended", &[]).await;
    assert_eq!(text_rows(&c, "SELECT count(*) FROM other").await, [["1"]]);
}
