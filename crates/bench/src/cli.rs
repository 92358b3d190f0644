//! Command-line flags of `duckmv-bench`.

use std::path::PathBuf;

#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "duckmv-bench",
    about = "Times incremental REFRESH MATERIALIZED VIEW against full recomputation on TPC-H-shaped data"
)]
pub struct Args {
    /// Connection string of a running server (tokio-postgres syntax, e.g.
    /// `host=127.0.0.1 port=5433 user=bench`). Its tables and views named like the benchmark's
    /// are dropped and recreated. Without it, a `duckmv` server is started on a temporary
    /// database and stopped at the end.
    #[arg(long)]
    pub dsn: Option<String>,

    /// The server binary to start when no `--dsn` is given (default: `duckmv` next to this
    /// executable).
    #[arg(long)]
    pub server_bin: Option<PathBuf>,

    /// TPC-H scale factor: SF 1 = 6M lineitem, 1.5M orders, 150k customers.
    #[arg(long, default_value_t = 0.1)]
    pub sf: f64,

    /// Repetitions per measurement; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,

    /// Change sizes, as fractions of the fact table (lineitem; orders for the customer/orders
    /// views), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.0001,0.001,0.01,0.1")]
    pub changes: Vec<f64>,

    /// Rows streamed for the streaming-rate measurement (default: 10M × sf, at least 100k,
    /// at most 10M).
    #[arg(long)]
    pub stream_rows: Option<u64>,

    /// Where to write the figures as JSON.
    #[arg(long, default_value = "bench/results.json")]
    pub out: PathBuf,

    /// Where to draw refresh time against change size.
    #[arg(long, default_value = "bench/refresh.svg")]
    pub svg: PathBuf,

    /// Run only the seed documents' customers/orders views (issue 4: LEFT JOIN and EXISTS at
    /// 100k customers and 1M orders, 0.1% of orders changed) and print their table.
    #[arg(long)]
    pub seed_joins: bool,

    /// Declare the primary keys of customer and orders (c_custkey, o_orderkey) once they are
    /// loaded, as a TPC-H schema does; the changes keep them unique. Views that show them hold
    /// each row once (no counting of duplicates in a full refresh).
    #[arg(long)]
    pub primary_keys: bool,

    /// Run the 22 TPC-H queries as views instead (issue 16): every table but nation and
    /// region changes in each batch, and every ratio is CTAS of the query over REFRESH.
    #[arg(long)]
    pub tpch: bool,

    /// `duckmv.refresh_mode` of the timed refreshes in `--tpch` (auto, incremental or full).
    #[arg(long, default_value = "auto")]
    pub refresh_mode: String,

    /// With `--tpch`, do not time a forced full REFRESH beside CTAS (halves the batches).
    #[arg(long)]
    pub skip_full: bool,

    /// With `--tpch`, only these views (e.g. `tpch_q3,tpch_q5`).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,

    /// With `--tpch`, also each query with its published ORDER BY / LIMIT, as
    /// `tpch_qN_ordered` (18 more views).
    #[arg(long)]
    pub ordered: bool,

    /// With `--tpch`, check every view against its query after every refresh, not only after
    /// the first repetition of each size (for tests: the check is not timed but costs time).
    #[arg(long)]
    pub check_every_refresh: bool,

    /// Measure refresh policies instead (issue 18): the writer's cost of an immediate view
    /// and the lag of `every 1 second` (`--sf` sets the bulk insert: 1M rows × sf).
    #[arg(long)]
    pub policies: bool,

    /// Measure only the cost of capture (issue 17): writes on a table 0, 1, 10 and 40 views
    /// read, and on a table with a bare trigger, against the same statements on a table no
    /// view reads (`--reps` samples each).
    #[arg(long)]
    pub capture: bool,

    /// Measure where checkpoints land instead (issue 16): write-and-refresh cycles, with and
    /// without pauses between them, against a server that also checkpoints in quiet moments
    /// and one that leaves them to commits (`--commit-checkpoints`), one after the other.
    #[arg(long)]
    pub checkpoints: bool,

    /// Where `--tpch` writes its figures as JSON.
    #[arg(long, default_value = "bench/tpch.json")]
    pub tpch_out: PathBuf,
}

impl Args {
    /// The flags every benchmark run needs to make sense.
    pub fn check(&self) -> Result<(), crate::error::BenchError> {
        if self.reps == 0 || self.sf <= 0.0 || self.changes.iter().any(|c| !(*c > 0.0 && *c <= 1.0))
        {
            return Err(crate::error::BenchError::Server(
                "need --reps ≥ 1, --sf > 0 and change fractions in (0, 1]".into(),
            ));
        }
        Ok(())
    }

    pub fn stream_rows(&self) -> u64 {
        self.stream_rows
            .unwrap_or_else(|| ((10_000_000.0 * self.sf) as u64).clamp(100_000, 10_000_000))
    }

    /// The command line that reproduces this run (printed with the results).
    pub fn command_line(&self) -> String {
        let changes: Vec<String> = self.changes.iter().map(|c| c.to_string()).collect();
        let mut line = format!(
            "scripts/bench --sf {} --reps {} --changes {}",
            self.sf,
            self.reps,
            changes.join(",")
        );
        if self.primary_keys {
            line.push_str(" --primary-keys");
        }
        if self.tpch {
            line.push_str(&format!(" --tpch --refresh-mode {}", self.refresh_mode));
            if self.skip_full {
                line.push_str(" --skip-full");
            }
            if self.ordered {
                line.push_str(" --ordered");
            }
            if self.check_every_refresh {
                line.push_str(" --check-every-refresh");
            }
            if !self.only.is_empty() {
                line.push_str(&format!(" --only {}", self.only.join(",")));
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn defaults_match_the_issue() {
        let a = Args::parse_from(["duckmv-bench"]);
        assert_eq!(a.changes, vec![0.0001, 0.001, 0.01, 0.1]);
        assert_eq!(a.reps, 3);
        assert_eq!(a.stream_rows(), 1_000_000);
        let a = Args::parse_from(["duckmv-bench", "--sf", "1", "--changes", "0.01"]);
        assert_eq!(a.changes, vec![0.01]);
        assert_eq!(a.stream_rows(), 10_000_000);
        assert_eq!(
            a.command_line(),
            "scripts/bench --sf 1 --reps 3 --changes 0.01"
        );
    }
}
