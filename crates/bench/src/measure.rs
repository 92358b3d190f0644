//! Statements over the wire, timed. Every statement goes through the simple query protocol
//! (one round trip, as psql sends it), so a timing is what a client sees.

use std::time::{Duration, Instant};

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::error::BenchError;

/// Connects and drives the connection in a task.
pub async fn connect(dsn: &str) -> Result<Client, BenchError> {
    let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .map_err(|e| BenchError::sql(format!("connect to {dsn}"), &e))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("duckmv-bench: connection ended: {e}");
        }
    });
    Ok(client)
}

/// Runs one statement and returns how long it took, round trip included.
pub async fn timed(client: &Client, sql: &str) -> Result<Duration, BenchError> {
    let start = Instant::now();
    client
        .batch_execute(sql)
        .await
        .map_err(|e| BenchError::sql(short(sql), &e))?;
    Ok(start.elapsed())
}

/// Runs one statement, untimed.
pub async fn exec(client: &Client, sql: &str) -> Result<(), BenchError> {
    timed(client, sql).await.map(|_| ())
}

/// The first column of the first row, as text (None for NULL or no row).
pub async fn scalar(client: &Client, sql: &str) -> Result<Option<String>, BenchError> {
    let msgs = client
        .simple_query(sql)
        .await
        .map_err(|e| BenchError::sql(short(sql), &e))?;
    for m in msgs {
        if let SimpleQueryMessage::Row(row) = m {
            return Ok(row.get(0).map(str::to_string));
        }
    }
    Ok(None)
}

/// A count or other integer result.
pub async fn scalar_i64(client: &Client, sql: &str) -> Result<i64, BenchError> {
    let v = scalar(client, sql).await?;
    v.as_deref()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| BenchError::Sql {
            context: short(sql),
            message: format!("expected an integer, got {v:?}"),
        })
}

/// The start of a statement, for error messages (generated SQL can be long).
pub fn short(sql: &str) -> String {
    const MAX: usize = 160;
    let one_line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.len() <= MAX {
        one_line
    } else {
        let mut end = MAX;
        while !one_line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &one_line[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_statements_stay_whole_and_long_ones_are_cut() {
        assert_eq!(short("SELECT  1\n FROM t"), "SELECT 1 FROM t");
        let long = format!("SELECT {}", "é".repeat(200));
        let s = short(&long);
        assert!(s.ends_with('…') && s.len() < 170);
    }
}
