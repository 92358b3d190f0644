//! The change of an aggregate read as a relation whose state cannot be taken back — a MIN or
//! MAX, whose value before a deleted extreme only the group's other rows know. For each group
//! the input's change touches: the group's row now (+1), aggregated from the current input, and
//! its row before (−1), aggregated from the input as it was. The input before is, for the
//! touched groups only, the current rows and the change's rows with the opposite sign,
//! consolidated: `R = R' − ΔR`, each row as often as its net multiplicity.
//!
//! Both rows are recomputed, so the row taken back is exactly the one added when it was
//! current; untouched groups are not read beyond the join that finds the touched ones.

use super::aggregate::{agg_state_over, group_cols, sub_agg_sql};
use super::{rel_cur, rel_delta, rel_names, Aggregate, Source, SubAgg};
use crate::text::{ident, null_safe_eq};

/// Whether the sub-aggregate's change needs the group's rows before (see the module).
pub(super) fn needs_rescan(a: &Aggregate) -> bool {
    a.state_fns().any(|f| !crate::agg::of(f).invertible())
}

/// The sub-aggregate's change: rows now (+1) and before (−1) of the touched groups.
pub(super) fn rescan_delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<String> {
    let a = &sa.agg;
    let input = a.input_rel();
    let d = rel_delta(sources, &input, changed)?;
    let keys = group_cols(a);
    let cols: Vec<String> = rel_names(&input).iter().map(|c| ident(c)).collect();
    let cols = cols.join(", ");
    // Which groups, and the old rows: the change is read twice, so it is computed once.
    let (with, touched) = if keys.is_empty() {
        (format!("_mv_rd AS MATERIALIZED ({d})"), String::new())
    } else {
        (
            format!(
                "_mv_rd AS MATERIALIZED ({d}), _mv_dd AS (SELECT DISTINCT {} FROM _mv_rd)",
                keys.join(", ")
            ),
            format!(
                " WHERE EXISTS (SELECT 1 FROM _mv_dd AS _mv_w WHERE {})",
                null_safe_eq("_mv_i", "_mv_w", &keys)
            ),
        )
    };
    let cur = rel_cur(sources, &input);
    let now = agg_state_over(a, &cur, &touched);
    let old = format!(
        "SELECT {cols} FROM (SELECT {cols}, CAST(sum(_mv_mult) AS BIGINT) AS _mv_m FROM \
         (SELECT {cols}, CAST(1 AS BIGINT) AS _mv_mult FROM ({cur}) AS _mv_i{touched} \
         UNION ALL SELECT {cols}, -_mv_mult FROM _mv_rd) AS _mv_u \
         GROUP BY {cols} HAVING sum(_mv_mult) > 0) AS _mv_o, range(_mv_o._mv_m)"
    );
    let before = agg_state_over(a, &old, "");
    let state = format!(
        "WITH {with} SELECT *, CAST(1 AS BIGINT) AS _mv_mult FROM ({now}) AS _mv_n \
         UNION ALL SELECT *, CAST(-1 AS BIGINT) FROM ({before}) AS _mv_b"
    );
    Some(sub_agg_sql(sa, &state, true))
}
