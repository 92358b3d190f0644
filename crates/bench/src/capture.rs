//! The cost of capturing a change: the same DML on a table that 0, 1, 10 and 40 materialized
//! views read against an identical table no view reads, side by side in one run. With one change
//! log per table the cost must not grow with the number of views.

use tokio_postgres::Client;

use crate::error::BenchError;
use crate::measure::{exec, timed};
use crate::stats::{median, ms, ratio};

pub const TRACKED: &str = "bench_cap_tracked";
pub const PLAIN: &str = "bench_cap_plain";
/// Views over the tracked table are called `bench_cap_view_<i>`.
pub const VIEW_PREFIX: &str = "bench_cap_view_";
/// Numbers of views over the tracked table, measured in this order.
pub const VIEW_COUNTS: [usize; 4] = [0, 1, 10, 40];
/// Most views the run creates (for cleaning up after an earlier run).
pub const MAX_VIEWS: usize = 40;
/// Single-row statements per sample, each its own round trip and autocommit transaction.
pub const SINGLE_ROWS: u64 = 200;

/// One statement kind at one number of views: samples on both tables and their ratio.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CapturePoint {
    pub views: usize,
    pub statement: String,
    pub plain_ms: Vec<f64>,
    pub tracked_ms: Vec<f64>,
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CaptureCost {
    pub bulk_rows: u64,
    pub single_rows: u64,
    pub points: Vec<CapturePoint>,
    /// Set when a view could not be created, so what follows was not measured.
    pub error: Option<String>,
}

/// Makes the `n`th single-row statement on a table.
pub type SingleRow<'a> = dyn Fn(&str, u64) -> String + 'a;

const STATEMENTS: [&str; 4] = ["bulk INSERT … SELECT", "INSERT", "UPDATE", "DELETE"];

pub fn setup_sql() -> Vec<String> {
    let cols = "(id BIGINT, grp INTEGER, amount DECIMAL(15,2), note VARCHAR)";
    let mut sql: Vec<String> = (0..MAX_VIEWS)
        .map(|i| format!("DROP MATERIALIZED VIEW IF EXISTS {}", view_name(i)))
        .collect();
    sql.extend([
        format!("DROP TABLE IF EXISTS {TRACKED}"),
        format!("DROP TABLE IF EXISTS {PLAIN}"),
        format!("CREATE TABLE {TRACKED} {cols}"),
        format!("CREATE TABLE {PLAIN} {cols}"),
    ]);
    sql
}

pub fn view_name(i: usize) -> String {
    format!("{VIEW_PREFIX}{i}")
}

/// The `i`th view: mostly grouped aggregates (the dashboard case), some MIN/MAX and filters.
pub fn create_view_sql(i: usize) -> String {
    let v = view_name(i);
    let body = match i % 3 {
        0 => format!(
            "SELECT grp % {m} AS g, SUM(amount) AS total, COUNT(*) AS n FROM {TRACKED} GROUP BY grp % {m}",
            m = i + 2
        ),
        1 => format!("SELECT grp, MAX(amount) AS top FROM {TRACKED} GROUP BY grp"),
        _ => format!(
            "SELECT id, amount FROM {TRACKED} WHERE grp = {}",
            i % 100
        ),
    };
    format!("CREATE MATERIALIZED VIEW {v} AS {body}")
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

pub fn single_update_sql(table: &str, n: u64) -> String {
    format!("UPDATE {table} SET amount = amount + 1 WHERE id = {n}")
}

pub fn single_delete_sql(table: &str, n: u64) -> String {
    format!("DELETE FROM {table} WHERE id = {n}")
}

/// Times `reps` samples of each statement kind at each number of views. Between samples the
/// tables are emptied and the views refreshed (untimed), so every sample starts alike.
pub async fn measure(
    client: &Client,
    bulk_rows: u64,
    reps: usize,
) -> Result<CaptureCost, BenchError> {
    let mut out = CaptureCost {
        bulk_rows,
        single_rows: SINGLE_ROWS,
        points: Vec::new(),
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
    let mut views = 0;
    for n in VIEW_COUNTS {
        while views < n {
            if let Err(e) = exec(client, &create_view_sql(views)).await {
                out.error = Some(e.to_string());
                return Ok(out);
            }
            views += 1;
        }
        eprintln!("[capture] {n} views over the written table");
        out.points
            .extend(measure_at(client, n, bulk_rows, reps).await?);
    }
    for i in 0..views {
        exec(client, &format!("DROP MATERIALIZED VIEW {}", view_name(i))).await?;
    }
    Ok(out)
}

async fn measure_at(
    client: &Client,
    views: usize,
    bulk_rows: u64,
    reps: usize,
) -> Result<Vec<CapturePoint>, BenchError> {
    let mut points: Vec<CapturePoint> = STATEMENTS
        .iter()
        .map(|s| CapturePoint {
            views,
            statement: s.to_string(),
            plain_ms: vec![],
            tracked_ms: vec![],
            ratio: None,
        })
        .collect();
    for rep in 0..reps {
        reset(client, views).await?;
        // Alternate which table goes first so neither always runs on a warmer cache.
        let order = if rep % 2 == 0 {
            [PLAIN, TRACKED]
        } else {
            [TRACKED, PLAIN]
        };
        for table in order {
            let mut sample = vec![ms(timed(
                client,
                &bulk_insert_sql(table, bulk_rows, rep as u64),
            )
            .await?)];
            let singles: [&SingleRow<'_>; 3] = [
                &|t, n| single_insert_sql(t, bulk_rows + n),
                &single_update_sql,
                &|t, n| single_delete_sql(t, bulk_rows + n),
            ];
            for make in singles {
                let mut total = 0.0;
                for n in 0..SINGLE_ROWS {
                    total += ms(timed(client, &make(table, n)).await?);
                }
                sample.push(total);
            }
            for (p, d) in points.iter_mut().zip(sample) {
                if table == PLAIN {
                    p.plain_ms.push(d);
                } else {
                    p.tracked_ms.push(d);
                }
            }
        }
    }
    for p in &mut points {
        p.ratio = ratio(median(&p.tracked_ms), median(&p.plain_ms));
    }
    Ok(points)
}

async fn reset(client: &Client, views: usize) -> Result<(), BenchError> {
    exec(client, &format!("DELETE FROM {PLAIN}")).await?;
    exec(client, &format!("DELETE FROM {TRACKED}")).await?;
    for i in 0..views {
        exec(
            client,
            &format!("REFRESH MATERIALIZED VIEW {}", view_name(i)),
        )
        .await?;
    }
    Ok(())
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
        for i in 0..3 {
            let q = create_view_sql(i);
            let body = &q[q.find(" AS ").unwrap() + 4..];
            db.execute_batch(&format!("CREATE VIEW v{i} AS {body}"))
                .unwrap();
        }
        db.execute_batch(&bulk_insert_sql(TRACKED, 1000, 1))
            .unwrap();
        for n in 0..3 {
            db.execute_batch(&single_insert_sql(TRACKED, 1000 + n))
                .unwrap();
        }
        db.execute_batch(&single_update_sql(TRACKED, 5)).unwrap();
        db.execute_batch(&single_delete_sql(TRACKED, 1001)).unwrap();
        let n: i64 = db
            .query_row(&format!("SELECT count(*) FROM {TRACKED}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1002);
    }
}
