//! How a refresh brings a view up to date: `SET duckmv.refresh_mode = auto | incremental | full`.
//! In `auto` (the default) a refresh whose pending change is large next to the tables it
//! changed recomputes the view instead: past some fraction, joining and merging the delta costs
//! more than evaluating the query once.

use super::plan::{Body, Plan, Rel};
use super::IvmError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    Auto,
    Incremental,
    Full,
}

impl RefreshMode {
    /// The setting's value (case-insensitive); an unknown value is PostgreSQL's 22023.
    pub fn parse(value: &str) -> Result<RefreshMode, IvmError> {
        match value.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
            "" | "auto" | "default" => Ok(RefreshMode::Auto),
            "incremental" => Ok(RefreshMode::Incremental),
            "full" => Ok(RefreshMode::Full),
            other => Err(IvmError::InvalidValue(format!(
                "invalid value for parameter \"duckmv.refresh_mode\": \"{other}\" (expected auto, incremental or full)"
            ))),
        }
    }
}

/// Below this many pending rows a refresh stays incremental whatever the fraction: it is cheap
/// either way, and small tables keep exercising the incremental path.
const MIN_ROWS_FOR_FULL: u64 = 10_000;

/// The fraction of the changed tables' rows above which `auto` recomputes. Measured on the
/// benchmark (SF 1, 2 cores): single-table aggregates and DISTINCT stay ahead of a recompute up
/// to a few percent; every extra join term scans a whole other input per changed input, and a
/// deleted MIN/MAX recomputes its group from the base table, so those cross over earlier.
fn threshold(plan: &Plan) -> f64 {
    let (items, extremes) = match &plan.body {
        Body::Full { .. } => return 0.0,
        Body::Bag { rel, .. } => (rel_items(rel), false),
        Body::Aggregate(a) => (a.input.items.len(), super::plan::agg_has_extremes(a)),
    };
    let mut t: f64 = if items > 1 { 0.005 } else { 0.03 };
    if extremes {
        t = t.min(0.003);
    }
    t
}

fn rel_items(rel: &Rel) -> usize {
    match rel {
        Rel::Block(b) => b.items.len(),
        Rel::Union(parts) => parts.iter().map(rel_items).max().unwrap_or(1),
    }
}

/// Whether `auto` should recompute: `pending[i]` delta rows against `base[i]` current rows for
/// each changed source.
pub fn prefer_full(plan: &Plan, pending: &[u64], base: &[u64]) -> bool {
    let p: u64 = pending.iter().sum();
    let b: u64 = base.iter().sum();
    p >= MIN_ROWS_FOR_FULL && (p as f64) > threshold(plan) * (b.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_modes() {
        assert_eq!(RefreshMode::parse("AUTO").unwrap(), RefreshMode::Auto);
        assert_eq!(RefreshMode::parse("'full'").unwrap(), RefreshMode::Full);
        assert_eq!(
            RefreshMode::parse("incremental").unwrap(),
            RefreshMode::Incremental
        );
        assert_eq!(RefreshMode::parse("fast").unwrap_err().sqlstate(), "22023");
    }
}
