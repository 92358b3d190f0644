//! The cost of capturing a change: the same DML on a table that 0, 1, 10 and 40 materialized
//! views read against an identical table no view reads, side by side in one run. With one change
//! log per table the cost must not grow with the number of views. A third identical table has
//! a bare DuckDB trigger of the same shape as capture's (each statement's rows copied to a log
//! table, with a constant for the position): the floor of trigger capture, what DuckDB itself
//! charges a write for the trigger. `duckmv-bench --capture` runs this measurement alone.

use tokio_postgres::Client;

use crate::cli::Args;
use crate::error::BenchError;
use crate::measure::{connect, exec, timed};
use crate::stats::{median, ms, ratio};

pub const TRACKED: &str = "bench_cap_tracked";
pub const PLAIN: &str = "bench_cap_plain";
/// The table with a bare trigger, and the table its trigger writes.
pub const BARE: &str = "bench_cap_bare";
const BARE_LOG: &str = "bench_cap_bare_log";
/// Rows of the bulk insert when the capture cost is measured alone.
const BULK_ROWS: u64 = 100_000;
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
    /// The same statement on the table with a bare trigger, and its ratio to the plain table.
    #[serde(default)]
    pub bare_ms: Vec<f64>,
    #[serde(default)]
    pub bare_ratio: Option<f64>,
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
        format!("DROP TABLE IF EXISTS {BARE}"),
        format!("DROP TABLE IF EXISTS {BARE_LOG}"),
        format!("CREATE TABLE {TRACKED} {cols}"),
        format!("CREATE TABLE {PLAIN} {cols}"),
        format!("CREATE TABLE {BARE} {cols}"),
        format!(
            "CREATE TABLE {BARE_LOG} (id BIGINT, grp INTEGER, amount DECIMAL(15,2), \
             note VARCHAR, mult BIGINT, pos BIGINT)"
        ),
    ]);
    sql.extend(bare_trigger_sql());
    sql
}

/// Triggers on [`BARE`] shaped like capture's: one statement per write copying the transition
/// table's rows with a sign and a constant position.
fn bare_trigger_sql() -> Vec<String> {
    let rows = |from: &str, sign: i64| format!("SELECT *, {sign}, 0 FROM {from}");
    vec![
        format!(
            "CREATE TRIGGER {BARE}_ins AFTER INSERT ON {BARE} REFERENCING NEW TABLE AS n \
             FOR EACH STATEMENT INSERT INTO {BARE_LOG} {}",
            rows("n", 1)
        ),
        format!(
            "CREATE TRIGGER {BARE}_del AFTER DELETE ON {BARE} REFERENCING OLD TABLE AS o \
             FOR EACH STATEMENT INSERT INTO {BARE_LOG} {}",
            rows("o", -1)
        ),
        format!(
            "CREATE TRIGGER {BARE}_upd AFTER UPDATE ON {BARE} REFERENCING OLD TABLE AS o \
             NEW TABLE AS n FOR EACH STATEMENT INSERT INTO {BARE_LOG} {} UNION ALL {}",
            rows("o", -1),
            rows("n", 1)
        ),
    ]
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
            bare_ms: vec![],
            bare_ratio: None,
        })
        .collect();
    for rep in 0..reps {
        reset(client, views).await?;
        // Rotate which table goes first so none always runs on a warmer cache; single-row
        // statements take turns one by one, so a slow stretch (a checkpoint, a slow fsync)
        // lands on every table alike.
        let mut order = [PLAIN, TRACKED, BARE];
        order.rotate_left(rep % 3);
        let mut samples = [[0.0; 4]; 3];
        for (t, table) in order.iter().enumerate() {
            // From an empty WAL, so DuckDB's automatic checkpoint (every 16 MB of WAL) does not
            // land inside one table's sample and not another's; a server whose user may not
            // CHECKPOINT is measured without.
            let _ = exec(client, "CHECKPOINT").await;
            samples[t][0] =
                ms(timed(client, &bulk_insert_sql(table, bulk_rows, rep as u64)).await?);
        }
        let singles: [&SingleRow<'_>; 3] = [
            &|t, n| single_insert_sql(t, bulk_rows + n),
            &single_update_sql,
            &|t, n| single_delete_sql(t, bulk_rows + n),
        ];
        for (k, make) in singles.iter().enumerate() {
            for n in 0..SINGLE_ROWS {
                for (t, table) in order.iter().enumerate() {
                    samples[t][k + 1] += ms(timed(client, &make(table, n)).await?);
                }
            }
        }
        for (table, sample) in order.iter().zip(samples) {
            for (p, d) in points.iter_mut().zip(sample) {
                match *table {
                    PLAIN => p.plain_ms.push(d),
                    BARE => p.bare_ms.push(d),
                    _ => p.tracked_ms.push(d),
                }
            }
        }
    }
    for p in &mut points {
        p.ratio = ratio(median(&p.tracked_ms), median(&p.plain_ms));
        p.bare_ratio = ratio(median(&p.bare_ms), median(&p.plain_ms));
    }
    Ok(points)
}

async fn reset(client: &Client, views: usize) -> Result<(), BenchError> {
    for t in [PLAIN, TRACKED, BARE, BARE_LOG] {
        exec(client, &format!("DELETE FROM {t}")).await?;
    }
    for i in 0..views {
        exec(
            client,
            &format!("REFRESH MATERIALIZED VIEW {}", view_name(i)),
        )
        .await?;
    }
    Ok(())
}

/// `duckmv-bench --capture`: this measurement alone, `--reps` samples, printed as a table.
pub async fn main(args: Args) -> Result<bool, BenchError> {
    let cost = crate::server::against(&args, |dsn| async move {
        let client = connect(&dsn).await?;
        measure(&client, BULK_ROWS, args.reps.max(1)).await
    })
    .await?;
    println!("{}", markdown(&cost));
    Ok(cost.error.is_none())
}

/// Per statement, the ratio to the plain table at each number of views, then the bare trigger's
/// (median over every sample, whatever the views).
pub fn markdown(c: &CaptureCost) -> String {
    let fmt = |r: Option<f64>| r.map_or("–".to_string(), |r| format!("{r:.2}×"));
    let mut s = String::from("| statement |");
    for n in VIEW_COUNTS {
        s.push_str(&format!(" {n} views |"));
    }
    s.push_str(" bare trigger | plain ms |\n|---|");
    s.push_str(&"---:|".repeat(VIEW_COUNTS.len() + 2));
    s.push('\n');
    for what in STATEMENTS {
        let at: Vec<&CapturePoint> = c.points.iter().filter(|p| p.statement == what).collect();
        let label = if what.starts_with("bulk") {
            format!("{what}, {} rows", c.bulk_rows)
        } else {
            format!("{} single-row {what}s", c.single_rows)
        };
        s.push_str(&format!("| {label} |"));
        for n in VIEW_COUNTS {
            let r = at.iter().find(|p| p.views == n).and_then(|p| p.ratio);
            s.push_str(&format!(" {} |", fmt(r)));
        }
        let bare: Vec<f64> = at.iter().flat_map(|p| p.bare_ms.clone()).collect();
        let plain: Vec<f64> = at.iter().flat_map(|p| p.plain_ms.clone()).collect();
        let (b, p) = (median(&bare), median(&plain));
        let plain_ms = p.map_or("–".to_string(), |p| format!("{p:.1}"));
        s.push_str(&format!(" {} | {plain_ms} |\n", fmt(ratio(b, p))));
    }
    if let Some(e) = &c.error {
        s.push_str(&format!("\nNot measured past: {e}\n"));
    }
    s
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
