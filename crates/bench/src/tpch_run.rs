//! `duckmv-bench --tpch` (issue 16): the 22 TPC-H queries as materialized views over the
//! project's generated data. Each repetition of a change size applies one batch to every
//! table but nation and region, refreshes every view and times it, checks each view against
//! its query (bag equality, both ways) once per size, then times `CREATE TEMP TABLE … AS` of
//! every query on the same data: the cheapest recompute a user could run, and the baseline of
//! every ratio. A forced full REFRESH after a fresh batch of the same size is kept beside it.

use std::time::Instant;

use tokio_postgres::Client;

use crate::cli::Args;
use crate::error::BenchError;
use crate::measure::{connect, exec, scalar, scalar_i64, timed};
use crate::report::{percent, RefreshPoint, ViewResult};
use crate::stats::ms;
use crate::tpch_changes::{self, Batch};
use crate::tpch_data::{self, Scale};
use crate::tpch_queries;
use crate::tpch_report::{self, TpchResults};

/// Runs the TPC-H benchmark; Ok(false) when a view failed its oracle or its refresh.
pub async fn main(args: Args) -> Result<bool, BenchError> {
    args.check()?;
    let a = &args;
    let results = crate::server::against(&args, |dsn| async move { bench(a, &dsn).await }).await?;
    let json = serde_json::to_string_pretty(&results).expect("results serialise");
    if let Some(dir) = args.tpch_out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io("create output dir", e))?;
    }
    std::fs::write(&args.tpch_out, json + "\n")
        .map_err(|e| BenchError::io(format!("write {}", args.tpch_out.display()), e))?;
    eprintln!("[out] wrote {}", args.tpch_out.display());
    println!("{}", tpch_report::markdown(&results));
    for f in &results.failures {
        eprintln!("!!! {f}");
    }
    Ok(results.failures.is_empty())
}

/// The views this run measures: all 22 (and their ordered forms with `--ordered`), or those
/// named by `--only`.
fn selected(args: &Args) -> Vec<(String, String)> {
    tpch_queries::views(args.ordered)
        .into_iter()
        .filter(|(n, _)| args.only.is_empty() || args.only.iter().any(|o| o == n))
        .collect()
}

struct Run<'a> {
    client: &'a Client,
    args: &'a Args,
    scale: Scale,
    lines: u64,
    next_order: u64,
    live: Vec<(String, String)>,
    failures: Vec<String>,
}

async fn bench(args: &Args, dsn: &str) -> Result<TpchResults, BenchError> {
    let client = connect(dsn).await?;
    let scale = Scale::at(args.sf);
    for (name, _) in tpch_queries::views(true) {
        let _ = exec(&client, &format!("DROP MATERIALIZED VIEW IF EXISTS {name}")).await;
    }
    for t in tpch_data::TABLES.iter().rev() {
        let _ = exec(&client, &format!("DROP TABLE IF EXISTS {t} CASCADE")).await;
    }
    let start = Instant::now();
    for t in tpch_data::TABLES {
        exec(&client, tpch_data::create_table(t)).await?;
    }
    for (label, sql) in tpch_data::load(&scale) {
        exec(&client, &sql).await?;
        eprintln!("[load] {label} {:.1}s", start.elapsed().as_secs_f64());
    }
    let load_seconds = start.elapsed().as_secs_f64();
    let lines = scalar_i64(&client, "SELECT count(*) FROM lineitem").await? as u64;
    // Best effort: CHECKPOINT needs a superuser, and the bench may connect as anyone.
    let _ = exec(&client, "CHECKPOINT").await;

    let mut views = Vec::new();
    let mut live = Vec::new();
    for (name, query) in selected(args) {
        let r = create_view(&client, &name, &query).await;
        if r.created {
            live.push((name, query));
        }
        views.push(r);
    }
    let mut run = Run {
        client: &client,
        args,
        scale,
        lines,
        next_order: scale.orders,
        live,
        failures: Vec::new(),
    };
    // One untimed recompute per view, so the first size does not pay for cold caches.
    for (_, q) in &run.live {
        exec(&client, &format!("CREATE TEMP TABLE _full AS {q}")).await?;
        exec(&client, "DROP TABLE _full").await?;
    }
    let mut points = Vec::new();
    for (si, &fraction) in args.changes.iter().enumerate() {
        points.extend(run.change_size(si, fraction).await?);
    }
    Ok(TpchResults {
        command: args.command_line(),
        sf: args.sf,
        reps: args.reps,
        scale,
        lines,
        load_seconds,
        refresh_mode: args.refresh_mode.clone(),
        views,
        refresh: points,
        failures: run.failures,
    })
}

async fn create_view(client: &Client, name: &str, query: &str) -> ViewResult {
    let mut r = ViewResult {
        name: name.into(),
        label: name.into(),
        fact: "lineitem".into(),
        query: query.into(),
        created: false,
        create_error: None,
        create_ms: None,
        strategy: None,
        rows: None,
    };
    let sql = format!("CREATE MATERIALIZED VIEW {name} AS {query}");
    match timed(client, &sql).await {
        Ok(d) => {
            r.created = true;
            r.create_ms = Some(ms(d));
            let st = format!("SELECT strategy FROM duckmv.views WHERE name = '{name}'");
            r.strategy = scalar(client, &st).await.ok().flatten();
            r.rows = scalar_i64(client, &format!("SELECT count(*) FROM {name}"))
                .await
                .ok();
            eprintln!(
                "[views] {name} created in {:.0} ms, {} rows, strategy: {}",
                ms(d),
                r.rows.unwrap_or(-1),
                r.strategy.as_deref().unwrap_or("?")
            );
        }
        Err(e) => {
            eprintln!("[views] {name} NOT created: {e}");
            r.create_error = Some(e.to_string());
        }
    }
    r
}

/// Bag equality of a view and its query, both ways: 0 rows differ when the view is right.
fn oracle_sql(name: &str, query: &str) -> String {
    format!(
        "SELECT count(*) FROM ((SELECT * FROM {name} EXCEPT ALL ({query})) \
         UNION ALL (({query}) EXCEPT ALL SELECT * FROM {name})) AS diff"
    )
}

impl Run<'_> {
    async fn apply_batch(&mut self, fraction: f64, salt: u64) -> Result<Batch, BenchError> {
        let batch = Batch::of(fraction, &self.scale, self.lines);
        let start = Instant::now();
        for sql in tpch_changes::statements(&batch, &self.scale, self.next_order, salt) {
            exec(self.client, &sql).await?;
        }
        self.next_order += batch.new_orders;
        eprintln!(
            "[change {}] {batch:?} in {:.2}s",
            percent(fraction),
            start.elapsed().as_secs_f64()
        );
        Ok(batch)
    }

    fn fail(&mut self, view: &str, what: String) {
        eprintln!("!!!!!!!! {view}: {what}");
        self.failures.push(format!("{view}: {what}"));
        self.live.retain(|(n, _)| n != view);
    }

    async fn set_mode(&self, mode: &str) -> Result<(), BenchError> {
        exec(self.client, &format!("SET duckmv.refresh_mode = '{mode}'")).await
    }

    async fn change_size(
        &mut self,
        si: usize,
        fraction: f64,
    ) -> Result<Vec<RefreshPoint>, BenchError> {
        let rows = Batch::of(fraction, &self.scale, self.lines).fact_rows();
        let mut points: Vec<RefreshPoint> = self
            .live
            .iter()
            .map(|(name, _)| RefreshPoint::new(name, fraction, rows))
            .collect();
        for rep in 0..self.args.reps {
            let salt = 1000 * (si as u64 + 1) + 10 * rep as u64;
            self.apply_batch(fraction, salt).await?;
            self.set_mode(&self.args.refresh_mode).await?;
            for (name, query) in self.live.clone() {
                let p = points.iter_mut().find(|p| p.view == name).unwrap();
                match timed(self.client, &format!("REFRESH MATERIALIZED VIEW {name}")).await {
                    Ok(d) => p.incremental_ms.push(ms(d)),
                    Err(e) => {
                        p.oracle = format!("error: REFRESH failed: {e}");
                        self.fail(
                            &name,
                            format!("at {}: REFRESH failed: {e}", percent(fraction)),
                        );
                        continue;
                    }
                }
                let mode =
                    format!("SELECT last_refresh_mode FROM duckmv.views WHERE name = '{name}'");
                let mode = scalar(self.client, &mode).await.ok().flatten();
                p.modes.push(mode.unwrap_or_else(|| "?".into()));
                if rep == 0 || self.args.check_every_refresh {
                    match scalar_i64(self.client, &oracle_sql(&name, &query)).await {
                        Ok(0) => p.oracle = "pass".into(),
                        Ok(n) => {
                            p.oracle = format!("FAIL: {n} rows differ");
                            self.fail(
                                &name,
                                format!("at {}: oracle FAILED, {n} rows differ", percent(fraction)),
                            );
                        }
                        Err(e) => {
                            p.oracle = format!("error: {e}");
                            self.fail(
                                &name,
                                format!("at {}: oracle failed: {e}", percent(fraction)),
                            );
                        }
                    }
                }
            }
            for (name, query) in self.live.clone() {
                let p = points.iter_mut().find(|p| p.view == name).unwrap();
                let d = timed(self.client, &format!("CREATE TEMP TABLE _full AS {query}")).await?;
                exec(self.client, "DROP TABLE _full").await?;
                p.full_ctas_ms.push(ms(d));
            }
            if !self.args.skip_full {
                self.apply_batch(fraction, salt + 5).await?;
                self.set_mode("full").await?;
                for (name, _) in self.live.clone() {
                    let p = points.iter_mut().find(|p| p.view == name).unwrap();
                    match timed(self.client, &format!("REFRESH MATERIALIZED VIEW {name}")).await {
                        Ok(d) => p.full_refresh_ms.push(ms(d)),
                        Err(e) => self.fail(&name, format!("forced full REFRESH failed: {e}")),
                    }
                }
            }
            self.set_mode("auto").await?;
            for p in &points {
                eprintln!(
                    "[refresh {}] rep {}/{} {:<9} {} {:>8.1} ms, CTAS {:>8.1} ms",
                    percent(fraction),
                    rep + 1,
                    self.args.reps,
                    p.view,
                    p.modes.last().map(String::as_str).unwrap_or("?"),
                    p.incremental_ms.last().copied().unwrap_or(f64::NAN),
                    p.full_ctas_ms.last().copied().unwrap_or(f64::NAN),
                );
            }
        }
        points.iter_mut().for_each(RefreshPoint::summarise);
        Ok(points)
    }
}
