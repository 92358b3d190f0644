//! Aggregates: storage (_g1.._gk, _mv_count, then each aggregate's state columns). A refresh
//! consolidates the change per group into state (see `agg`), combines it with the stored
//! state, and recomputes from the base data only the groups an aggregate cannot combine.

use super::{rel_cur, rel_delta, storage, work, Aggregate, Plan, Source, SubAgg};
use crate::agg::{self, StateCol};
use crate::ir::{self, Aliased};
use crate::term;
use crate::text::{ident, null_safe_eq};
use crate::user_expr::Hole;

pub(super) fn group_cols(a: &Aggregate) -> Vec<String> {
    (1..=a.groups).map(|i| format!("_g{i}")).collect()
}

/// ` GROUP BY rel._g1, …`, or nothing for an ungrouped aggregate.
fn group_by(a: &Aggregate, rel: &'static str) -> String {
    if a.groups == 0 {
        return String::new();
    }
    let keys: Vec<String> = group_cols(a)
        .into_iter()
        .map(|g| ir::col(rel, g).to_string())
        .collect();
    format!(" GROUP BY {}", keys.join(", "))
}

/// The aggregate state of the current base data; `only_recompute` restricts it to the groups
/// flagged in the work table (MIN/MAX whose extreme was deleted).
pub fn agg_state_sql(plan: &Plan, a: &Aggregate, only_recompute: bool) -> String {
    let filter = if only_recompute {
        format!(
            " WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE _mv_w._mv_rc AND {on})",
            w = work(plan.id),
            on = null_safe_eq("_mv_i", "_mv_w", &group_cols(a))
        )
    } else {
        String::new()
    };
    agg_state_from(&plan.sources, a, &filter)
}

/// The aggregate state of the current input rows (`_mv_i`) that pass `filter`.
pub(super) fn agg_state_from(sources: &[Source], a: &Aggregate, filter: &str) -> String {
    agg_state_over(a, &rel_cur(sources, &a.input_rel()), filter)
}

/// The aggregate state of the input rows `input` (as `_mv_i`) that pass `filter`.
pub(super) fn agg_state_over(a: &Aggregate, input: &str, filter: &str) -> String {
    let mut cols: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_i.{g}")).collect();
    cols.push("CAST(COUNT(*) AS BIGINT) AS _mv_count".to_string());
    for f in a.state_fns() {
        let ag = agg::of(f);
        let arg = match &f.call {
            // A call kept whole reads its columns from the input.
            Some(call) => Some(ir::Expr::User(Box::new(call.filled(Hole::Input, |j| {
                ir::col("_mv_i", format!("_a{}", j + 1)).to_ast()
            })))),
            None => f.arg.as_ref().map(|x| ir::col("_mv_i", x)),
        };
        for (c, e) in ag.state(f.slot).iter().zip(ag.rows_state(arg)) {
            cols.push(Aliased(&e, &c.name).to_string());
        }
    }
    format!(
        "SELECT {} FROM ({input}) AS _mv_i{filter}{}",
        cols.join(", "),
        group_by(a, "_mv_i")
    )
}

/// The consolidated change per group; MIN/MAX keep the extreme of the inserted values (`m_i`) and
/// of the deleted ones (`x_i`), which decides whether the group must be recomputed, or with
/// kept candidates, the touched groups' new lists (`kept`).
pub fn agg_delta_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<String> {
    if super::kept::kept(a).is_empty() {
        return agg_delta_from(&plan.sources, a, changed);
    }
    let raw = rel_delta(&plan.sources, &a.input_rel(), changed)?;
    let consolidated = consolidate(a, "_mv_raw");
    Some(super::kept::with_lists(
        &storage(plan.id),
        a,
        &raw,
        &consolidated,
    ))
}

fn agg_delta_from(sources: &[Source], a: &Aggregate, changed: &[bool]) -> Option<String> {
    let d = rel_delta(sources, &a.input_rel(), changed)?;
    Some(consolidate(a, &format!("({d})")))
}

/// The change rows `from` (as `_mv_d`) consolidated per group.
fn consolidate(a: &Aggregate, from: &str) -> String {
    let mut cols: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_d.{g}")).collect();
    // COALESCE: an ungrouped aggregate over a change that no row survives still yields one row,
    // whose sums must add nothing.
    cols.push("CAST(COALESCE(SUM(_mv_d._mv_mult), 0) AS BIGINT) AS _mv_count".to_string());
    for f in a.state_fns() {
        let arg = f.arg.as_ref().map(|x| ir::col("_mv_d", x));
        let mult = ir::col("_mv_d", "_mv_mult");
        for (name, e) in agg::of(f).change_state(f.slot, arg, mult) {
            cols.push(Aliased(&e, &name).to_string());
        }
    }
    format!(
        "SELECT {} FROM {from} AS _mv_d{}",
        cols.join(", "),
        group_by(a, "_mv_d")
    )
}

/// The state columns of an aggregate's storage rows, after the group keys and `_mv_count`.
fn state_cols(a: &Aggregate) -> Vec<StateCol> {
    a.state_fns()
        .flat_map(|f| agg::of(f).state(f.slot))
        .collect()
}

/// A sub-aggregate's rows from state rows `state` (`_mv_count`, `n_i`, …, plus `_mv_mult`
/// when `mult`): output expressions under their names, HAVING applied. A grouped aggregate
/// has no row for a group without input rows; an ungrouped one always has its one row.
pub(super) fn sub_agg_sql(sa: &SubAgg, state: &str, mult: bool) -> String {
    let a = &sa.agg;
    let mut cols: Vec<String> = a
        .output
        .iter()
        .zip(&sa.names)
        .map(|(e, n)| format!("{e} AS {}", ident(n)))
        .collect();
    if mult {
        cols.push("_mv_mult".into());
    }
    let mut conds = Vec::new();
    if a.groups > 0 {
        conds.push("_mv_count > 0".to_string());
    }
    conds.extend(a.having.iter().map(|h| format!("({h})")));
    format!(
        "SELECT {} FROM ({state}) AS _mv_s{}",
        cols.join(", "),
        term::where_sql(&conds)
    )
}

/// A sub-aggregate's change: for each group its input's change touches, the group's row now
/// (+1) and before (−1), the state before being the state now minus the change's.
pub(super) fn sub_agg_delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<String> {
    let a = &sa.agg;
    if super::rescan::needs_rescan(a) {
        return super::rescan::rescan_delta(sources, sa, changed);
    }
    let d = agg_delta_from(sources, a, changed)?;
    let keys = group_cols(a);
    // The change is read twice (which groups, and their states): computed once.
    let (now, on) = if keys.is_empty() {
        (agg_state_from(sources, a, ""), "TRUE".to_string())
    } else {
        let touched = format!(
            " WHERE EXISTS (SELECT 1 FROM _mv_dd AS _mv_w WHERE {})",
            null_safe_eq("_mv_i", "_mv_w", &keys)
        );
        (
            agg_state_from(sources, a, &touched),
            null_safe_eq("_mv_n", "_mv_d", &keys),
        )
    };
    let mut cols: Vec<String> = keys
        .iter()
        .map(|k| format!("coalesce(_mv_n.{k}, _mv_d.{k}) AS {k}"))
        .collect();
    let count = StateCol {
        name: "_mv_count".into(),
        zero_when_empty: true,
    };
    for c in std::iter::once(count).chain(state_cols(a)) {
        let (now, change) = (ir::col("_mv_n", &c.name), ir::col("_mv_d", &c.name));
        // A group the input no longer has: counts 0, sums NULL.
        let now_value = if c.zero_when_empty {
            ir::or_zero(now.clone())
        } else {
            now.clone()
        };
        let before = ir::or_zero(now) - ir::or_zero(change);
        let now_side = ir::col("_mv_sg", "_mv_mult").eq(ir::Expr::Int(1));
        let e = ir::case(now_side, now_value, before);
        cols.push(Aliased(&e, &c.name).to_string());
    }
    cols.push("_mv_sg._mv_mult".into());
    let state = format!(
        "WITH _mv_dd AS MATERIALIZED ({d}) \
         SELECT {} FROM ({now}) AS _mv_n FULL JOIN _mv_dd AS _mv_d ON {on}, \
         (VALUES (1), (-1)) AS _mv_sg(_mv_mult)",
        cols.join(", ")
    );
    Some(sub_agg_sql(sa, &state, true))
}

/// Fills the work table: the consolidated change plus `_mv_rc`, true for groups whose current
/// MIN/MAX was among the deleted values (they are recomputed from the base data).
pub fn agg_fill_work_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<String> {
    let delta = agg_delta_sql(plan, a, changed)?;
    let rc: Vec<String> = a
        .state_fns()
        .filter_map(|f| agg::of(f).recompute_when(f.slot, "_mv_s", "_mv_d"))
        .map(|c| format!("({c})"))
        .collect();
    let rc = if rc.is_empty() {
        "FALSE".to_string()
    } else {
        format!("COALESCE({}, FALSE)", rc.join(" OR "))
    };
    Some(format!(
        "INSERT INTO {w} SELECT _mv_d.*, {rc} FROM ({delta}) AS _mv_d LEFT JOIN {s} AS _mv_s ON {on}",
        w = work(plan.id),
        s = storage(plan.id),
        on = null_safe_eq("_mv_s", "_mv_d", &group_cols(a))
    ))
}

/// The work table's shape (used once, at CREATE): the delta with every source changed.
pub fn agg_work_shape_sql(plan: &Plan, a: &Aggregate) -> Option<String> {
    let all = vec![true; plan.sources.len()];
    let delta = agg_delta_sql(plan, a, &all)?;
    Some(format!(
        "SELECT _mv_d.*, FALSE AS _mv_rc FROM ({delta}) AS _mv_d LIMIT 0"
    ))
}

fn agg_combine(a: &Aggregate) -> Vec<(String, String)> {
    let mut out = vec![(
        "_mv_count".to_string(),
        "_mv_s._mv_count + _mv_d._mv_count".to_string(),
    )];
    for f in a.state_fns() {
        let ag = agg::of(f);
        let combined = ag.combine(f.slot, "_mv_s", "_mv_d");
        for (c, e) in ag.state(f.slot).into_iter().zip(combined) {
            out.push((ir::bare(c.name).to_string(), e.to_string()));
        }
    }
    out
}

/// Applies the change `source` (as for [`bag_merge_sql`]) to the storage. Grouped: MERGE keyed NULL-safely on the group, groups
/// whose count reaches 0 disappear. Ungrouped: the single row is updated in place.
pub fn agg_apply_sql(plan: &Plan, a: &Aggregate, source: &str) -> String {
    let set: Vec<String> = agg_combine(a)
        .into_iter()
        .map(|(c, e)| format!("{c} = {e}"))
        .collect();
    if a.groups == 0 {
        return format!(
            "UPDATE {} AS _mv_s SET {} FROM {} AS _mv_d",
            storage(plan.id),
            set.join(", "),
            source
        );
    }
    let mut values: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_d.{g}")).collect();
    values.push("_mv_d._mv_count".to_string());
    for f in a.state_fns() {
        values.extend(
            agg::of(f)
                .insert(f.slot, "_mv_d")
                .iter()
                .map(|e| e.to_string()),
        );
    }
    format!(
        "MERGE INTO {s} AS _mv_s USING {w} AS _mv_d ON {on} \
         WHEN MATCHED AND _mv_s._mv_count + _mv_d._mv_count <= 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET {set} \
         WHEN NOT MATCHED AND _mv_d._mv_count > 0 THEN INSERT VALUES ({v})",
        s = storage(plan.id),
        w = source,
        on = null_safe_eq("_mv_s", "_mv_d", &group_cols(a)),
        set = set.join(", "),
        v = values.join(", ")
    )
}

/// Whether a change often sends groups back to the base data: a deleted MIN/MAX without kept
/// candidates, a distinct count, an aggregate kept whole (a kept extreme does so only when its
/// list runs out).
pub fn agg_rescans(a: &Aggregate) -> bool {
    a.state_fns().any(|f| {
        let ag = agg::of(f);
        ag.kept().is_none() && ag.recompute_when(f.slot, "_mv_s", "_mv_d").is_some()
    })
}

/// Whether a change can leave groups to recompute (a deleted MIN/MAX, a distinct count).
pub fn agg_may_recompute(a: &Aggregate) -> bool {
    a.state_fns().any(|f| {
        agg::of(f)
            .recompute_when(f.slot, "_mv_s", "_mv_d")
            .is_some()
    })
}

/// Statements recomputing the flagged groups from the base data.
pub fn agg_recompute_sql(plan: &Plan, a: &Aggregate) -> Vec<String> {
    let s = storage(plan.id);
    if a.groups == 0 {
        return vec![
            format!("DELETE FROM {s}"),
            format!("INSERT INTO {s} {}", agg_state_sql(plan, a, false)),
        ];
    }
    vec![
        format!(
            "DELETE FROM {s} AS _mv_s WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE _mv_w._mv_rc AND {on})",
            w = work(plan.id),
            on = null_safe_eq("_mv_s", "_mv_w", &group_cols(a))
        ),
        format!("INSERT INTO {s} {}", agg_state_sql(plan, a, true)),
    ]
}

/// The storage rows of the groups present in the work table (for the user-visible change fed to
/// downstream views).
pub fn agg_affected_rel(plan: &Plan, a: &Aggregate) -> String {
    if a.groups == 0 {
        return storage(plan.id);
    }
    format!(
        "(SELECT * FROM {s} AS _mv_x WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE {on}))",
        s = storage(plan.id),
        w = work(plan.id),
        on = null_safe_eq("_mv_x", "_mv_w", &group_cols(a))
    )
}
