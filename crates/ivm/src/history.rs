//! What `auto` learns from a view's own refreshes: how long its incremental refreshes took for
//! how many pending rows, and how long its last full refresh took. A rule per view shape alone
//! cannot see that one join view refreshes 20× slower than it recomputes at 65 changed rows
//! while another gains at 6,000; the view's own timings can.
//!
//! The incremental cost is modelled as a fixed part plus a part per pending row, `a + b·p`,
//! fitted over the last few incremental refreshes. The fit is trusted only where it has seen
//! changes: between its smallest and up to [`EXTRAPOLATE`] times its largest sample, and only
//! from samples of at least two sizes (one sample cannot tell the fixed part from the part per
//! row, and a fixed cost scaled as if it were per row would send every larger change to a full
//! refresh).
//!
//! Where the fit is not trusted (one change size seen, as when the same batch recurs), the
//! samples still bound the cost, for any `a + b·p` with `a, b ≥ 0`: a refresh of `s` rows that
//! took `t` says a refresh of `p` rows takes at least `t·min(1, p/s)` and at most
//! `t·max(1, p/s)`. When two samples put the lower bound above the last full refresh, `auto`
//! recomputes; when two put the upper bound below it, it stays incremental (two, so that one
//! refresh slowed by a checkpoint decides nothing). Elsewhere the caller falls back to its rule
//! of thumb.
//!
//! Until a full refresh has run, the view's population stands in for it: it wrote the same rows
//! into empty storage, so a full refresh costs about that and at most about twice that (it also
//! removes the old rows). Samples must then exceed twice the population to recompute, and stay
//! under it to stay incremental. One sample alone recomputes only when it exceeds the full cost
//! [`ONE_SAMPLE`] times over: at SF 1, the first refresh of TPC-H Q2 (a correlated MIN over a
//! four-way join) took 1,400 ms against a 25 ms recompute, and every later one as long, while
//! first refreshes that ran slow and the next ones not were at most 4× slower (Q21: 309 ms, then
//! 79, against 80 for a full refresh).
//!
//! A view whose refreshes are cheap either way (under [`MATTERS_MS`]) is left to the rule of
//! thumb too: a few milliseconds are not worth giving up the incremental path for, and views
//! over small tables keep exercising it.
//!
//! The history also keeps how many rows the last full refresh changed: from [`SWAP_ROWS`] on,
//! the next full refresh builds a new table and swaps it in rather than deleting every row.
//!
//! Kept in server memory per view id (ids are never reused): after a restart the view learns
//! again from its next refreshes.

use std::collections::VecDeque;

/// Incremental refreshes remembered per view.
const SAMPLES: usize = 8;

/// How far past its largest sample the fit is used. Further out a straight line guesses wrong
/// both ways: at SF 1, fitted over changes of 600 to 60,000 rows, the single-table aggregate
/// (V1) was estimated at about 78 ms for 600,000 rows and took 35-44 (its cost per row falls as
/// batches grow), the DISTINCT view (V6) at about 300 ms and took 369-409 (it rises). Past
/// this, the bounds and the caller's rule of thumb decide.
const EXTRAPOLATE: f64 = 3.0;

/// Below this estimated cost (ms) of both ways, the timings decide nothing.
const MATTERS_MS: f64 = 30.0;

/// How many times over its full cost one incremental refresh must take to send the next of its
/// size or larger to a full refresh (see the module comment).
const ONE_SAMPLE: f64 = 4.0;

/// From this many rows changed by a view's last full refresh (the rows it removed and the rows
/// it wrote, as `rows_changed` counts them) its next one swaps a new table in instead of
/// deleting every row (`program::recompute`): about where the two cost the same.
const SWAP_ROWS: u64 = 200_000;

/// One view's refresh timings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// (pending rows, ms) of recent incremental refreshes, newest last.
    incremental: VecDeque<(u64, f64)>,
    /// The last full refresh's time (ms).
    full_ms: Option<f64>,
    /// The last population's time (ms), which stands in for a full refresh's until one runs.
    populate_ms: Option<f64>,
    /// The rows the last full refresh or population changed.
    full_rows: u64,
}

/// A full refresh's cost as far as it is known: between `low` and `high` ms.
struct FullCost {
    low: f64,
    high: f64,
    said: String,
}

/// What the timings say about a refresh of `pending` rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Recompute: the estimate of the incremental refresh exceeds the last full one.
    Full(String),
    /// Stay incremental: the estimate is below the last full refresh.
    Incremental(String),
    /// Too little known, or too cheap to matter: the caller's rule decides.
    Unknown,
}

impl History {
    pub fn note_incremental(&mut self, pending: u64, ms: f64) {
        if self.incremental.len() == SAMPLES {
            self.incremental.pop_front();
        }
        self.incremental.push_back((pending, ms));
    }

    /// A full refresh that took `ms` and changed `rows`.
    pub fn note_full(&mut self, ms: f64, rows: u64) {
        self.full_ms = Some(ms);
        self.full_rows = rows;
    }

    /// A population (CREATE ... WITH DATA, or a refresh of an unpopulated view) that took `ms`
    /// and wrote `rows`.
    pub fn note_population(&mut self, ms: f64, rows: u64) {
        self.populate_ms = Some(ms);
        self.full_rows = rows;
    }

    /// What a full refresh costs at least and at most, and what says so.
    fn full_cost(&self) -> Option<FullCost> {
        if let Some(ms) = self.full_ms {
            return Some(FullCost {
                low: ms,
                high: ms,
                said: format!("the last full refresh took {ms:.1} ms"),
            });
        }
        self.populate_ms.map(|ms| FullCost {
            low: ms,
            high: 2.0 * ms,
            said: format!("populating the view took {ms:.1} ms"),
        })
    }

    /// Whether the next full refresh should swap a new table in (see [`SWAP_ROWS`]).
    pub fn replaces_many(&self) -> bool {
        self.full_rows >= SWAP_ROWS
    }

    /// The estimated incremental time for `pending` rows, with the number of refreshes it
    /// rests on; None where the fit is not trusted.
    pub fn estimate(&self, pending: u64) -> Option<(f64, usize)> {
        let s = &self.incremental;
        let (lo, hi) = s
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), (p, _)| (lo.min(*p), hi.max(*p)));
        if s.len() < 2 || hi < lo.saturating_mul(2) {
            return None;
        }
        let p = pending as f64;
        if p < lo as f64 || p > hi as f64 * EXTRAPOLATE {
            return None;
        }
        let n = s.len() as f64;
        let mean_p = s.iter().map(|(p, _)| *p as f64).sum::<f64>() / n;
        let mean_t = s.iter().map(|(_, t)| *t).sum::<f64>() / n;
        let cov: f64 = s
            .iter()
            .map(|(p, t)| (*p as f64 - mean_p) * (t - mean_t))
            .sum();
        let var: f64 = s.iter().map(|(p, _)| (*p as f64 - mean_p).powi(2)).sum();
        // A refresh never gets cheaper with more rows: a negative slope is noise.
        let slope = (cov / var).max(0.0);
        let fixed = (mean_t - slope * mean_p).max(0.0);
        Some((fixed + slope * p, s.len()))
    }

    /// What the samples say `pending` rows cost at least and at most: with two samples or
    /// more, each the bound that two of them agree on; with one, its own.
    fn bounds(&self, pending: u64) -> Option<(f64, f64)> {
        let p = pending as f64;
        let ratio = |s: u64| p / (s.max(1) as f64);
        let mut lower: Vec<f64> = self
            .incremental
            .iter()
            .map(|(s, t)| t * ratio(*s).min(1.0))
            .collect();
        let mut upper: Vec<f64> = self
            .incremental
            .iter()
            .map(|(s, t)| t * ratio(*s).max(1.0))
            .collect();
        lower.sort_by(|a, b| b.total_cmp(a));
        upper.sort_by(|a, b| a.total_cmp(b));
        let agreed = lower.len().saturating_sub(1).min(1);
        Some((*lower.get(agreed)?, upper[agreed]))
    }

    /// [`History::verdict`] from [`History::bounds`], where the fit is not trusted.
    fn bounded_verdict(&self, pending: u64, full: &FullCost) -> Verdict {
        let Some((at_least, at_most)) = self.bounds(pending) else {
            return Verdict::Unknown;
        };
        let n = self.incremental.len();
        let (refreshes, slow) = match n {
            1 => (
                "the last incremental refresh puts".to_string(),
                ONE_SAMPLE * full.high,
            ),
            _ => (format!("the last {n} incremental refreshes put"), full.high),
        };
        let (rows, said) = (pending_rows(pending), &full.said);
        if at_least > slow && at_least >= MATTERS_MS {
            Verdict::Full(format!(
                "{rows}: {refreshes} it at {at_least:.1} ms or more, {said}"
            ))
        } else if n > 1 && at_most < full.low && full.low >= MATTERS_MS {
            Verdict::Incremental(format!(
                "{rows}: {refreshes} it at {at_most:.1} ms or less, {said}"
            ))
        } else {
            Verdict::Unknown
        }
    }

    /// Full or incremental for `pending` rows, with the reason `duckmv.views` shows.
    pub fn verdict(&self, pending: u64) -> Verdict {
        let Some(full) = self.full_cost() else {
            return Verdict::Unknown;
        };
        let Some((inc, n)) = self.estimate(pending) else {
            return self.bounded_verdict(pending, &full);
        };
        if inc.max(full.high) < MATTERS_MS {
            return Verdict::Unknown;
        }
        let why = format!(
            "{}: incremental estimated at {inc:.1} ms from the last {n} \
             incremental refreshes, {}",
            pending_rows(pending),
            full.said
        );
        if inc > full.high {
            Verdict::Full(why)
        } else if inc <= full.low {
            Verdict::Incremental(why)
        } else {
            Verdict::Unknown
        }
    }
}

/// "1 pending row", "24 pending rows".
pub fn pending_rows(n: u64) -> String {
    let noun = if n == 1 { "row" } else { "rows" };
    format!("{n} pending {noun}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(samples: &[(u64, f64)], full: Option<f64>) -> History {
        let mut h = History::default();
        for (p, t) in samples {
            h.note_incremental(*p, *t);
        }
        if let Some(f) = full {
            h.note_full(f, 0);
        }
        h
    }

    #[test]
    fn the_fit_separates_the_fixed_cost_from_the_cost_per_row() {
        let h = with(&[(100, 11.0), (1000, 20.0), (10_000, 110.0)], None);
        let (t, n) = h.estimate(5000).unwrap();
        assert_eq!(n, 3);
        assert!((t - 60.0).abs() < 1.0, "{t}");
    }

    #[test]
    fn one_size_or_far_extrapolation_is_not_trusted() {
        assert_eq!(with(&[(600, 40.0)], Some(10.0)).estimate(600), None);
        assert_eq!(with(&[(600, 40.0), (700, 41.0)], None).estimate(650), None);
        let h = with(&[(100, 10.0), (1000, 20.0)], Some(50.0));
        assert!(h.estimate(3_000).is_some());
        assert_eq!(h.estimate(3_001), None);
        assert_eq!(h.estimate(99), None);
    }

    /// V1's refreshes at SF 1 (600, 6,000 and 60,000 rows) and its full refresh: a straight
    /// line put 600,000 rows past the full refresh, and they took 35-44 ms incrementally.
    #[test]
    fn far_past_its_samples_the_fit_decides_nothing() {
        let h = with(&[(600, 4.4), (6000, 9.0), (60_000, 15.3)], Some(65.0));
        assert!(matches!(h.verdict(120_000), Verdict::Incremental(_)));
        assert_eq!(h.verdict(600_000), Verdict::Unknown);
    }

    #[test]
    fn a_slow_incremental_view_recomputes_and_a_fast_one_does_not() {
        // A join view 20× slower than its recompute at a few rows (the Q21 shape).
        let slow = with(&[(65, 276.0), (650, 300.0)], Some(15.0));
        assert!(matches!(slow.verdict(300), Verdict::Full(_)));
        // A view that gains: its estimate stays below the full refresh.
        let fast = with(&[(600, 10.0), (6000, 12.0)], Some(50.0));
        match fast.verdict(18_000) {
            Verdict::Incremental(why) => assert!(why.contains("18000 pending rows"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    /// The same batch size again and again (no fit): two refreshes slower than the full one
    /// send the next of that size or larger to a full refresh, not a smaller one they do not
    /// bound; two fast ones keep it incremental; one slow refresh decides nothing.
    #[test]
    fn one_change_size_bounds_the_cost() {
        let slow = with(&[(6500, 76.0), (6400, 62.0)], Some(54.0));
        assert_eq!(slow.estimate(6500), None);
        match slow.verdict(6450) {
            Verdict::Full(why) => assert!(why.contains("6450 pending rows"), "{why}"),
            v => panic!("{v:?}"),
        }
        assert_eq!(slow.verdict(3000), Verdict::Unknown);
        let fast = with(&[(6500, 20.0), (6400, 22.0)], Some(54.0));
        assert!(matches!(fast.verdict(6500), Verdict::Incremental(_)));
        assert!(matches!(fast.verdict(13_000), Verdict::Incremental(_)));
        assert_eq!(fast.verdict(26_000), Verdict::Unknown);
        let hiccup = with(&[(6500, 200.0), (6400, 40.0)], Some(54.0));
        assert_eq!(hiccup.verdict(6500), Verdict::Unknown);
        assert_eq!(
            with(&[(6500, 200.0)], Some(54.0)).verdict(6500),
            Verdict::Unknown
        );
    }

    /// TPC-H Q2 at SF 1: populated in 25 ms, its first incremental refresh took 1,400 ms; the
    /// next of that size recomputes. One refresh slower than the full cost by less than
    /// [`ONE_SAMPLE`] decides nothing (first refreshes run slow: Q21's took 309 ms, then 79).
    #[test]
    fn the_population_stands_in_for_a_full_refresh_until_one_runs() {
        let mut h = History::default();
        h.note_population(25.0, 157);
        assert_eq!(h.verdict(6500), Verdict::Unknown);
        h.note_incremental(6500, 1400.0);
        match h.verdict(6500) {
            Verdict::Full(why) => {
                assert!(why.contains("populating the view took 25.0 ms"), "{why}")
            }
            v => panic!("{v:?}"),
        }
        // A smaller change is bounded below by its share of the sample only.
        assert_eq!(h.verdict(100), Verdict::Unknown);
        let first_slow = with(&[(6500, 309.0)], Some(80.0));
        assert_eq!(first_slow.verdict(6500), Verdict::Unknown);
        // Two samples between the population and twice it decide nothing; under it, they keep
        // the view incremental; over twice it, they recompute.
        let mut h = History::default();
        h.note_population(40.0, 10);
        for t in [60.0, 70.0] {
            h.note_incremental(6500, t);
        }
        assert_eq!(h.verdict(6500), Verdict::Unknown);
        h.note_incremental(6500, 30.0);
        h.note_incremental(6500, 35.0);
        assert!(matches!(h.verdict(6500), Verdict::Incremental(_)));
        let mut h = History::default();
        h.note_population(40.0, 10);
        for t in [90.0, 95.0] {
            h.note_incremental(6500, t);
        }
        assert!(matches!(h.verdict(6500), Verdict::Full(_)));
        // A full refresh, once run, replaces the population's estimate.
        h.note_full(100.0, 10);
        assert!(matches!(h.verdict(6500), Verdict::Incremental(_)));
    }

    #[test]
    fn cheap_views_and_unknown_full_times_decide_nothing() {
        let cheap = with(&[(1, 2.0), (10, 3.0)], Some(1.0));
        assert_eq!(cheap.verdict(5), Verdict::Unknown);
        let no_full = with(&[(1, 200.0), (10, 300.0)], None);
        assert_eq!(no_full.verdict(5), Verdict::Unknown);
    }

    #[test]
    fn only_the_last_samples_count() {
        let mut h = with(&[(10, 1000.0), (20, 1000.0)], None);
        for _ in 0..SAMPLES {
            h.note_incremental(100, 5.0);
            h.note_incremental(1000, 10.0);
        }
        let (t, _) = h.estimate(500).unwrap();
        assert!(t < 10.0, "{t}");
    }
}
