//! The TPC-H benchmark's figures (issue 16): per view and change size the refresh time in the
//! chosen mode, the mode used, CTAS of the query, their ratio and the forced full REFRESH;
//! then per view the worst ratio over all sizes.

use serde::Serialize;

use crate::report::{fmt_modes, fmt_ms, fmt_ratio, percent, RefreshPoint, ViewResult};
use crate::tpch_data::Scale;

#[derive(Debug, Clone, Serialize)]
pub struct TpchResults {
    pub command: String,
    pub sf: f64,
    pub reps: usize,
    pub scale: Scale,
    pub lines: u64,
    pub load_seconds: f64,
    /// `duckmv.refresh_mode` of the timed refreshes.
    pub refresh_mode: String,
    pub views: Vec<ViewResult>,
    pub refresh: Vec<RefreshPoint>,
    pub failures: Vec<String>,
}

/// The worst (lowest) CTAS / REFRESH ratio of a view over all change sizes.
pub fn worst_ratio(points: &[RefreshPoint], view: &str) -> Option<(f64, f64)> {
    points
        .iter()
        .filter(|p| p.view == view)
        .filter_map(|p| p.ratio.map(|r| (r, p.fraction)))
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap())
}

pub fn markdown(r: &TpchResults) -> String {
    let mut s = format!(
        "TPC-H views at SF {} ({} lineitem, {} orders), REFRESH in `{}` mode, {} repetition(s), \
         medians; made by `{}`.\n\n",
        r.sf, r.lines, r.scale.orders, r.refresh_mode, r.reps, r.command
    );
    s.push_str(
        "| view | change | fact rows changed | REFRESH (ms) | mode used | CTAS (ms) | CTAS / REFRESH | forced full REFRESH (ms) | oracle |\n\
         |---|---:|---:|---:|---|---:|---:|---:|---|\n",
    );
    let mut points: Vec<&RefreshPoint> = r.refresh.iter().collect();
    points.sort_by(|a, b| {
        let rank = |v: &str| r.views.iter().position(|x| x.name == v);
        (rank(&a.view), a.fraction.to_bits()).cmp(&(rank(&b.view), b.fraction.to_bits()))
    });
    for p in points {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            p.view,
            percent(p.fraction),
            p.changed_rows,
            fmt_ms(p.incremental_median_ms),
            fmt_modes(&p.modes),
            fmt_ms(p.full_ctas_median_ms),
            fmt_ratio(p.ratio),
            fmt_ms(p.full_refresh_median_ms),
            p.oracle
        ));
    }
    s.push_str("\n| view | strategy | worst CTAS / REFRESH (at change) |\n|---|---|---:|\n");
    for v in &r.views {
        let worst = match worst_ratio(&r.refresh, &v.name) {
            Some((x, f)) => format!("{} ({})", fmt_ratio(Some(x)), percent(f)),
            None => "–".into(),
        };
        let strategy = match (&v.strategy, &v.create_error) {
            (Some(st), _) => st.clone(),
            (None, Some(e)) => format!("not created: {e}"),
            _ => "?".into(),
        };
        s.push_str(&format!("| {} | {} | {} |\n", v.name, strategy, worst));
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
mod tests {
    use super::*;

    fn point(view: &str, fraction: f64, inc: f64, ctas: f64) -> RefreshPoint {
        let mut p = RefreshPoint::new(view, fraction, 100);
        p.incremental_median_ms = Some(inc);
        p.full_ctas_median_ms = Some(ctas);
        p.ratio = Some(ctas / inc);
        p.modes = vec!["incremental".into()];
        p.oracle = "pass".into();
        p
    }

    #[test]
    fn the_worst_ratio_is_the_lowest_over_sizes() {
        let pts = vec![
            point("q1", 0.001, 2.0, 40.0),
            point("q1", 0.1, 50.0, 40.0),
            point("q3", 0.001, 5.0, 10.0),
        ];
        assert_eq!(worst_ratio(&pts, "q1"), Some((0.8, 0.1)));
        assert_eq!(worst_ratio(&pts, "q3"), Some((2.0, 0.001)));
        assert_eq!(worst_ratio(&pts, "q9"), None);
    }
}
