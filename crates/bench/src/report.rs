//! The benchmark's results: the JSON document and the markdown table for README.md.

use serde::Serialize;

use crate::stats::{median, ratio};

use crate::backlog::Backlog;
use crate::capture::CaptureCost;
use crate::data::Sizes;
use crate::steady::Steady;
use crate::stream::Rate;

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    /// The command that reproduces this run.
    pub command: String,
    pub started_at: String,
    pub sf: f64,
    pub reps: usize,
    pub sizes: Sizes,
    pub load_seconds: f64,
    /// Whether the server accepted `SET duckmv.refresh_mode = 'full'`; then "full" figures are
    /// forced full REFRESHes, otherwise `CREATE TEMP TABLE … AS <query>`.
    pub full_refresh_mode: bool,
    pub views: Vec<ViewResult>,
    pub refresh: Vec<RefreshPoint>,
    pub noop_refresh: Vec<Noop>,
    pub noop_refresh_median_ms: Option<f64>,
    /// A small refresh with the other views of its table up to date, then behind.
    pub backlog: Option<Backlog>,
    /// Refreshes after every batch with no DDL between them (`steady`).
    pub steady: Option<Steady>,
    pub capture: Option<CaptureCost>,
    pub streaming: Option<Streaming>,
    /// Every oracle failure and refresh error, in words.
    pub failures: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ViewResult {
    pub name: String,
    pub label: String,
    pub fact: String,
    pub query: String,
    pub created: bool,
    pub create_error: Option<String>,
    pub create_ms: Option<f64>,
    /// The maintenance strategy `duckmv.views` reports, when it can be read.
    pub strategy: Option<String>,
    pub rows: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RefreshPoint {
    pub view: String,
    /// Change size as a fraction of the view's fact table.
    pub fraction: f64,
    /// Rows of the fact table inserted + updated + deleted per batch.
    pub changed_rows: u64,
    /// `REFRESH MATERIALIZED VIEW` in the server's default mode, one sample per repetition.
    pub incremental_ms: Vec<f64>,
    pub incremental_median_ms: Option<f64>,
    /// `CREATE TEMP TABLE _full AS <query>`: the least a full refresh must do.
    pub full_ctas_ms: Vec<f64>,
    pub full_ctas_median_ms: Option<f64>,
    /// `CREATE TABLE _full_table AS <query>`: the same into a table of the database file, as a
    /// user keeping the result would (the view's storage is such a table).
    pub full_table_ms: Vec<f64>,
    pub full_table_median_ms: Option<f64>,
    /// `REFRESH` with `duckmv.refresh_mode = 'full'`, when the server has that setting.
    pub full_refresh_ms: Vec<f64>,
    pub full_refresh_median_ms: Option<f64>,
    /// The full-recompute figure used for the ratio: CTAS of the query, the cheapest
    /// recompute a user could run (issue 16).
    pub full_median_ms: Option<f64>,
    pub full_method: String,
    /// CTAS / REFRESH: how many times faster the refresh is than recomputing.
    pub ratio: Option<f64>,
    /// "pass", "FAIL: n rows differ", "error: …", or "not checked".
    pub oracle: String,
    /// How each default-mode REFRESH brought the view up to date, as `duckmv.views` reports it
    /// ("incremental", or "full" when `auto` judged the change too large).
    pub modes: Vec<String>,
}

impl RefreshPoint {
    /// A point with no samples yet.
    pub fn new(view: &str, fraction: f64, changed_rows: u64) -> RefreshPoint {
        RefreshPoint {
            view: view.into(),
            fraction,
            changed_rows,
            incremental_ms: vec![],
            incremental_median_ms: None,
            full_ctas_ms: vec![],
            full_ctas_median_ms: None,
            full_table_ms: vec![],
            full_table_median_ms: None,
            full_refresh_ms: vec![],
            full_refresh_median_ms: None,
            full_median_ms: None,
            full_method: "ctas".into(),
            ratio: None,
            oracle: "not checked".into(),
            modes: vec![],
        }
    }
}

impl RefreshPoint {
    /// Medians of the samples, and the ratio against CTAS of the query (issue 16: the cheapest
    /// recompute a user could run); the forced full REFRESH is reported beside it.
    pub fn summarise(&mut self) {
        self.incremental_median_ms = median(&self.incremental_ms);
        self.full_ctas_median_ms = median(&self.full_ctas_ms);
        self.full_table_median_ms = median(&self.full_table_ms);
        self.full_refresh_median_ms = median(&self.full_refresh_ms);
        self.full_median_ms = self.full_ctas_median_ms;
        self.ratio = ratio(self.full_ctas_median_ms, self.incremental_median_ms);
    }
}

/// The modes of a point's refreshes in one word: the mode when all agree, else how many were
/// full.
pub fn fmt_modes(modes: &[String]) -> String {
    match modes.first() {
        None => "–".into(),
        Some(m) if modes.iter().all(|x| x == m) => m.clone(),
        Some(_) => format!(
            "full {}/{}",
            modes.iter().filter(|m| *m == "full").count(),
            modes.len()
        ),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Noop {
    pub view: String,
    pub samples_ms: Vec<f64>,
    pub median_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Streaming {
    pub query: String,
    pub wire: Rate,
    pub in_process: Rate,
    /// wire rate / in-process rate.
    pub ratio: f64,
}

/// `0.0001` → `0.01%`.
/// A view's label, or its name when the run does not know it.
fn label_of<'a>(r: &'a Results, view: &'a str) -> &'a str {
    r.views
        .iter()
        .find(|v| v.name == view)
        .map(|v| v.label.as_str())
        .unwrap_or(view)
}

pub fn percent(fraction: f64) -> String {
    let s = format!("{:.4}", fraction * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Milliseconds with a precision that suits their size.
pub fn fmt_ms(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v < 10.0 => format!("{v:.2}"),
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
    }
}

pub fn fmt_ratio(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v < 10.0 => format!("{v:.2}×"),
        Some(v) => format!("{v:.0}×"),
    }
}

fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2}M rows/s", r / 1e6)
    } else {
        format!("{:.0}k rows/s", r / 1e3)
    }
}

/// The results as markdown, ready to paste into README.md.
pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "Benchmark at SF {} ({} lineitem, {} orders, {} customers), {} repetition(s), medians; \
         made by `{}`.\n\n",
        r.sf, r.sizes.lineitem, r.sizes.orders, r.sizes.customer, r.reps, r.command
    ));
    s.push_str(
        "| view | change | rows changed | REFRESH, default mode (ms) | mode used | CTAS of the query (ms) | CTAS / REFRESH | CTAS into a table (ms) | forced full REFRESH (ms) | oracle |\n",
    );
    s.push_str("|---|---:|---:|---:|---|---:|---:|---:|---:|---|\n");
    for p in &r.refresh {
        let label = label_of(r, &p.view);
        s.push_str(&format!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            percent(p.fraction),
            p.changed_rows,
            fmt_ms(p.incremental_median_ms),
            fmt_modes(&p.modes),
            fmt_ms(p.full_ctas_median_ms),
            fmt_ratio(p.ratio),
            fmt_ms(p.full_table_median_ms),
            fmt_ms(p.full_refresh_median_ms),
            p.oracle
        ));
    }
    let missing: Vec<&ViewResult> = r.views.iter().filter(|v| !v.created).collect();
    if !missing.is_empty() {
        s.push_str("\nViews the server did not create:\n\n");
        for v in missing {
            s.push_str(&format!(
                "- {}: {}\n",
                v.label,
                v.create_error.as_deref().unwrap_or("?")
            ));
        }
    }
    if let Some(st) = &r.steady {
        s.push_str(&format!(
            "\nThe same views refreshed after each of {} batches of {} with no DDL in between \
             (the first refresh, after the DDL above, apart; median of the rest):\n\n\
             | view | first REFRESH (ms) | REFRESH (ms) | CTAS of the query (ms) | CTAS / REFRESH |\n\
             |---|---:|---:|---:|---:|\n",
            crate::steady::ROUNDS,
            percent(st.fraction)
        ));
        for v in &st.views {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                label_of(r, &v.view),
                fmt_ms(v.first_ms),
                fmt_ms(v.refresh_median_ms),
                fmt_ms(v.ctas_median_ms),
                fmt_ratio(v.ratio)
            ));
        }
    }
    s.push_str("\n| measurement | result |\n|---|---|\n");
    s.push_str(&format!(
        "| REFRESH with nothing pending (median over views) | {} ms |\n",
        fmt_ms(r.noop_refresh_median_ms)
    ));
    if let Some(b) = &r.backlog {
        s.push_str(&format!(
            "| REFRESH of {} after a few rows, the other views of its table behind by {} log rows / up to date | {} ({} ms / {} ms) |\n",
            b.view,
            b.log_rows,
            fmt_ratio(b.ratio),
            fmt_ms(median(&b.backlog_ms)),
            fmt_ms(median(&b.quiet_ms)),
        ));
    }
    if let Some(c) = &r.capture {
        if let Some(e) = &c.error {
            s.push_str(&format!("| capture cost | not measured: {e} |\n"));
        }
        for p in &c.points {
            let what = if p.statement.starts_with("bulk") {
                format!("{} of {} rows", p.statement, c.bulk_rows)
            } else {
                format!("{} single-row {}s", c.single_rows, p.statement)
            };
            s.push_str(&format!(
                "| capture, {} views over the table: {what}, tracked / plain | {} ({} ms / {} ms) |\n",
                p.views,
                fmt_ratio(p.ratio),
                fmt_ms(crate::stats::median(&p.tracked_ms)),
                fmt_ms(crate::stats::median(&p.plain_ms)),
            ));
        }
    }
    if let Some(st) = &r.streaming {
        s.push_str(&format!(
            "| streaming {} rows: over the wire / DuckDB in-process | {:.2} ({} / {}) |\n",
            st.wire.rows,
            st.ratio,
            fmt_rate(st.wire.rows_per_s),
            fmt_rate(st.in_process.rows_per_s)
        ));
    }
    if !r.failures.is_empty() {
        s.push_str("\n**Failures:**\n\n");
        for f in &r.failures {
            s.push_str(&format!("- {f}\n"));
        }
    }
    s
}

#[cfg(test)]
pub mod tests {
    use super::*;

    #[test]
    fn percents_and_numbers() {
        assert_eq!(percent(0.0001), "0.01%");
        assert_eq!(percent(0.001), "0.1%");
        assert_eq!(percent(0.01), "1%");
        assert_eq!(percent(0.1), "10%");
        assert_eq!(fmt_ms(Some(1.234)), "1.23");
        assert_eq!(fmt_ms(Some(123.4)), "123");
        assert_eq!(fmt_ratio(Some(37.2)), "37×");
        assert_eq!(fmt_ratio(None), "–");
    }

    pub fn sample() -> Results {
        let point = |view: &str, fraction: f64, inc: f64, full: f64| RefreshPoint {
            view: view.into(),
            fraction,
            changed_rows: 10,
            incremental_ms: vec![inc],
            incremental_median_ms: Some(inc),
            full_ctas_ms: vec![full],
            full_ctas_median_ms: Some(full),
            full_table_ms: vec![],
            full_table_median_ms: None,
            full_refresh_ms: vec![],
            full_refresh_median_ms: None,
            full_median_ms: Some(full),
            full_method: "ctas".into(),
            ratio: Some(full / inc),
            oracle: "pass".into(),
            modes: vec!["incremental".into()],
        };
        let view = |name: &str, label: &str, created: bool| ViewResult {
            name: name.into(),
            label: label.into(),
            fact: "lineitem".into(),
            query: "SELECT 1".into(),
            created,
            create_error: (!created).then(|| "not supported".to_string()),
            create_ms: None,
            strategy: None,
            rows: None,
        };
        Results {
            command: "scripts/bench --sf 0.1".into(),
            started_at: "now".into(),
            sf: 0.1,
            reps: 3,
            sizes: Sizes::at(0.1),
            load_seconds: 1.0,
            full_refresh_mode: false,
            views: vec![
                view("v1", "V1 <agg> & co", true),
                view("v3", "V3 left", false),
            ],
            refresh: vec![
                point("v1", 0.0001, 1.0, 50.0),
                point("v1", 0.001, 2.0, 52.0),
                point("v1", 0.1, 40.0, 60.0),
            ],
            noop_refresh: vec![],
            noop_refresh_median_ms: Some(0.7),
            backlog: None,
            steady: None,
            capture: None,
            streaming: None,
            failures: vec!["v1 at 10%: FAIL: 2 rows differ".into()],
        }
    }

    #[test]
    fn modes_in_one_word() {
        let m = |v: &[&str]| fmt_modes(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(m(&["incremental", "incremental"]), "incremental");
        assert_eq!(m(&["full", "incremental", "full"]), "full 2/3");
        assert_eq!(m(&[]), "–");
    }

    #[test]
    fn markdown_has_a_row_per_point_and_names_the_gaps() {
        let md = markdown(&sample());
        assert!(
            md.contains(
                "| V1 <agg> & co | 0.01% | 10 | 1.00 | incremental | 50.0 | 50× | – | – | pass |"
            ),
            "{md}"
        );
        assert_eq!(md.matches("| V1 <agg> & co |").count(), 3);
        assert!(md.contains("- V3 left: not supported"));
        assert!(md.contains("| CTAS / REFRESH |"));
        assert!(md.contains("| REFRESH with nothing pending (median over views) | 0.70 ms |"));
        assert!(md.contains("**Failures:**"));
        let json = serde_json::to_value(sample()).unwrap();
        assert_eq!(json["refresh"][0]["ratio"], 50.0);
        assert_eq!(json["sizes"]["lineitem"], 600_000);
    }
}
