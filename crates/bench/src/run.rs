//! The benchmark from start to end: server, load, views, change batches and refreshes, the
//! extra measurements, then JSON, SVG and the markdown table.

use std::path::Path;
use std::time::Instant;

use tokio_postgres::Client;

use crate::changes::{self, Mix};
use crate::cli::Args;
use crate::data::{self, Sizes};
use crate::error::BenchError;
use crate::measure::{connect, exec, scalar, scalar_i64, timed};
use crate::report::{self, percent, Noop, RefreshPoint, Results, Streaming, ViewResult};
use crate::stats::{median, ms};
use crate::views::{self, View, VIEWS};
use crate::{backlog, capture, steady, stream, svg};

/// Runs everything; Ok(false) when a view failed its oracle or its refresh.
pub async fn main(args: Args) -> Result<bool, BenchError> {
    args.check()?;
    let a = &args;
    let results = crate::server::against(&args, |dsn| async move { bench(a, &dsn).await }).await?;
    write_outputs(&args, &results)?;
    println!("{}", report::markdown(&results));
    if !results.failures.is_empty() {
        eprintln!("\n!!!!!!!! {} FAILURE(S) !!!!!!!!", results.failures.len());
        for f in &results.failures {
            eprintln!("!!! {f}");
        }
    }
    Ok(results.failures.is_empty())
}

fn write_outputs(args: &Args, r: &Results) -> Result<(), BenchError> {
    let write = |path: &Path, text: String| -> Result<(), BenchError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| BenchError::io(format!("create {}", dir.display()), e))?;
        }
        std::fs::write(path, text)
            .map_err(|e| BenchError::io(format!("write {}", path.display()), e))
    };
    let json = serde_json::to_string_pretty(r).expect("results serialise");
    write(&args.out, json + "\n")?;
    write(&args.svg, svg::render(r))?;
    eprintln!(
        "[out] wrote {} and {}",
        args.out.display(),
        args.svg.display()
    );
    Ok(())
}

/// Mutable state of a run: which views are still measured, and the next new order key.
struct Run<'a> {
    client: &'a Client,
    sizes: Sizes,
    args: &'a Args,
    live: Vec<View>,
    next_order: u64,
    failures: Vec<String>,
    full_mode: bool,
}

async fn bench(args: &Args, dsn: &str) -> Result<Results, BenchError> {
    let started_at = chrono::Utc::now().to_rfc3339();
    let client = connect(dsn).await?;
    let sizes = Sizes::at(args.sf);

    drop_everything(&client).await;
    let load_start = Instant::now();
    load(&client, &sizes).await?;
    if args.primary_keys {
        exec(&client, "ALTER TABLE customer ADD PRIMARY KEY (c_custkey)").await?;
        exec(&client, "ALTER TABLE orders ADD PRIMARY KEY (o_orderkey)").await?;
    }
    let load_seconds = load_start.elapsed().as_secs_f64();

    let mut view_results = Vec::new();
    let mut live = Vec::new();
    for v in VIEWS {
        let r = create_view(&client, &v).await;
        if r.created {
            live.push(v);
        }
        view_results.push(r);
    }
    let full_mode = probe_full_mode(&client, live.first()).await;
    eprintln!(
        "[views] {} of {} created; full figures from {}",
        live.len(),
        VIEWS.len(),
        if full_mode {
            "SET duckmv.refresh_mode = 'full'; REFRESH"
        } else {
            "CREATE TEMP TABLE _full AS <query>"
        }
    );

    let mut run = Run {
        client: &client,
        sizes,
        args,
        live,
        next_order: sizes.orders,
        failures: Vec::new(),
        full_mode,
    };
    // One untimed recompute per view first, so the first change size does not pay for cold
    // caches that later ones find warm.
    for v in &run.live {
        for sql in views::full_recompute_sql(v) {
            exec(&client, &sql).await?;
        }
    }
    let mut points = Vec::new();
    for (si, &fraction) in args.changes.iter().enumerate() {
        points.extend(run.change_size(si, fraction).await?);
    }

    let steady = run.steady(&points).await?;
    let noop = run.noop_refreshes().await?;
    let all: Vec<f64> = noop.iter().flat_map(|n| n.samples_ms.clone()).collect();
    let backlog = run.backlog().await?;

    let bulk_rows = sizes.lineitem.clamp(10_000, 100_000);
    eprintln!(
        "[capture] bulk insert of {bulk_rows} rows and {} single-row INSERT/UPDATE/DELETE, at {:?} views",
        capture::SINGLE_ROWS,
        capture::VIEW_COUNTS
    );
    let capture = capture::measure(&client, bulk_rows, args.reps).await?;

    let streaming = measure_streaming(&client, args).await?;

    Ok(Results {
        command: args.command_line(),
        started_at,
        sf: args.sf,
        reps: args.reps,
        sizes,
        load_seconds,
        full_refresh_mode: full_mode,
        views: view_results,
        refresh: points,
        noop_refresh: noop,
        noop_refresh_median_ms: median(&all),
        backlog,
        steady,
        capture: Some(capture),
        streaming: Some(streaming),
        failures: run.failures,
    })
}

/// Drops what an earlier run against the same server left (only with `--dsn`; a fresh server
/// has nothing). Errors are expected for what does not exist and ignored.
async fn drop_everything(client: &Client) {
    for v in VIEWS {
        let _ = exec(
            client,
            &format!("DROP MATERIALIZED VIEW IF EXISTS {}", v.name),
        )
        .await;
    }
    for i in 0..capture::MAX_VIEWS {
        let _ = exec(
            client,
            &format!("DROP MATERIALIZED VIEW IF EXISTS {}", capture::view_name(i)),
        )
        .await;
    }
    for t in data::TABLES.iter().rev() {
        let _ = exec(client, &format!("DROP TABLE IF EXISTS {t}")).await;
    }
}

async fn load(client: &Client, sizes: &Sizes) -> Result<(), BenchError> {
    for t in data::TABLES {
        exec(client, data::create_table(t)).await?;
        let total = data::rows_of(t, sizes);
        let start = Instant::now();
        for (done, sql) in data::load_statements(t, sizes) {
            exec(client, &sql).await?;
            eprintln!(
                "[load] {t:<8} {done:>9}/{total} rows ({:>3.0}%) {:.1}s",
                done as f64 * 100.0 / total as f64,
                start.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

async fn create_view(client: &Client, v: &View) -> ViewResult {
    let mut r = ViewResult {
        name: v.name.into(),
        label: v.label.into(),
        fact: v.fact.into(),
        query: v.query.into(),
        created: false,
        create_error: None,
        create_ms: None,
        strategy: None,
        rows: None,
    };
    match timed(client, &views::create_sql(v)).await {
        Ok(d) => {
            r.created = true;
            r.create_ms = Some(ms(d));
            r.strategy = scalar(
                client,
                &format!(
                    "SELECT strategy FROM duckmv.views WHERE name = '{}'",
                    v.name
                ),
            )
            .await
            .ok()
            .flatten();
            r.rows = scalar_i64(client, &format!("SELECT count(*) FROM {}", v.name))
                .await
                .ok();
            eprintln!(
                "[views] {} created in {:.0} ms, {} rows, strategy: {}",
                v.name,
                ms(d),
                r.rows.unwrap_or(-1),
                r.strategy.as_deref().unwrap_or("?")
            );
        }
        Err(e) => {
            eprintln!("[views] {} NOT created (skipped): {e}", v.name);
            r.create_error = Some(e.to_string());
        }
    }
    r
}

/// Whether the server really forces full refreshes with `duckmv.refresh_mode = 'full'` (issue 6).
/// Accepting the SET is not proof (a server may store settings it does not act on), so this
/// also needs `duckmv.views` to report the mode of the last refresh (a column whose name
/// contains "mode"), and that column to say "full" after a forced refresh of `view`.
async fn probe_full_mode(client: &Client, view: Option<&View>) -> bool {
    let Some(view) = view else { return false };
    // The columns of duckmv.views as the server describes them (its information_schema
    // leaves out duckmv's own schemas).
    let column = match client.prepare("SELECT * FROM duckmv.views").await {
        Ok(st) => st
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .filter(|n| n.to_ascii_lowercase().contains("mode"))
            .min(),
        Err(_) => None,
    };
    let Some(column) = column else {
        eprintln!("[views] duckmv.views reports no refresh mode: full figures from CTAS");
        return false;
    };
    if exec(client, "SET duckmv.refresh_mode = 'full'")
        .await
        .is_err()
    {
        return false;
    }
    let refreshed = exec(client, &format!("REFRESH MATERIALIZED VIEW {}", view.name)).await;
    let back = set_default_mode(client).await;
    let mode = scalar(
        client,
        &format!(
            "SELECT \"{column}\" FROM duckmv.views WHERE name = '{}'",
            view.name
        ),
    )
    .await
    .ok()
    .flatten()
    .unwrap_or_default();
    let honoured = refreshed.is_ok() && back && mode.to_ascii_lowercase().contains("full");
    if !honoured {
        eprintln!(
            "[views] a forced full REFRESH left duckmv.views.{column} = {mode:?}: full figures from CTAS"
        );
    }
    honoured
}

async fn set_default_mode(client: &Client) -> bool {
    exec(client, "RESET duckmv.refresh_mode").await.is_ok()
        || exec(client, "SET duckmv.refresh_mode = 'auto'")
            .await
            .is_ok()
}

impl Run<'_> {
    /// Applies one batch of changes of `fraction` to lineitem and orders.
    async fn apply_batch(&mut self, fraction: f64, salt: u64) -> Result<(Mix, Mix), BenchError> {
        let lmix = Mix::of(changes::rows_for(fraction, self.sizes.lineitem));
        let omix = Mix::of(changes::rows_for(fraction, self.sizes.orders));
        let start = Instant::now();
        for sql in changes::lineitem(&self.sizes, self.next_order, lmix, salt) {
            exec(self.client, &sql).await?;
        }
        for sql in changes::orders(&self.sizes, self.next_order, omix, salt) {
            exec(self.client, &sql).await?;
        }
        self.next_order += omix.inserts;
        eprintln!(
            "[change {}] {} lineitem + {} orders rows changed in {:.2}s",
            percent(fraction),
            lmix.total(),
            omix.total(),
            start.elapsed().as_secs_f64()
        );
        Ok((lmix, omix))
    }

    /// A view whose refresh failed is reported and no longer measured.
    fn fail(&mut self, view: &str, what: String) {
        eprintln!("!!!!!!!! {view}: {what}");
        self.failures.push(format!("{view}: {what}"));
        self.live.retain(|v| v.name != view);
    }

    async fn change_size(
        &mut self,
        si: usize,
        fraction: f64,
    ) -> Result<Vec<RefreshPoint>, BenchError> {
        let mut points: Vec<RefreshPoint> = self
            .live
            .iter()
            .map(|v| {
                let rows = changes::rows_for(fraction, data::rows_of(v.fact, &self.sizes));
                RefreshPoint::new(v.name, fraction, rows)
            })
            .collect();
        for rep in 0..self.args.reps {
            let salt = 1000 * (si as u64 + 1) + 10 * rep as u64;
            self.apply_batch(fraction, salt).await?;
            for v in self.live.clone() {
                let p = points.iter_mut().find(|p| p.view == v.name).unwrap();
                let refresh = format!("REFRESH MATERIALIZED VIEW {}", v.name);
                match timed(self.client, &refresh).await {
                    Ok(d) => {
                        p.incremental_ms.push(ms(d));
                        let mode = scalar(
                            self.client,
                            &format!(
                                "SELECT last_refresh_mode FROM duckmv.views WHERE name = '{}'",
                                v.name
                            ),
                        )
                        .await;
                        p.modes
                            .push(mode.ok().flatten().unwrap_or_else(|| "?".into()));
                    }
                    Err(e) => {
                        p.oracle = format!("error: REFRESH failed: {e}");
                        self.fail(
                            v.name,
                            format!("at {}: REFRESH failed: {e}", percent(fraction)),
                        );
                        continue;
                    }
                }
                // The oracle once per view and change size, before any forced full refresh
                // could repair the view.
                if rep == 0 {
                    match scalar_i64(self.client, &views::oracle_sql(&v)).await {
                        Ok(0) => p.oracle = "pass".into(),
                        Ok(n) => {
                            p.oracle = format!("FAIL: {n} rows differ");
                            self.fail(
                                v.name,
                                format!("at {}: oracle FAILED, {n} rows differ", percent(fraction)),
                            );
                        }
                        Err(e) => {
                            p.oracle = format!("error: {e}");
                            self.fail(
                                v.name,
                                format!("at {}: oracle query failed: {e}", percent(fraction)),
                            );
                        }
                    }
                }
            }
            for v in self.live.clone() {
                let p = points.iter_mut().find(|p| p.view == v.name).unwrap();
                let [create, drop_table] = views::full_recompute_sql(&v);
                let d = timed(self.client, &create).await?;
                exec(self.client, &drop_table).await?;
                p.full_ctas_ms.push(ms(d));
                let [create, drop_table] = views::table_recompute_sql(&v);
                let d = timed(self.client, &create).await?;
                exec(self.client, &drop_table).await?;
                p.full_table_ms.push(ms(d));
            }
            if self.full_mode {
                // A fresh batch of the same size, so the forced full refresh has the same
                // pending work as the incremental one had.
                self.apply_batch(fraction, salt + 5).await?;
                exec(self.client, "SET duckmv.refresh_mode = 'full'").await?;
                for v in self.live.clone() {
                    let p = points.iter_mut().find(|p| p.view == v.name).unwrap();
                    let refresh = format!("REFRESH MATERIALIZED VIEW {}", v.name);
                    match timed(self.client, &refresh).await {
                        Ok(d) => p.full_refresh_ms.push(ms(d)),
                        Err(e) => self.fail(
                            v.name,
                            format!("at {}: forced full REFRESH failed: {e}", percent(fraction)),
                        ),
                    }
                }
                set_default_mode(self.client).await;
            }
            for p in &points {
                eprintln!(
                    "[refresh {}] rep {}/{} {:<14} incremental {} ms, full {} ms",
                    percent(fraction),
                    rep + 1,
                    self.args.reps,
                    p.view,
                    report::fmt_ms(p.incremental_ms.last().copied()),
                    report::fmt_ms(p.full_refresh_ms.last().or(p.full_ctas_ms.last()).copied()),
                );
            }
        }
        points.iter_mut().for_each(RefreshPoint::summarise);
        Ok(points)
    }

    /// Batches and refreshes with nothing between them (see `steady`), at 0.1% or the smallest
    /// size run; every view is checked against its query at the end.
    async fn steady(
        &mut self,
        points: &[RefreshPoint],
    ) -> Result<Option<steady::Steady>, BenchError> {
        let Some(fraction) = steady::fraction(&self.args.changes) else {
            return Ok(None);
        };
        let views: Vec<View> = self
            .live
            .iter()
            .filter(|v| steady::takes_part(points, v.name, fraction))
            .copied()
            .collect();
        let mut times = vec![Vec::new(); views.len()];
        for round in 0..steady::ROUNDS {
            self.apply_batch(fraction, 900_000 + round as u64).await?;
            for (v, t) in views.iter().zip(&mut times) {
                let refresh = format!("REFRESH MATERIALIZED VIEW {}", v.name);
                t.push(ms(timed(self.client, &refresh).await?));
            }
        }
        for v in &views {
            let differ = scalar_i64(self.client, &views::oracle_sql(v)).await?;
            if differ != 0 {
                self.fail(
                    v.name,
                    format!("after the steady series: oracle FAILED, {differ} rows differ"),
                );
            }
        }
        let views = views
            .iter()
            .zip(&times)
            .map(|(v, t)| steady::summarise(v.name, t, points, fraction))
            .collect::<Vec<_>>();
        for s in &views {
            eprintln!(
                "[steady] {:<14} first {} ms, then {} ms",
                s.view,
                report::fmt_ms(s.first_ms),
                report::fmt_ms(s.refresh_median_ms)
            );
        }
        Ok(Some(steady::Steady { fraction, views }))
    }

    /// V1's refresh of a few rows with the other views of `lineitem` up to date, then behind
    /// (see `backlog`); None without V1 or another view of `lineitem`.
    async fn backlog(&mut self) -> Result<Option<backlog::Backlog>, BenchError> {
        let Some(v1) = self.live.iter().find(|v| v.name == "v1_q1").copied() else {
            return Ok(None);
        };
        let others: Vec<View> = self
            .live
            .iter()
            .filter(|v| v.fact == "lineitem" && v.name != v1.name)
            .copied()
            .collect();
        let b = backlog::measure(self.client, &self.sizes, &v1, &others).await?;
        if let Some(b) = &b {
            eprintln!(
                "[backlog] {} after a few rows: {} ms up to date, {} ms beside {} log rows",
                b.view,
                report::fmt_ms(median(&b.quiet_ms)),
                report::fmt_ms(median(&b.backlog_ms)),
                b.log_rows
            );
        }
        Ok(b)
    }

    /// `REFRESH` with nothing pending, several times per view.
    async fn noop_refreshes(&mut self) -> Result<Vec<Noop>, BenchError> {
        const SAMPLES: usize = 11;
        let mut out = Vec::new();
        for v in self.live.clone() {
            let refresh = format!("REFRESH MATERIALIZED VIEW {}", v.name);
            // Consume anything still pending first.
            if let Err(e) = exec(self.client, &refresh).await {
                self.fail(v.name, format!("REFRESH failed: {e}"));
                continue;
            }
            let mut samples = Vec::new();
            for _ in 0..SAMPLES {
                samples.push(ms(timed(self.client, &refresh).await?));
            }
            let m = median(&samples);
            eprintln!("[noop] {:<14} {} ms", v.name, report::fmt_ms(m));
            out.push(Noop {
                view: v.name.into(),
                samples_ms: samples,
                median_ms: m,
            });
        }
        Ok(out)
    }
}

async fn measure_streaming(client: &Client, args: &Args) -> Result<Streaming, BenchError> {
    let rows = args.stream_rows();
    let mut wire = Vec::new();
    let mut local = Vec::new();
    for _ in 0..args.reps {
        wire.push(stream::over_wire(client, rows).await?);
        local.push(stream::in_process(rows)?);
    }
    // The median repetition by rate.
    let pick = |mut v: Vec<stream::Rate>| {
        v.sort_by(|a, b| a.rows_per_s.partial_cmp(&b.rows_per_s).unwrap());
        v[v.len() / 2]
    };
    let (wire, in_process) = (pick(wire), pick(local));
    if wire.rows != rows {
        return Err(BenchError::Server(format!(
            "streamed {} rows over the wire, expected {rows}",
            wire.rows
        )));
    }
    eprintln!(
        "[stream] {rows} rows: wire {:.0} rows/s, in-process {:.0} rows/s",
        wire.rows_per_s, in_process.rows_per_s
    );
    Ok(Streaming {
        query: stream::query(rows),
        wire,
        in_process,
        ratio: wire.rows_per_s / in_process.rows_per_s,
    })
}
