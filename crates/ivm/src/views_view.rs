//! `duckmv.views`: what a user reads about every materialized view — its definition and
//! strategy, its refresh policy, how far behind it is (rows pending per source, and since when
//! the oldest has waited), what its last refresh did, and what the background refresher last
//! said about it.
//!
//! Pending rows and their age are counted per change log, one `UNION ALL` branch per log
//! naming its table, so the view is rewritten whenever the set of views changes. A branch per
//! log rather than a subquery per (view, source) keeps the view's plan small: DuckDB orders
//! the joins of every scalar subquery of a statement together, and with a few dozen views that
//! took seconds for a one-row `SELECT`.

use super::text::lit;
use super::{IvmError, Sql};

/// The newest column of `duckmv.views`.
const NEWEST_COLUMN: &str = "last_refresh_reason";

/// Where the last refresh of each view is recorded since the server keeps it (`refresh_stats`);
/// a view whose text lacks it reads the catalog's own columns, and is written again.
const STATS: &str = "_duckmv.refresh_stats";

/// The name of the view's per-reader counts; a view whose text lacks it is of the layout with
/// a subquery per reader, and is written again.
const LAYOUT: &str = "_mv_pending";

/// Rewrites `duckmv.views` when it is missing or of an older layout.
pub fn ensure_current(db: &mut dyn Sql) -> Result<(), IvmError> {
    let current = db.query(&format!(
        "SELECT 1 FROM duckdb_views() WHERE schema_name = 'duckmv' AND view_name = 'views' \
         AND contains(sql, {}) AND contains(sql, {}) AND contains(sql, {})",
        lit(LAYOUT),
        lit(NEWEST_COLUMN),
        lit(STATS)
    ))?;
    if current.is_empty() {
        regenerate(db)?;
    }
    Ok(())
}

/// Rebuilds `duckmv.views`.
pub fn regenerate(db: &mut dyn Sql) -> Result<(), IvmError> {
    let logs = db.query("SELECT id, log_table FROM _duckmv.change_logs ORDER BY id")?;
    let logs: Vec<(String, String)> = logs
        .into_iter()
        .filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?)))
        .collect();
    // Readers of the per-view delta tables of older databases, until their upgrade.
    let unlogged = db.query(
        "SELECT s.delta_table FROM _duckmv.view_sources s WHERE s.delta_table IS NOT NULL \
         AND NOT EXISTS (SELECT 1 FROM _duckmv.log_readers r WHERE r.reader = s.delta_table)",
    )?;
    let unlogged: Vec<String> = unlogged
        .into_iter()
        .filter_map(|r| r.first()?.clone())
        .collect();
    db.exec(&view_sql(&logs, &unlogged))?;
    Ok(())
}

/// The view over the catalog, with `pending` and `pending_since` from `pending_sql`.
fn view_sql(logs: &[(String, String)], unlogged: &[String]) -> String {
    format!(
        "CREATE OR REPLACE VIEW duckmv.views AS WITH {LAYOUT} AS ({}), \
         _mv_per_view AS (SELECT s.view_id, string_agg(s.source_schema || '.' || s.source_name \
         || ':' || CAST(p.n AS VARCHAR), ', ' ORDER BY s.source_schema, s.source_name) AS pending, \
         min(p.since) AS since FROM _duckmv.view_sources s JOIN {LAYOUT} p \
         ON p.reader = s.delta_table GROUP BY s.view_id) \
         SELECT v.name, v.schema, v.definition, v.populated, \
         v.strategy, pv.pending AS pending, {} AS last_refresh_at, {} AS last_refresh_mode, \
         {} AS duration_ms, {} AS rows_changed, \
         coalesce(v.refresh_policy, 'on demand') AS refresh_policy, \
         pv.since AS pending_since, CAST(now() AS TIMESTAMP) - pv.since AS behind, \
         st.status AS refresher_status, {} AS {NEWEST_COLUMN} \
         FROM _duckmv.views v LEFT JOIN _mv_per_view pv ON pv.view_id = v.id \
         LEFT JOIN _duckmv.refresher_status st ON st.view_id = v.id \
         LEFT JOIN {STATS} rs ON rs.view_id = v.id",
        pending_sql(logs, unlogged),
        recorded("refreshed_at", "last_refresh"),
        recorded("mode", "last_refresh_mode"),
        recorded("duration_ms", "duration_ms"),
        recorded("rows_changed", "rows_changed"),
        recorded("reason", "last_refresh_reason"),
    )
}

/// A column of the last refresh: from `refresh_stats` once the view has a row there, else
/// from the catalog's own column, where servers before it recorded refreshes.
fn recorded(stats_column: &str, catalog_column: &str) -> String {
    format!("CASE WHEN rs.view_id IS NULL THEN v.{catalog_column} ELSE rs.{stats_column} END")
}

/// `(reader, n, since)`: how many rows each reader has pending and when the oldest was written.
/// One branch per change log (its readers left-joined to the rows past their position), one
/// per reader of an older delta table (which has no age).
fn pending_sql(logs: &[(String, String)], unlogged: &[String]) -> String {
    let mut branches: Vec<String> = logs
        .iter()
        .map(|(id, table)| {
            format!(
                "SELECT r.reader, count(l._mv_pos) AS n, min(l._mv_at) AS since \
                 FROM _duckmv.log_readers r LEFT JOIN {table} l ON l._mv_pos > r.consumed \
                 WHERE r.log_id = {id} GROUP BY r.reader"
            )
        })
        .collect();
    branches.extend(unlogged.iter().map(|delta| {
        format!(
            "SELECT {} AS reader, count(*) AS n, CAST(NULL AS TIMESTAMP) AS since FROM {delta}",
            lit(delta)
        )
    }));
    if branches.is_empty() {
        return "SELECT CAST(NULL AS VARCHAR) AS reader, CAST(0 AS BIGINT) AS n, \
                CAST(NULL AS TIMESTAMP) AS since WHERE FALSE"
            .into();
    }
    branches.join(" UNION ALL ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_branch_per_log_and_per_older_reader() {
        let logs = [
            ("1".to_string(), "_duckmv.log_1".to_string()),
            ("2".to_string(), "_duckmv.log_2".to_string()),
        ];
        let got = pending_sql(&logs, &["_duckmv.delta_3_a".to_string()]);
        assert_eq!(got.matches(" UNION ALL ").count(), 2, "{got}");
        assert!(got.contains("JOIN _duckmv.log_2 l"), "{got}");
        assert!(got.contains("r.log_id = 2"), "{got}");
        assert!(got.contains("'_duckmv.delta_3_a' AS reader"), "{got}");
        assert!(!pending_sql(&[], &[]).contains("UNION"));
        assert!(view_sql(&logs, &[]).contains(LAYOUT));
    }
}
