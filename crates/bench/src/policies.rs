//! `duckmv-bench --policies` (issue 18): what a refresh policy costs and gives, side by side in
//! one run.
//! - The writer's cost of `immediate`: the same statements (a bulk INSERT … SELECT and
//!   single-row autocommit INSERT/UPDATE/DELETE) on three identical tables: one no view reads,
//!   one an on-demand grouped view reads (capture only), one an immediate grouped view reads
//!   (capture and maintenance in the writing transaction); ratios to the first.
//! - The lag of `every 1 second`: from the commit of a single-row write to the moment a reader
//!   sees it in the view, polled every 5 ms, over several writes at random points of the
//!   interval.

use std::time::{Duration, Instant};

use tokio_postgres::Client;

use crate::capture::{
    bulk_insert_sql, single_delete_sql, single_insert_sql, single_update_sql, SingleRow,
};
use crate::cli::Args;
use crate::error::BenchError;
use crate::measure::{connect, exec, scalar_i64, timed};
use crate::stats::{median, ms, ratio};

const TABLES: [(&str, &str); 3] = [
    ("bench_pol_plain", "no view"),
    ("bench_pol_ondemand", "on-demand view"),
    ("bench_pol_immediate", "immediate view"),
];
const STATEMENTS: [&str; 4] = ["bulk INSERT … SELECT", "INSERT", "UPDATE", "DELETE"];
/// Single-row statements per sample.
const SINGLE_ROWS: u64 = 100;
/// Writes whose lag is measured.
const LAG_WRITES: usize = 12;

fn setup_sql() -> Vec<String> {
    let cols = "(id BIGINT, grp INTEGER, amount DECIMAL(15,2), note VARCHAR)";
    let mut sql = vec![
        "DROP MATERIALIZED VIEW IF EXISTS bench_pol_v_ondemand".to_string(),
        "DROP MATERIALIZED VIEW IF EXISTS bench_pol_v_immediate".to_string(),
        "DROP MATERIALIZED VIEW IF EXISTS bench_pol_v_lag".to_string(),
    ];
    for (t, _) in TABLES {
        sql.push(format!("DROP TABLE IF EXISTS {t}"));
        sql.push(format!("CREATE TABLE {t} {cols}"));
    }
    sql.push("DROP TABLE IF EXISTS bench_pol_lag".into());
    sql.push("CREATE TABLE bench_pol_lag (id BIGINT, grp INTEGER)".into());
    let view = |name: &str, table: &str, policy: &str| {
        format!(
            "CREATE MATERIALIZED VIEW {name} WITH (refresh = '{policy}') AS SELECT grp, \
             SUM(amount) AS total, COUNT(*) AS n FROM {table} GROUP BY grp"
        )
    };
    sql.push(view("bench_pol_v_ondemand", TABLES[1].0, "on demand"));
    sql.push(view("bench_pol_v_immediate", TABLES[2].0, "immediate"));
    sql.push(
        "CREATE MATERIALIZED VIEW bench_pol_v_lag WITH (refresh = 'every 1 second') AS \
         SELECT grp, COUNT(*) AS n FROM bench_pol_lag GROUP BY grp"
            .into(),
    );
    sql
}

/// Runs the policies benchmark and prints its table.
pub async fn main(args: Args) -> Result<bool, BenchError> {
    let a = &args;
    let text = crate::server::against(&args, |dsn| async move { bench(a, &dsn).await }).await?;
    println!("{text}");
    Ok(true)
}

async fn bench(args: &Args, dsn: &str) -> Result<String, BenchError> {
    let client = connect(dsn).await?;
    for sql in setup_sql() {
        exec(&client, &sql).await?;
    }
    let bulk_rows = ((args.sf * 1_000_000.0) as u64).max(10_000);
    eprintln!("[policies] writer cost: bulk {bulk_rows} rows, {SINGLE_ROWS} single-row statements");
    let writer = writer_cost(&client, bulk_rows, args.reps).await?;
    eprintln!("[policies] lag of 'every 1 second' over {LAG_WRITES} writes");
    let lag = lag(&client, dsn).await?;
    let mut out = format!(
        "Writer cost ({bulk_rows}-row bulk insert; {SINGLE_ROWS} single-row autocommit statements), \
         median of {} runs, ms and ratio to no view\n\n| statement | no view | on-demand view | immediate view |\n|---|---|---|---|\n",
        args.reps
    );
    for (i, s) in STATEMENTS.iter().enumerate() {
        let base = median(&writer[0][i]);
        let cell = |t: usize| {
            let m = median(&writer[t][i]);
            match (m, ratio(m, base)) {
                (Some(m), Some(r)) => format!("{m:.1} ({r:.2}×)"),
                _ => "—".into(),
            }
        };
        out.push_str(&format!(
            "| {s} | {:.1} | {} | {} |\n",
            base.unwrap_or(0.0),
            cell(1),
            cell(2)
        ));
    }
    let sorted = {
        let mut l = lag.clone();
        l.sort_by(f64::total_cmp);
        l
    };
    out.push_str(&format!(
        "\nLag of refresh = 'every 1 second' (commit to visible in the view), {} writes: \
         median {:.0} ms, max {:.0} ms\n",
        lag.len(),
        median(&lag).unwrap_or(0.0),
        sorted.last().copied().unwrap_or(0.0)
    ));
    Ok(out)
}

/// Samples per table and statement, in ms.
async fn writer_cost(
    client: &Client,
    bulk_rows: u64,
    reps: usize,
) -> Result<Vec<Vec<Vec<f64>>>, BenchError> {
    let mut samples = vec![vec![Vec::new(); STATEMENTS.len()]; TABLES.len()];
    for rep in 0..reps {
        for (t, (table, _)) in TABLES.iter().enumerate() {
            exec(client, &format!("TRUNCATE {table}")).await?;
            exec(client, "REFRESH MATERIALIZED VIEW bench_pol_v_ondemand").await?;
            let bulk = bulk_insert_sql(table, bulk_rows, rep as u64);
            samples[t][0].push(ms(timed(client, &bulk).await?));
            let singles: [&SingleRow<'_>; 3] = [
                &|t, n| single_insert_sql(t, bulk_rows + n),
                &single_update_sql,
                &|t, n| single_delete_sql(t, bulk_rows + n),
            ];
            for (i, make) in singles.iter().enumerate() {
                let mut total = 0.0;
                for n in 0..SINGLE_ROWS {
                    total += ms(timed(client, &make(table, n)).await?);
                }
                samples[t][i + 1].push(total);
            }
        }
    }
    Ok(samples)
}

/// Commit-to-visible lag of single-row writes under `every 1 second`, in ms.
async fn lag(writer: &Client, dsn: &str) -> Result<Vec<f64>, BenchError> {
    let reader = connect(dsn).await?;
    let mut out = Vec::new();
    for i in 0..LAG_WRITES {
        // Spread the writes over the interval.
        tokio::time::sleep(Duration::from_millis(137 * i as u64 % 1000 + 50)).await;
        let grp = i as i64 % 3;
        let want = scalar_i64(
            &reader,
            &format!("SELECT count(*) FROM bench_pol_lag WHERE grp = {grp}"),
        )
        .await?
            + 1;
        exec(
            writer,
            &format!("INSERT INTO bench_pol_lag VALUES ({i}, {grp})"),
        )
        .await?;
        let committed = Instant::now();
        loop {
            let seen = scalar_i64(
                &reader,
                &format!("SELECT coalesce(max(n), 0) FROM bench_pol_v_lag WHERE grp = {grp}"),
            )
            .await?;
            if seen == want {
                break;
            }
            if committed.elapsed() > Duration::from_secs(10) {
                return Err(BenchError::Server(format!(
                    "the scheduled view did not show write {i} within 10 s"
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        out.push(ms(committed.elapsed()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_has_its_view_and_policy() {
        let sql = setup_sql().join(";\n");
        assert!(sql.contains("WITH (refresh = 'immediate') AS SELECT grp"));
        assert!(sql.contains("FROM bench_pol_immediate GROUP BY grp"));
        assert!(sql.contains("WITH (refresh = 'every 1 second')"));
        assert!(!sql.contains("FROM bench_pol_plain GROUP BY"));
    }
}
