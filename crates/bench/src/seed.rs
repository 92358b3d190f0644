//! `duckmv-bench --seed-joins` (issue 4): the seed documents' customers/orders views — a LEFT
//! JOIN and an EXISTS — at 100k customers and 1M orders. Each repetition changes 0.1% of the
//! orders (a third deleted, a third inserted, a third moved to another customer), times the
//! incremental REFRESH, checks the oracle, then times a full recompute of the same view in the
//! same run: the defining query as `CREATE TEMP TABLE … AS`, and a forced full REFRESH after a
//! fresh batch of the same size.

use tokio_postgres::Client;

use crate::cli::Args;

use crate::error::BenchError;
use crate::measure::{connect, exec, scalar_i64, timed};
use crate::stats::{median, ms, ratio};

pub const CUSTOMERS: i64 = 100_000;
pub const ORDERS: i64 = 1_000_000;

/// The two seed views, named as on the server.
pub const VIEWS: [(&str, &str); 2] = [
    (
        "seed_customer_orders",
        "SELECT c.name, o.product, o.amount FROM customers c LEFT JOIN orders o ON c.id = o.customer_id",
    ),
    (
        "seed_customers_with_orders",
        "SELECT c.id, c.region FROM customers c WHERE EXISTS \
         (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 50)",
    ),
];

/// Loads the tables. Customer ids run past the customers a fifth of the time so that some
/// customers have no order (padding rows) and some orders no customer.
fn load_sql() -> Vec<String> {
    vec![
        "DROP TABLE IF EXISTS orders CASCADE".into(),
        "DROP TABLE IF EXISTS customers CASCADE".into(),
        "CREATE TABLE customers (id INT, name VARCHAR, region VARCHAR)".into(),
        "CREATE TABLE orders (oid BIGINT, customer_id INT, product VARCHAR, amount INT)".into(),
        format!(
            "INSERT INTO customers SELECT i, 'customer ' || i, CASE i % 4 WHEN 0 THEN 'west' WHEN 1 THEN 'east' \
             WHEN 2 THEN 'north' ELSE 'south' END FROM range({CUSTOMERS}) t(i)"
        ),
        format!(
            "INSERT INTO orders SELECT i, CAST(hash(i) % {} AS INT), 'product ' || (i % 500), CAST(hash(i * 7) % 100 AS INT) \
             FROM range({ORDERS}) t(i)",
            CUSTOMERS * 6 / 5
        ),
    ]
}

/// One batch changing `n` orders: deletes, inserts and key updates, a third each; `salt`
/// makes every batch different.
pub fn change_sql(n: i64, salt: i64) -> Vec<String> {
    let third = (n / 3).max(1);
    let span = CUSTOMERS * 6 / 5;
    vec![
        format!("DELETE FROM orders WHERE oid IN (SELECT oid FROM orders ORDER BY hash(oid + {salt}) LIMIT {third})"),
        format!(
            "INSERT INTO orders SELECT {base} + i, CAST(hash(i + {salt}) % {span} AS INT), 'new', CAST(hash(i * 3 + {salt}) % 100 AS INT) \
             FROM range({third}) t(i)",
            base = 10 * ORDERS + salt * n
        ),
        format!(
            "UPDATE orders SET customer_id = CAST(hash(oid * 11 + {salt}) % {span} AS INT) \
             WHERE oid IN (SELECT oid FROM orders ORDER BY hash(oid * 5 + {salt}) LIMIT {})",
            n - 2 * third
        ),
    ]
}

async fn apply(client: &Client, stmts: &[String]) -> Result<(), BenchError> {
    for s in stmts {
        exec(client, s).await?;
    }
    Ok(())
}

async fn oracle(client: &Client, view: &str, query: &str) -> Result<i64, BenchError> {
    scalar_i64(
        client,
        &format!(
            "SELECT count(*) FROM ((SELECT * FROM {view} EXCEPT ALL ({query})) UNION ALL \
             (({query}) EXCEPT ALL SELECT * FROM {view})) d"
        ),
    )
    .await
}

/// The figures of one view.
pub struct SeedResult {
    pub view: &'static str,
    pub strategy: String,
    pub incremental_ms: Option<f64>,
    pub ctas_ms: Option<f64>,
    pub full_refresh_ms: Option<f64>,
    pub oracle_failures: usize,
}

/// Runs the seed benchmark against a server; prints and returns the figures.
pub async fn run(client: &Client, reps: usize) -> Result<Vec<SeedResult>, BenchError> {
    eprintln!("[seed] loading {CUSTOMERS} customers and {ORDERS} orders");
    apply(client, &load_sql()).await?;
    let n = ORDERS / 1000;
    let mut out = Vec::new();
    for (name, query) in VIEWS {
        exec(client, &format!("DROP MATERIALIZED VIEW IF EXISTS {name}")).await?;
        let created = timed(
            client,
            &format!("CREATE MATERIALIZED VIEW {name} AS {query}"),
        )
        .await?;
        let strategy = crate::measure::scalar(
            client,
            &format!("SELECT strategy FROM duckmv.views WHERE name = '{name}'"),
        )
        .await?
        .unwrap_or_default();
        eprintln!(
            "[seed] {name}: created in {:.0} ms, {strategy}",
            ms(created)
        );
        let (mut inc, mut ctas, mut full) = (Vec::new(), Vec::new(), Vec::new());
        let mut failures = 0;
        // One untimed round first, so no figure pays for cold caches or first planning.
        for rep in 0..=reps {
            let salt = (rep as i64 + 1) * 1_000 + out.len() as i64 * 100_000;
            apply(client, &change_sql(n, salt)).await?;
            exec(client, "SET duckmv.refresh_mode = 'incremental'").await?;
            let d = timed(client, &format!("REFRESH MATERIALIZED VIEW {name}")).await?;
            let diff = oracle(client, name, query).await?;
            if diff != 0 {
                failures += 1;
                eprintln!("[seed] {name}: ORACLE FAILED, {diff} rows differ");
            }
            let c = timed(client, &format!("CREATE TEMP TABLE _seed_full AS {query}")).await?;
            exec(client, "DROP TABLE _seed_full").await?;
            apply(client, &change_sql(n, salt + 7)).await?;
            let f = match exec(client, "SET duckmv.refresh_mode = 'full'").await {
                Ok(()) => Some(timed(client, &format!("REFRESH MATERIALIZED VIEW {name}")).await?),
                Err(_) => None,
            };
            exec(client, "SET duckmv.refresh_mode = 'incremental'").await?;
            if rep == 0 {
                continue;
            }
            inc.push(ms(d));
            ctas.push(ms(c));
            if let Some(f) = f {
                full.push(ms(f));
            }
            eprintln!(
                "[seed] rep {rep}/{reps} {name}: incremental {:.1} ms, CTAS {:.1} ms, full REFRESH {}",
                ms(d),
                ms(c),
                f.map(|f| format!("{:.1} ms", ms(f))).unwrap_or("n/a".into())
            );
        }
        out.push(SeedResult {
            view: name,
            strategy,
            incremental_ms: median(&inc),
            ctas_ms: median(&ctas),
            full_refresh_ms: median(&full),
            oracle_failures: failures,
        });
    }
    Ok(out)
}

/// The figures as a markdown table.
pub fn markdown(results: &[SeedResult]) -> String {
    let f = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or("–".into());
    let x = |v: Option<f64>| v.map(|v| format!("{v:.1}×")).unwrap_or("–".into());
    let mut s = format!(
        "Seed views, {CUSTOMERS} customers, {ORDERS} orders, {} orders changed per refresh (0.1%), medians\n\n\
         | view | strategy | incremental (ms) | CTAS of the query (ms) | full REFRESH (ms) | CTAS / incremental | full REFRESH / incremental | oracle |\n\
         |---|---|---:|---:|---:|---:|---:|---|\n",
        ORDERS / 1000
    );
    for r in results {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.view,
            r.strategy,
            f(r.incremental_ms),
            f(r.ctas_ms),
            f(r.full_refresh_ms),
            x(ratio(r.ctas_ms, r.incremental_ms)),
            x(ratio(r.full_refresh_ms, r.incremental_ms)),
            if r.oracle_failures == 0 {
                "pass"
            } else {
                "FAIL"
            }
        ));
    }
    s
}

/// `duckmv-bench --seed-joins`: starts a server unless `--dsn` names one, runs, prints the
/// table; Ok(false) when an oracle failed.
pub async fn main(args: Args) -> Result<bool, BenchError> {
    let results = crate::server::against(&args, |dsn| async move {
        let client = connect(&dsn).await?;
        run(&client, args.reps.max(1)).await
    })
    .await?;
    println!("{}", markdown(&results));
    Ok(results.iter().all(|r| r.oracle_failures == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_changes_the_requested_number_of_orders() {
        let b = change_sql(1000, 5);
        assert_eq!(b.len(), 3);
        assert!(b[0].contains("LIMIT 333"), "{}", b[0]);
        assert!(b[1].contains("range(333)"), "{}", b[1]);
        assert!(b[2].contains("LIMIT 334"), "{}", b[2]);
    }
}
