//! Bag and DISTINCT views: storage (c1..cn, _mv_count), one row per distinct row with its
//! multiplicity. A change is consolidated per row (its net count), merged into the counts, and
//! rows whose count reaches 0 are deleted; a DISTINCT view shows each row with a count > 0 once.

use super::{positional, rel_cur, rel_delta, storage, work, Plan, Rel};
use crate::text::null_safe_eq;

fn cast_cols(types: &[String], src: &str) -> Vec<String> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("CAST({src}c{} AS {t}) AS c{}", i + 1, i + 1))
        .collect()
}

/// Rows and their counts of the current state (used to populate).
pub fn bag_state_sql(plan: &Plan, rel: &Rel) -> String {
    let cols = cast_cols(&plan.types, "_mv_i.");
    let group: Vec<String> = (1..=cols.len()).map(|i| i.to_string()).collect();
    format!(
        "SELECT {}, CAST(COUNT(*) AS BIGINT) AS _mv_count FROM ({}) AS _mv_i GROUP BY {}",
        cols.join(", "),
        rel_cur(&plan.sources, rel),
        group.join(", ")
    )
}

/// The consolidated change: one row per distinct changed row with its net count, zeros dropped.
pub fn bag_delta_sql(plan: &Plan, rel: &Rel, changed: &[bool]) -> Option<String> {
    let d = rel_delta(&plan.sources, rel, changed)?;
    let cols = cast_cols(&plan.types, "_mv_d.");
    let group: Vec<String> = (1..=cols.len()).map(|i| i.to_string()).collect();
    Some(format!(
        "SELECT {}, CAST(SUM(_mv_d._mv_mult) AS BIGINT) AS _mv_count FROM ({d}) AS _mv_d GROUP BY {} HAVING SUM(_mv_d._mv_mult) <> 0",
        cols.join(", "),
        group.join(", ")
    ))
}

/// Applies the consolidated change `source` (the work table, or the change itself as a
/// parenthesized query) to the storage, keyed NULL-safely on the row.
pub fn bag_merge_sql(plan: &Plan, source: &str) -> String {
    let cols = positional(plan.columns.len());
    let values: Vec<String> = cols.iter().map(|c| format!("_mv_d.{c}")).collect();
    format!(
        "MERGE INTO {s} AS _mv_s USING {w} AS _mv_d ON {on} \
         WHEN MATCHED AND _mv_s._mv_count + _mv_d._mv_count <= 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET _mv_count = _mv_s._mv_count + _mv_d._mv_count \
         WHEN NOT MATCHED AND _mv_d._mv_count > 0 THEN INSERT VALUES ({v}, _mv_d._mv_count)",
        s = storage(plan.id),
        w = source,
        on = null_safe_eq("_mv_s", "_mv_d", &cols),
        v = values.join(", ")
    )
}

/// The user-visible change of a DISTINCT view, computed from the work table before it is
/// applied: +1 for rows that appear, −1 for rows whose count drops to zero.
pub fn distinct_transitions_sql(plan: &Plan) -> String {
    let cols = positional(plan.columns.len());
    let sel: Vec<String> = cols.iter().map(|c| format!("_mv_d.{c}")).collect();
    format!(
        "SELECT {}, CASE WHEN _mv_s._mv_count IS NULL THEN 1 ELSE -1 END FROM {w} AS _mv_d \
         LEFT JOIN {s} AS _mv_s ON {on} \
         WHERE (_mv_s._mv_count IS NULL AND _mv_d._mv_count > 0) OR (_mv_s._mv_count + _mv_d._mv_count <= 0)",
        sel.join(", "),
        w = work(plan.id),
        s = storage(plan.id),
        on = null_safe_eq("_mv_s", "_mv_d", &cols)
    )
}
