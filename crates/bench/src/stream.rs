//! How fast a large result reaches a client over the wire, against DuckDB reading the same
//! result in-process.
//!
//! Both sides run the same generated query (`range(n)` with a few columns of common types), so
//! no data has to be copied: the server holds its database file, and the in-process side uses
//! an in-memory DuckDB of the same version through the `duckdb` crate.

use std::time::Instant;

use futures::StreamExt;
use tokio_postgres::Client;

use crate::error::BenchError;

#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Rate {
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_s: f64,
}

impl Rate {
    fn of(rows: u64, seconds: f64) -> Rate {
        Rate {
            rows,
            seconds,
            rows_per_s: rows as f64 / seconds.max(1e-9),
        }
    }
}

/// BIGINT, INTEGER, VARCHAR and DOUBLE columns, `rows` rows.
pub fn query(rows: u64) -> String {
    format!(
        "SELECT i AS id, CAST(i % 1000 AS INTEGER) AS grp, 'row-' || CAST(i AS VARCHAR) AS label, \
         CAST(i AS DOUBLE) / 3 AS val FROM range({rows}) t(i)"
    )
}

/// Streams the result through tokio-postgres' `query_raw` (extended protocol, rows decoded one
/// at a time as they arrive), reading every column.
pub async fn over_wire(client: &Client, rows: u64) -> Result<Rate, BenchError> {
    let sql = query(rows);
    let start = Instant::now();
    let stream = client
        .query_raw(sql.as_str(), std::iter::empty::<i32>())
        .await
        .map_err(|e| BenchError::sql("stream over the wire", &e))?;
    futures::pin_mut!(stream);
    let mut n = 0u64;
    let mut check = 0i64;
    while let Some(row) = stream.next().await {
        let row = row.map_err(|e| BenchError::sql("stream over the wire", &e))?;
        let id: i64 = row
            .try_get(0)
            .map_err(|e| BenchError::sql("decode streamed row", &e))?;
        let label: &str = row
            .try_get(2)
            .map_err(|e| BenchError::sql("decode streamed row", &e))?;
        check = check.wrapping_add(id).wrapping_add(label.len() as i64);
        n += 1;
    }
    std::hint::black_box(check);
    Ok(Rate::of(n, start.elapsed().as_secs_f64()))
}

/// The same query on an in-memory DuckDB, reading its Arrow batches.
pub fn in_process(rows: u64) -> Result<Rate, BenchError> {
    let db = duckdb::Connection::open_in_memory()?;
    let sql = query(rows);
    let start = Instant::now();
    let mut stmt = db.prepare(&sql)?;
    let mut n = 0u64;
    for batch in stmt.query_arrow([])? {
        n += batch.num_rows() as u64;
    }
    Ok(Rate::of(n, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_reads_every_row() {
        let r = in_process(250_000).unwrap();
        assert_eq!(r.rows, 250_000);
        assert!(r.rows_per_s > 0.0);
    }
}
