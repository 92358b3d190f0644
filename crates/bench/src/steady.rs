//! Refreshes in a run of writes and refreshes with no DDL between them: the views of the main
//! table refreshed after every batch, with nothing else in between. The main table times the
//! refresh right after the CTAS baselines and the forced full refreshes of the round before,
//! which change the catalog (CREATE TABLE, DROP, a full refresh's swap); a session plans a
//! refresh's statements again after any change of the catalog, and keeps the plans while the
//! catalog stays as it is (the server's `kept_plan`), which is how a server that only takes
//! writes and refreshes runs.
//!
//! Views whose refreshes at that size were all full are left out: a large full refresh swaps
//! the view's storage (DDL), which would make every other view plan again.

use serde::Serialize;

use crate::report::RefreshPoint;
use crate::stats::{median, ratio};

/// Batches in the series; the first, after the main table's DDL, is timed apart.
pub const ROUNDS: usize = 6;

#[derive(Debug, Clone, Serialize)]
pub struct Steady {
    /// Change size of each batch, as in the main table.
    pub fraction: f64,
    pub views: Vec<SteadyView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SteadyView {
    pub view: String,
    /// The refresh right after the main table's DDL (its statements planned again).
    pub first_ms: Option<f64>,
    /// The refreshes after it.
    pub refresh_ms: Vec<f64>,
    pub refresh_median_ms: Option<f64>,
    /// CTAS of the query at the same change size (the main table's median).
    pub ctas_median_ms: Option<f64>,
    /// CTAS / REFRESH.
    pub ratio: Option<f64>,
}

/// The change size of the series: 0.1% when the run has it (the targets), else the
/// smallest size run.
pub fn fraction(changes: &[f64]) -> Option<f64> {
    changes
        .iter()
        .copied()
        .find(|f| (*f - 0.001).abs() < 1e-12)
        .or_else(|| changes.iter().copied().reduce(f64::min))
}

/// Whether `view` goes into the series: some refresh at that size was not a full one.
pub fn takes_part(points: &[RefreshPoint], view: &str, fraction: f64) -> bool {
    points
        .iter()
        .filter(|p| p.view == view && (p.fraction - fraction).abs() < 1e-12)
        .any(|p| p.modes.iter().any(|m| !m.starts_with("full")))
}

/// One view's figures from its refresh times, in order, and the main table's CTAS at that size.
pub fn summarise(view: &str, times: &[f64], points: &[RefreshPoint], fraction: f64) -> SteadyView {
    let ctas = points
        .iter()
        .find(|p| p.view == view && (p.fraction - fraction).abs() < 1e-12)
        .and_then(|p| p.full_ctas_median_ms);
    let refresh_ms = times.iter().skip(1).copied().collect::<Vec<_>>();
    let refresh_median_ms = median(&refresh_ms);
    SteadyView {
        view: view.to_string(),
        first_ms: times.first().copied(),
        ratio: ratio(ctas, refresh_median_ms),
        refresh_ms,
        refresh_median_ms,
        ctas_median_ms: ctas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(view: &str, fraction: f64, modes: &[&str], ctas: f64) -> RefreshPoint {
        let mut p = RefreshPoint::new(view, fraction, 6000);
        p.modes = modes.iter().map(|m| m.to_string()).collect();
        p.full_ctas_ms = vec![ctas];
        p.summarise();
        p
    }

    #[test]
    fn the_series_runs_at_a_tenth_of_a_percent_or_the_smallest_size() {
        assert_eq!(fraction(&[0.0001, 0.001, 0.1]), Some(0.001));
        assert_eq!(fraction(&[0.1, 0.01]), Some(0.01));
        assert_eq!(fraction(&[]), None);
    }

    #[test]
    fn views_refreshed_only_in_full_stay_out_and_the_first_refresh_is_apart() {
        let points = [
            point("v1", 0.001, &["incremental", "incremental"], 60.0),
            point("v8", 0.001, &["full", "full"], 30.0),
            point("v1", 0.1, &["full"], 70.0),
        ];
        assert!(takes_part(&points, "v1", 0.001));
        assert!(!takes_part(&points, "v8", 0.001));
        assert!(!takes_part(&points, "v1", 0.1));
        let s = summarise("v1", &[20.0, 6.0, 5.0, 7.0], &points, 0.001);
        assert_eq!(s.first_ms, Some(20.0));
        assert_eq!(s.refresh_median_ms, Some(6.0));
        assert_eq!(s.ctas_median_ms, Some(60.0));
        assert_eq!(s.ratio, Some(10.0));
    }
}
