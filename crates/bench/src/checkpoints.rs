//! `duckmv-bench --checkpoints` (issue 16, "checkpoints moved off the refresh path"): where
//! DuckDB's checkpoints land. The same write-and-refresh cycles (an UPDATE of a slice of a
//! table, then REFRESH of a grouped view over it) run against a server that also checkpoints
//! in quiet moments and one started with `--commit-checkpoints` (only inside the commit that
//! takes the log past its limit, as DuckDB does), one after the other in one run: once with a
//! pause between cycles, as interactive clients leave, once without. A statement during which
//! the log file shrank ran beside (or inside) a checkpoint.

use std::path::Path;
use std::time::Duration;

use tokio_postgres::Client;

use crate::cli::Args;
use crate::error::BenchError;
use crate::measure::{connect, exec, scalar_i64, timed};
use crate::server::{default_binary, Server};
use crate::stats::ms;

const VIEW: &str = "SELECT g, count(*) AS n, sum(v) AS s FROM bench_ck GROUP BY g";

/// One kind of client: cycles, rows changed per cycle, pause between cycles.
struct Workload {
    name: &'static str,
    cycles: usize,
    rows: u64,
    pause: Duration,
}

const WORKLOADS: [Workload; 2] = [
    Workload {
        name: "100 ms between cycles",
        cycles: 400,
        rows: 3000,
        pause: Duration::from_millis(100),
    },
    Workload {
        name: "no pause",
        cycles: 1500,
        rows: 300,
        pause: Duration::ZERO,
    },
];

const MODES: [(&str, &[&str]); 2] = [
    ("quiet moments", &[]),
    ("commits only", &["--commit-checkpoints"]),
];

/// Timings of one workload against one server.
#[derive(Default)]
struct Run {
    update_ms: Vec<f64>,
    refresh_ms: Vec<f64>,
    /// Statements during which the log shrank.
    beside: usize,
    /// Checkpoints seen (the log shrank between two looks, in a statement or a pause).
    checkpoints: usize,
}

pub async fn main(args: Args) -> Result<bool, BenchError> {
    let bin = match &args.server_bin {
        Some(b) => b.clone(),
        None => default_binary()?,
    };
    let rows = ((6_000_000.0 * args.sf) as u64).max(100_000);
    let mut lines = vec![
        format!("Checkpoints: {rows}-row table, grouped view, UPDATE then REFRESH per cycle"),
        String::new(),
        "| clients | checkpoints | checkpoints seen | in a statement | UPDATE median / p99 / max ms | REFRESH median / p99 / max ms |".into(),
        "|---|---|---:|---:|---|---|".into(),
    ];
    for w in &WORKLOADS {
        for (mode, flags) in MODES {
            let mut server = Server::start_with(&bin, flags)?;
            eprintln!("[checkpoints] {}: {mode}", w.name);
            let run = cycles(&server.dsn(), &server.wal_path(), rows, w).await;
            let stopped = server.stop();
            let run = run?;
            stopped?;
            lines.push(format!(
                "| {} | {mode} | {} | {} | {} | {} |",
                w.name,
                run.checkpoints,
                run.beside,
                spread(&run.update_ms),
                spread(&run.refresh_ms)
            ));
        }
    }
    println!("{}", lines.join("\n"));
    Ok(true)
}

async fn cycles(dsn: &str, wal: &Path, rows: u64, w: &Workload) -> Result<Run, BenchError> {
    let c = connect(dsn).await?;
    exec(
        &c,
        &format!(
            "CREATE TABLE bench_ck AS SELECT i AS k, i % 1000 AS g, (i * 7) % 1000 AS v \
             FROM range({rows}) r(i)"
        ),
    )
    .await?;
    exec(
        &c,
        &format!("CREATE MATERIALIZED VIEW bench_ck_v AS {VIEW}"),
    )
    .await?;
    exec(&c, "CHECKPOINT").await?;
    let mut run = Run::default();
    let mut last = wal_bytes(wal);
    for i in 0..w.cycles as u64 {
        tokio::time::sleep(w.pause).await;
        let now = wal_bytes(wal);
        run.checkpoints += usize::from(now < last);
        last = now;
        let lo = (i * 7919) % (rows - w.rows);
        let update = format!(
            "UPDATE bench_ck SET v = v + 1 WHERE k >= {lo} AND k < {}",
            lo + w.rows
        );
        for (sql, out) in [
            (update.as_str(), &mut run.update_ms),
            ("REFRESH MATERIALIZED VIEW bench_ck_v", &mut run.refresh_ms),
        ] {
            let d = timed(&c, sql).await?;
            out.push(ms(d));
            let now = wal_bytes(wal);
            if now < last {
                run.beside += 1;
                run.checkpoints += 1;
            }
            last = now;
        }
    }
    oracle(&c).await?;
    Ok(run)
}

/// The view against its query run fresh: a wrong view fails the benchmark.
async fn oracle(c: &Client) -> Result<(), BenchError> {
    let sql = format!(
        "SELECT count(*) FROM ((SELECT * FROM bench_ck_v EXCEPT ALL ({VIEW})) UNION ALL \
         (({VIEW}) EXCEPT ALL SELECT * FROM bench_ck_v)) d"
    );
    match scalar_i64(c, &sql).await? {
        0 => Ok(()),
        n => Err(BenchError::Server(format!(
            "bench_ck_v differs from its query by {n} rows"
        ))),
    }
}

fn wal_bytes(wal: &Path) -> u64 {
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

/// `median / p99 / max` of the samples.
fn spread(samples: &[f64]) -> String {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!("{:.1} / {:.1} / {:.1}", at(0.5), at(0.99), at(1.0))
}
