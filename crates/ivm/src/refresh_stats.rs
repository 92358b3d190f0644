//! What each view's last refresh did — when, how long, how many rows, which mode and why — as
//! `duckmv.views` shows it, kept in `_duckmv.refresh_stats`.
//!
//! A refresh does not write these itself: an UPDATE of the catalog in every refresh's
//! transaction cost about 1 ms of a 10–20 ms refresh (issue 16 asks for at most two statements
//! per refresh). The refresh returns them in its [`super::Outcome`]; the server keeps them in
//! memory once the refresh's transaction commits and writes them in the background, in
//! transactions of their own. The table has no other writer, so those writes never conflict
//! with a user's transaction. Callers without a server (tests, embedding) record them in the
//! refresh's own transaction with [`record`].

use std::time::{SystemTime, UNIX_EPOCH};

use super::text::lit;
use super::{IvmError, Sql};

/// One refresh, as `duckmv.views` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshStats {
    pub view_id: i64,
    /// When the refresh ran, in microseconds since 1970-01-01 UTC.
    pub at_micros: i64,
    pub duration_ms: f64,
    pub rows: u64,
    /// "incremental" or "full".
    pub mode: &'static str,
    pub reason: String,
}

impl RefreshStats {
    /// A refresh of view `id` that ran just now.
    pub fn now(id: i64, duration_ms: f64, rows: u64, mode: &'static str, reason: &str) -> Self {
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        RefreshStats {
            view_id: id,
            at_micros: at,
            duration_ms,
            rows,
            mode,
            reason: reason.to_string(),
        }
    }
}

/// The table, if absent (idempotent).
pub fn bootstrap(db: &mut dyn Sql) -> Result<(), IvmError> {
    db.exec(
        "CREATE TABLE IF NOT EXISTS _duckmv.refresh_stats (view_id BIGINT, refreshed_at TIMESTAMP, \
         duration_ms DOUBLE, rows_changed BIGINT, mode VARCHAR, reason VARCHAR)",
    )?;
    Ok(())
}

/// Replaces the recorded refresh of each view in `stats` (the last one of a view wins), in the
/// caller's transaction.
pub fn record(db: &mut dyn Sql, stats: &[RefreshStats]) -> Result<(), IvmError> {
    let mut last: Vec<&RefreshStats> = Vec::new();
    for s in stats {
        last.retain(|l| l.view_id != s.view_id);
        last.push(s);
    }
    if last.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = last.iter().map(|s| s.view_id.to_string()).collect();
    db.exec(&format!(
        "DELETE FROM _duckmv.refresh_stats WHERE view_id IN ({})",
        ids.join(", ")
    ))?;
    let rows: Vec<String> = last.iter().map(|s| values_row(s)).collect();
    db.exec(&format!(
        "INSERT INTO _duckmv.refresh_stats VALUES {}",
        rows.join(", ")
    ))?;
    Ok(())
}

/// Forgets the refreshes of views that no longer exist (ids are never reused, so a dropped
/// view's row only takes space).
pub fn prune(db: &mut dyn Sql) -> Result<u64, IvmError> {
    Ok(db.exec(
        "DELETE FROM _duckmv.refresh_stats WHERE view_id NOT IN (SELECT id FROM _duckmv.views)",
    )?)
}

fn values_row(s: &RefreshStats) -> String {
    // A non-finite duration cannot come from a timer; written as NULL rather than as text
    // DuckDB would refuse.
    let ms = if s.duration_ms.is_finite() {
        format!("{}", s.duration_ms)
    } else {
        "NULL".to_string()
    };
    format!(
        "({}, make_timestamp(CAST({} AS BIGINT)), CAST({ms} AS DOUBLE), {}, {}, {})",
        s.view_id,
        s.at_micros,
        s.rows,
        lit(s.mode),
        lit(&s.reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_refresh_of_a_view_wins_and_text_is_quoted() {
        struct Log(Vec<String>);
        impl Sql for Log {
            fn exec(&mut self, sql: &str) -> Result<u64, crate::DbError> {
                self.0.push(sql.to_string());
                Ok(0)
            }
            fn query(&mut self, _: &str) -> Result<Vec<Vec<Option<String>>>, crate::DbError> {
                Ok(Vec::new())
            }
        }
        let mut db = Log(Vec::new());
        let a = RefreshStats::now(7, 1.5, 3, "incremental", "first");
        let b = RefreshStats::now(7, 2.5, 4, "full", "it's later");
        let c = RefreshStats::now(9, 0.5, 0, "incremental", "other");
        record(&mut db, &[a, b, c]).unwrap();
        assert_eq!(db.0.len(), 2);
        assert!(db.0[0].ends_with("IN (7, 9)"), "{}", db.0[0]);
        assert_eq!(db.0[1].matches("make_timestamp").count(), 2, "{}", db.0[1]);
        assert!(db.0[1].contains("'it''s later'"), "{}", db.0[1]);
        assert!(!db.0[1].contains("'first'"), "{}", db.0[1]);
        record(&mut db, &[]).unwrap();
        assert_eq!(db.0.len(), 2, "nothing to record runs nothing");
    }
}
