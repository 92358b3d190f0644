//! Sessions under load: 32 concurrent clients, a long query that must not
//! stall other sessions, and a large result that must stream.
//!
//! These tests measure time and memory, so they take a lock and run one at a
//! time even when the test harness runs tests in parallel.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{pin_mut, TryStreamExt};
use tokio_postgres::types::ToSql;

use common::TestServer;

/// The load tests measure time and memory: they run one at a time. An
/// async mutex, because the guard lives across awaits.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_write_and_read_at_once() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start();
    let setup = server.client().await;
    setup
        .batch_execute("create table events(client integer, n integer, note text)")
        .await
        .unwrap();

    const CLIENTS: i32 = 32;
    const WRITES: i32 = 5;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(server.client().await);
    }
    // Everyone starts together so the sessions really overlap.
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS as usize));
    let mut tasks = Vec::new();
    for (i, mut c) in clients.into_iter().enumerate() {
        let i = i as i32;
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let insert = c.prepare("insert into events values ($1, $2, $3)").await?;
            for n in 0..WRITES {
                c.execute(&insert, &[&i, &n, &format!("client {i} write {n}")])
                    .await?;
            }
            // A transaction per client too.
            let tx = c.transaction().await?;
            tx.execute(&insert, &[&i, &WRITES, &"in tx"]).await?;
            tx.commit().await?;
            let row = c
                .query_one(
                    "select count(*), sum(n)::bigint from events where client = $1",
                    &[&i],
                )
                .await?;
            let (count, sum): (i64, i64) = (row.get(0), row.get(1));
            Ok::<_, tokio_postgres::Error>((i, count, sum))
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        match t.await.expect("client task panicked") {
            Ok((i, count, sum)) => {
                if count != (WRITES + 1) as i64 || sum != (0..=WRITES).sum::<i32>() as i64 {
                    failures.push(format!("client {i}: count {count}, sum {sum}"));
                }
            }
            Err(e) => failures.push(format!("{e:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} clients failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let total: i64 = setup
        .query_one("select count(*) from events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, (CLIENTS * (WRITES + 1)) as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_query_does_not_stall_other_sessions() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start();
    let long_client = server.client().await;
    let quick = server.client().await;
    quick.query_one("select 1", &[]).await.unwrap();

    // A few seconds of CPU work that DuckDB cannot optimize away.
    let long = tokio::spawn(async move {
        let start = Instant::now();
        long_client
            .query_one(
                "select count(*) from range(500000000) r(i) where hash(i) % 7 = 3",
                &[],
            )
            .await
            .map(|_| start.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut latencies = Vec::new();
    while !long.is_finished() && latencies.len() < 20 {
        let t = Instant::now();
        let row = quick.query_one("select 41 + 1", &[]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 42);
        // Only count answers that came back while the long query still ran.
        if !long.is_finished() {
            latencies.push(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let long_took = long.await.unwrap().expect("long query");
    assert!(
        long_took > Duration::from_secs(1),
        "the long query took only {long_took:?}; make it longer so this test means something"
    );
    assert!(
        latencies.len() >= 3,
        "only {} quick queries answered during the {long_took:?} long query",
        latencies.len()
    );
    let worst = latencies.iter().max().unwrap();
    assert!(
        *worst < Duration::from_millis(500) && *worst < long_took / 4,
        "a quick query took {worst:?} while a {long_took:?} query ran: {latencies:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_result_streams_without_buffering() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start();
    let c = server.client().await;
    c.query_one("select 1", &[]).await.unwrap();
    let baseline_kib = server.rss_kib();

    const ROWS: i64 = 2_000_000;
    const WIDTH: usize = 200;
    let sql = format!("select i::bigint, repeat('x', {WIDTH}) from range({ROWS}) r(i)");
    let params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    let stream = c.query_raw(sql.as_str(), params).await.unwrap();
    pin_mut!(stream);

    let (mut rows, mut bytes, mut last, mut peak_kib) = (0i64, 0usize, -1i64, baseline_kib);
    while let Some(row) = stream.try_next().await.unwrap() {
        let i: i64 = row.get(0);
        let s: &str = row.get(1);
        assert_eq!(s.len(), WIDTH);
        rows += 1;
        bytes += 8 + s.len();
        last = last.max(i);
        if rows % 50_000 == 0 {
            peak_kib = peak_kib.max(server.rss_kib());
        }
    }
    assert_eq!(rows, ROWS);
    assert_eq!(last, ROWS - 1);

    let growth_mib = peak_kib.saturating_sub(baseline_kib) / 1024;
    let result_mib = (bytes / (1024 * 1024)) as u64;
    assert!(
        growth_mib < result_mib / 4,
        "server memory grew by {growth_mib} MiB while streaming a {result_mib} MiB result \
         (baseline {} MiB, peak {} MiB): rows are being buffered",
        baseline_kib / 1024,
        peak_kib / 1024
    );
}

/// Preparing statements leaks nothing: the column names DuckDB allocates for a prepared
/// statement are freed (they were not: every prepare of a wide query leaked its names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preparing_statements_does_not_grow_the_server() {
    let _serial = SERIAL.lock().await;
    let server = TestServer::start();
    let c = server.client().await;
    let cols: Vec<String> = (0..500)
        .map(|i| format!("{i} AS a_rather_long_column_name_number_{i}"))
        .collect();
    let sql = format!("SELECT {}", cols.join(", "));
    for _ in 0..300 {
        c.prepare(&sql).await.unwrap();
    }
    let baseline_kib = server.rss_kib();
    for _ in 0..2_000 {
        c.prepare(&sql).await.unwrap();
    }
    let grown = server.rss_kib().saturating_sub(baseline_kib);
    // Leaking the names would take 2,000 x 500 x ~45 bytes, about 44 MB.
    assert!(grown < 15_000, "the server grew by {grown} KiB");
}
