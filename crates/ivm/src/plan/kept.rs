//! The change of an aggregate with kept extremes (`agg::kept`): the consolidated change per
//! group, and beside it, for each kept MIN/MAX, the new list and flag of the groups whose list
//! the change rewrites.
//!
//! A change row matters to a group's list when its value is at or before the list's last, or
//! when the list holds the whole group (the flag unset, or a new group); other rows are past
//! the list and leave it as it is, so groups without such rows keep their list (`r` false).
//! For the others, the stored list and those rows are netted per value; values whose net count
//! is positive remain, each repeated as often (at most [`KEPT`]` + 1` times, all a cut needs),
//! and the first [`KEPT`] in order are the new list. The flag stays set, and is set when the
//! cut dropped values. This is the prefix rule of `agg::kept` applied to the whole change at
//! once: values before the last are counted exactly on both sides, and the last value's count
//! after the change is at most the group's, so the list stays a prefix.

use crate::agg::kept::{k, o, r, Kept, KEPT};
use crate::agg::AggFn;
use crate::ir;
use crate::text::null_safe_eq;

use super::aggregate::group_cols;
use super::Aggregate;

/// The kept extremes of `a`, with their order.
pub(super) fn kept(a: &Aggregate) -> Vec<(&AggFn, &'static Kept)> {
    a.state_fns()
        .filter_map(|f| crate::agg::of(f).kept().map(|k| (f, k)))
        .collect()
}

/// `rel.g1, rel.g2, ` (nothing for an ungrouped aggregate): the keys ahead of other columns.
fn keys_of(rel: &str, keys: &[String]) -> String {
    keys.iter().map(|g| format!("{rel}.{g}, ")).collect()
}

/// `GROUP BY rel.g1, … [, extra]`, or `GROUP BY extra` alone, or nothing.
fn group_by(rel: &str, keys: &[String], extra: Option<&str>) -> String {
    let mut cols: Vec<String> = keys.iter().map(|g| format!("{rel}.{g}")).collect();
    cols.extend(extra.map(str::to_string));
    if cols.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", cols.join(", "))
    }
}

/// The CTEs of one kept extreme over the change `_mv_raw`: `_mv_r<slot>`, the change rows that
/// matter to their group's list (with the stored flag); `_mv_g<slot>`, those groups and their
/// stored flag; `_mv_c<slot>`, their new list and whether the cut dropped values.
fn ctes(storage: &str, keys: &[String], f: &AggFn, kept: &Kept) -> String {
    let slot = f.slot;
    let arg = f.arg.as_deref().expect("min/max have an argument");
    let last = ir::call("list_extract", vec![ir::bare(k(slot)), ir::Expr::Int(-1)]);
    let not_past = ir::col("_mv_r", arg).bin(kept.not_past(), ir::col("_mv_s", "_mv_last"));
    let rows = format!(
        "_mv_r{slot} AS MATERIALIZED (SELECT {kr}_mv_r.{arg} AS _mv_v, _mv_r._mv_mult AS _mv_n, \
         _mv_s._mv_open FROM _mv_raw AS _mv_r LEFT JOIN (SELECT {g}{open} AS _mv_open, \
         {last} AS _mv_last FROM {storage}) AS _mv_s ON {on} WHERE _mv_r.{arg} IS NOT NULL \
         AND (_mv_s._mv_open IS NOT TRUE OR {not_past}))",
        kr = keys_of("_mv_r", keys),
        g = keys.iter().map(|g| format!("{g}, ")).collect::<String>(),
        open = o(slot),
        on = null_safe_eq("_mv_s", "_mv_r", keys),
    );
    // HAVING: an ungrouped aggregate has a group only when some row matters.
    let groups = format!(
        "_mv_g{slot} AS (SELECT {kr}coalesce(bool_or(_mv_r._mv_open), FALSE) AS _mv_open \
         FROM _mv_r{slot} AS _mv_r{gb} HAVING count(*) > 0)",
        kr = keys_of("_mv_r", keys),
        gb = group_by("_mv_r", keys, None),
    );
    let netted = format!(
        "SELECT {kr}_mv_r._mv_v, _mv_r._mv_n FROM _mv_r{slot} AS _mv_r \
         UNION ALL SELECT {ks}unnest(_mv_s.{list}), 1 FROM {storage} AS _mv_s \
         WHERE EXISTS (SELECT 1 FROM _mv_r{slot} AS _mv_w WHERE {on})",
        kr = keys_of("_mv_r", keys),
        ks = keys_of("_mv_s", keys),
        list = k(slot),
        on = null_safe_eq("_mv_s", "_mv_w", keys),
    );
    let counted = format!(
        "SELECT {ku}_mv_u._mv_v, sum(_mv_u._mv_n) AS _mv_n FROM ({netted}) AS _mv_u{gb} \
         HAVING sum(_mv_u._mv_n) > 0",
        ku = keys_of("_mv_u", keys),
        gb = group_by("_mv_u", keys, Some("_mv_u._mv_v")),
    );
    let repeated = format!(
        "SELECT {ke}_mv_e._mv_v, unnest(range(CAST(least(_mv_e._mv_n, {more}) AS BIGINT))) \
         FROM ({counted}) AS _mv_e",
        ke = keys_of("_mv_e", keys),
        more = KEPT + 1,
    );
    let cut = format!(
        "_mv_c{slot} AS (SELECT {kx}{first}(_mv_x._mv_v, {KEPT}) AS _mv_k, \
         count(*) > {KEPT} AS _mv_more FROM ({repeated}) AS _mv_x{gb})",
        kx = keys_of("_mv_x", keys),
        // `min(x, n)` / `max(x, n)`: the group's first n values in order.
        first = crate::agg::Aggregator::name(kept),
        gb = group_by("_mv_x", keys, None),
    );
    format!("{rows}, {groups}, {cut}")
}

/// The change per group with each kept extreme's list, flag, and whether it rewrites them:
/// `consolidated` is the change per group over the change rows `_mv_raw`, which `raw` computes.
pub(super) fn with_lists(storage: &str, a: &Aggregate, raw: &str, consolidated: &str) -> String {
    let keys = group_cols(a);
    let mut ctes = vec![format!("_mv_raw AS MATERIALIZED ({raw})")];
    let mut cols = vec!["_mv_d.*".to_string()];
    let mut joins = String::new();
    for (f, kept) in kept(a) {
        let slot = f.slot;
        ctes.push(self::ctes(storage, &keys, f, kept));
        cols.push(format!("_mv_c{slot}._mv_k AS {}", k(slot)));
        cols.push(format!(
            "(_mv_g{slot}._mv_open OR coalesce(_mv_c{slot}._mv_more, FALSE)) AS {}",
            o(slot)
        ));
        cols.push(format!("_mv_g{slot}._mv_open IS NOT NULL AS {}", r(slot)));
        joins.push_str(&format!(
            " LEFT JOIN _mv_g{slot} ON {} LEFT JOIN _mv_c{slot} ON {}",
            null_safe_eq(&format!("_mv_g{slot}"), "_mv_d", &keys),
            null_safe_eq(&format!("_mv_c{slot}"), "_mv_d", &keys),
        ));
    }
    format!(
        "WITH {} SELECT {} FROM ({consolidated}) AS _mv_d{joins}",
        ctes.join(", "),
        cols.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::tests::compiled;
    use crate::plan::Body;

    #[test]
    fn a_views_extremes_keep_values_in_their_order() {
        let plan = compiled("SELECT g, min(v), max(k), sum(v) FROM t GROUP BY g", 4).plan;
        let Body::Aggregate(a) = &plan.body else {
            panic!("{:?}", plan.body)
        };
        let order: Vec<bool> = kept(a).iter().map(|(_, k)| k.descending).collect();
        assert_eq!(order, [false, true]);
    }
}
