//! `duckmv.views`: what a user reads about every materialized view — its definition and
//! strategy, its refresh policy, how far behind it is (rows pending per source, and since when
//! the oldest has waited), what its last refresh did, and what the background refresher last
//! said about it.
//!
//! Pending rows and their age are read from each (view, source) reader's part of its change log
//! by name, so the view is rewritten whenever the set of views changes.

use super::text::lit;
use super::{IvmError, Sql};

/// The newest column of `duckmv.views`: a database whose view lacks it gets the view again.
const NEWEST_COLUMN: &str = "last_refresh_reason";

/// Rewrites `duckmv.views` when it is missing or older than this version's.
pub fn ensure_current(db: &mut dyn Sql) -> Result<(), IvmError> {
    let current = db.query(&format!(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = 'duckmv' AND table_name = 'views' \
         AND column_name = {}",
        lit(NEWEST_COLUMN)
    ))?;
    if current.is_empty() {
        regenerate(db)?;
    }
    Ok(())
}

/// One reader of a change log: the view, the source it labels, its delta view and log table.
struct Reader {
    view_id: String,
    label: String,
    delta: String,
    log: Option<String>,
}

/// Rebuilds `duckmv.views`.
pub fn regenerate(db: &mut dyn Sql) -> Result<(), IvmError> {
    let rows = db.query(
        "SELECT s.view_id, s.source_schema, s.source_name, s.delta_table, l.log_table \
         FROM _duckmv.view_sources s LEFT JOIN _duckmv.log_readers r ON r.reader = s.delta_table \
         LEFT JOIN _duckmv.change_logs l ON l.id = r.log_id \
         WHERE s.delta_table IS NOT NULL ORDER BY s.view_id, s.source_schema, s.source_name",
    )?;
    let readers: Vec<Reader> = rows
        .into_iter()
        .map(|r| {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            Reader {
                view_id: get(0),
                label: format!("{}.{}:", get(1), get(2)),
                delta: get(3),
                log: r.get(4).cloned().flatten(),
            }
        })
        .collect();
    let pending = per_view(
        &readers,
        "CAST(NULL AS VARCHAR)",
        |parts| format!("concat_ws(', ', {})", parts.join(", ")),
        |r| format!("{} || (SELECT count(*) FROM {})", lit(&r.label), r.delta),
    );
    let since = per_view(
        &readers,
        "CAST(NULL AS TIMESTAMP)",
        |parts| format!("least({})", parts.join(", ")),
        oldest_sql,
    );
    db.exec(&format!(
        "CREATE OR REPLACE VIEW duckmv.views AS SELECT v.name, v.schema, v.definition, v.populated, \
         v.strategy, {pending} AS pending, v.last_refresh AS last_refresh_at, v.last_refresh_mode, \
         v.duration_ms, v.rows_changed, coalesce(v.refresh_policy, 'on demand') AS refresh_policy, \
         {since} AS pending_since, CAST(now() AS TIMESTAMP) - ({since}) AS behind, \
         st.status AS refresher_status, v.last_refresh_reason AS {NEWEST_COLUMN} \
         FROM _duckmv.views v LEFT JOIN _duckmv.refresher_status st ON st.view_id = v.id"
    ))?;
    Ok(())
}

/// When the oldest row pending for this reader was written (NULL when none is).
fn oldest_sql(r: &Reader) -> String {
    match &r.log {
        Some(log) => format!(
            "(SELECT min(_mv_l._mv_at) FROM {log} AS _mv_l, _duckmv.log_readers AS _mv_r \
             WHERE _mv_r.reader = {} AND _mv_l._mv_pos > _mv_r.consumed)",
            lit(&r.delta)
        ),
        None => "CAST(NULL AS TIMESTAMP)".into(),
    }
}

/// `CASE v.id WHEN … THEN combine(part of each reader) … END`, or `none` without readers.
fn per_view(
    readers: &[Reader],
    none: &str,
    combine: impl Fn(&[String]) -> String,
    part: impl Fn(&Reader) -> String,
) -> String {
    let mut cases: Vec<(&str, Vec<String>)> = Vec::new();
    for r in readers {
        match cases.last_mut() {
            Some((id, parts)) if *id == r.view_id => parts.push(part(r)),
            _ => cases.push((&r.view_id, vec![part(r)])),
        }
    }
    if cases.is_empty() {
        return none.to_string();
    }
    let whens: Vec<String> = cases
        .iter()
        .map(|(id, parts)| format!("WHEN {id} THEN {}", combine(parts)))
        .collect();
    format!("CASE v.id {} END", whens.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(id: &str, label: &str, log: Option<&str>) -> Reader {
        Reader {
            view_id: id.into(),
            label: label.into(),
            delta: format!("_duckmv.delta_{id}_{label}"),
            log: log.map(str::to_string),
        }
    }

    #[test]
    fn one_case_per_view_with_a_part_per_source() {
        let rs = [
            reader("1", "a", Some("_duckmv.log_1")),
            reader("1", "b", Some("_duckmv.log_2")),
            reader("2", "a", None),
        ];
        let got = per_view(&rs, "NONE", |p| p.join("+"), |r| r.label.clone());
        assert_eq!(got, "CASE v.id WHEN 1 THEN a+b WHEN 2 THEN a END");
        assert_eq!(
            per_view(&[], "NONE", |p| p.join("+"), |r| r.label.clone()),
            "NONE"
        );
    }

    #[test]
    fn a_reader_without_a_log_has_no_age() {
        assert_eq!(
            oldest_sql(&reader("3", "a", None)),
            "CAST(NULL AS TIMESTAMP)"
        );
        let with_log = oldest_sql(&reader("3", "a", Some("_duckmv.log_7")));
        assert!(with_log.contains("FROM _duckmv.log_7"), "{with_log}");
        assert!(with_log.contains("'_duckmv.delta_3_a'"), "{with_log}");
    }
}
