//! The cost of capturing a change: the same DML on a table a materialized view reads against
//! an identical table no view reads.

use tokio_postgres::Client;

use crate::bench::error::BenchError;
use crate::bench::measure::{exec, timed};
use crate::bench::stats::{median, ms, ratio};

pub const TRACKED: &str = "bench_cap_tracked";
pub const PLAIN: &str = "bench_cap_plain";
pub const VIEW: &str = "bench_cap_view";
/// Single-row INSERTs per sample, each its own round trip and transaction.
pub const SINGLE_ROWS: u64 = 200;

#[derive(Debug, Clone, serde::Serialize)]
pub struct CaptureCost {
    pub bulk_rows: u64,
    pub bulk_plain_ms: Vec<f64>,
    pub bulk_tracked_ms: Vec<f64>,
    pub bulk_ratio: Option<f64>,
    pub single_rows: u64,
    pub single_plain_ms: Vec<f64>,
    pub single_tracked_ms: Vec<f64>,
    pub single_ratio: Option<f64>,
    /// Set when the view could not be created, so nothing was captured.
    pub error: Option<String>,
}

pub fn setup_sql() -> Vec<String> {
    let cols = "(id BIGINT, grp INTEGER, amount DECIMAL(15,2), note VARCHAR)";
    vec![
        format!("DROP MATERIALIZED VIEW IF EXISTS {VIEW}"),
        format!("DROP TABLE IF EXISTS {TRACKED}"),
        format!("DROP TABLE IF EXISTS {PLAIN}"),
        format!("CREATE TABLE {TRACKED} {cols}"),
        format!("CREATE TABLE {PLAIN} {cols}"),
        format!(
            "CREATE MATERIALIZED VIEW {VIEW} AS SELECT grp, SUM(amount) AS total, COUNT(*) AS n \
             FROM {TRACKED} GROUP BY grp"
        ),
    ]
}

pub fn bulk_insert_sql(table: &str, rows: u64, salt: u64) -> String {
    format!(
        "INSERT INTO {table} SELECT i, CAST(hash(i, {salt}) % 100 AS INTEGER), \
         CAST((hash(i, 'a', {salt}) % 100000) / 100 AS DECIMAL(15,2)), 'note ' || CAST(i AS VARCHAR) \
         FROM range({rows}) t(i)"
    )
}

pub fn single_insert_sql(table: &str, n: u64) -> String {
    format!(
        "INSERT INTO {table} VALUES ({n}, {}, {}.25, 'single {n}')",
        n % 100,
        n % 1000
    )
}

/// Times `reps` samples of each: a bulk INSERT … SELECT of `bulk_rows` rows and
/// [`SINGLE_ROWS`] single-row INSERTs. Between samples the tables are emptied and the view
/// refreshed (untimed), so every sample starts from the same state.
pub async fn measure(
    client: &Client,
    bulk_rows: u64,
    reps: usize,
) -> Result<CaptureCost, BenchError> {
    let mut out = CaptureCost {
        bulk_rows,
        bulk_plain_ms: vec![],
        bulk_tracked_ms: vec![],
        bulk_ratio: None,
        single_rows: SINGLE_ROWS,
        single_plain_ms: vec![],
        single_tracked_ms: vec![],
        single_ratio: None,
        error: None,
    };
    for sql in setup_sql() {
        match exec(client, &sql).await {
            // Leftovers of an earlier run may or may not exist.
            Err(_) if sql.starts_with("DROP") => {}
            Err(e) => {
                out.error = Some(e.to_string());
                return Ok(out);
            }
            Ok(()) => {}
        }
    }
    for rep in 0..reps {
        let salt = rep as u64;
        // Alternate which table goes first so neither always runs on a warmer cache.
        let order = if rep % 2 == 0 {
            [PLAIN, TRACKED]
        } else {
            [TRACKED, PLAIN]
        };
        for table in order {
            let d = ms(timed(client, &bulk_insert_sql(table, bulk_rows, salt)).await?);
            if table == PLAIN {
                out.bulk_plain_ms.push(d);
            } else {
                out.bulk_tracked_ms.push(d);
            }
        }
        reset(client).await?;
        for table in order {
            let mut total = 0.0;
            for n in 0..SINGLE_ROWS {
                total += ms(timed(client, &single_insert_sql(table, n)).await?);
            }
            if table == PLAIN {
                out.single_plain_ms.push(total);
            } else {
                out.single_tracked_ms.push(total);
            }
        }
        reset(client).await?;
    }
    out.bulk_ratio = ratio(median(&out.bulk_tracked_ms), median(&out.bulk_plain_ms));
    out.single_ratio = ratio(median(&out.single_tracked_ms), median(&out.single_plain_ms));
    Ok(out)
}

async fn reset(client: &Client) -> Result<(), BenchError> {
    exec(client, &format!("DELETE FROM {PLAIN}")).await?;
    exec(client, &format!("DELETE FROM {TRACKED}")).await?;
    exec(client, &format!("REFRESH MATERIALIZED VIEW {VIEW}")).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dml_is_valid_duckdb() {
        let db = duckdb::Connection::open_in_memory().unwrap();
        // The MATERIALIZED VIEW statements are duckmv's; DuckDB gets the tables.
        for sql in setup_sql().iter().filter(|s| !s.contains("MATERIALIZED")) {
            db.execute_batch(sql).unwrap();
        }
        db.execute_batch(&bulk_insert_sql(TRACKED, 1000, 1))
            .unwrap();
        for n in 0..3 {
            db.execute_batch(&single_insert_sql(PLAIN, n)).unwrap();
        }
        let (a, b): (i64, i64) = db
            .query_row(
                &format!("SELECT (SELECT count(*) FROM {TRACKED}), (SELECT count(*) FROM {PLAIN})"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((a, b), (1000, 3));
    }
}
