//! Aggregates: storage (_g1.._gk, _mv_count, then each aggregate's state columns). A refresh
//! consolidates the change per group into state (see `agg`), combines it with the stored
//! state, and recomputes from the base data only the groups an aggregate cannot combine.

use super::{rel_cur, rel_delta, storage, work, Aggregate, Plan, Source, SubAgg};
use crate::agg::{self, StateCol};
use crate::ir::{
    self, user, Action, Cte, Expr, From, GroupBy, Item, JoinKind, Name, Query, Select, Stmt, When,
};
use crate::user_expr::Hole;

pub(super) fn group_cols(a: &Aggregate) -> Vec<String> {
    (1..=a.groups).map(|i| format!("_g{i}")).collect()
}

/// The group keys of relation `rel`.
fn keys_of(a: &Aggregate, rel: &'static str) -> Vec<Expr> {
    group_cols(a).into_iter().map(|g| ir::col(rel, g)).collect()
}

/// `GROUP BY rel._g1, …`, or none for an ungrouped aggregate.
fn group_by(a: &Aggregate, rel: &'static str) -> GroupBy {
    if a.groups == 0 {
        return GroupBy::None;
    }
    GroupBy::Exprs(keys_of(a, rel))
}

/// A relation the engine named (storage, work table, CTE) under `alias`.
pub(super) fn named(table: &str, alias: &'static str) -> From {
    From::table(Name::of(table), alias)
}

/// Whether the work table (`_mv_w`) holds a row for the group of `rel`'s row, flagged to be
/// recomputed when `flagged`.
pub(super) fn in_work(plan: &Plan, a: &Aggregate, rel: &'static str, flagged: bool) -> Expr {
    let mut cond = vec![];
    if flagged {
        cond.push(ir::col("_mv_w", "_mv_rc"));
    }
    cond.push(ir::same_cols(rel, "_mv_w", &group_cols(a)));
    let any = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![named(&work(plan.id), "_mv_w")],
    )
    .filtered(cond);
    ir::exists(Query::select(any))
}

/// The aggregate state of the current base data; `only_recompute` restricts it to the groups
/// flagged in the work table (MIN/MAX whose extreme was deleted).
pub fn agg_state_sql(plan: &Plan, a: &Aggregate, only_recompute: bool) -> Query {
    let filter = if only_recompute {
        vec![in_work(plan, a, "_mv_i", true)]
    } else {
        Vec::new()
    };
    agg_state_from(&plan.sources, a, filter)
}

/// The aggregate state of the current input rows (`_mv_i`) that pass `filter`.
pub(super) fn agg_state_from(sources: &[Source], a: &Aggregate, filter: Vec<Expr>) -> Query {
    agg_state_over(a, rel_cur(sources, &a.input_rel()), filter)
}

/// The aggregate state of the input rows `input` (as `_mv_i`) that pass `filter`.
pub(super) fn agg_state_over(a: &Aggregate, input: Query, filter: Vec<Expr>) -> Query {
    let mut cols: Vec<Item> = keys_of(a, "_mv_i")
        .into_iter()
        .map(|k| Item::Expr(k, None))
        .collect();
    cols.push(Item::named(Expr::CountStar.big_int(), "_mv_count"));
    for f in a.state_fns() {
        let ag = agg::of(f);
        let arg = match &f.call {
            // A call kept whole reads its columns from the input.
            Some(call) => Some(user(&call.filled(Hole::Input, |j| {
                ir::col("_mv_i", format!("_a{}", j + 1)).to_ast()
            }))),
            None => f.arg.as_ref().map(|x| ir::col("_mv_i", x.clone())),
        };
        for (c, e) in ag.state(f.slot).iter().zip(ag.rows_state(arg)) {
            cols.push(Item::named(e, c.name.clone()));
        }
    }
    let mut s = Select::new(cols, vec![From::query(input, "_mv_i")]).filtered(filter);
    s.group_by = group_by(a, "_mv_i");
    Query::select(s)
}

/// The consolidated change per group; MIN/MAX keep the extreme of the inserted values (`m_i`) and
/// of the deleted ones (`x_i`), which decides whether the group must be recomputed, or with
/// kept candidates, the touched groups' new lists (`kept`).
pub fn agg_delta_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<Query> {
    if super::kept::kept(a).is_empty() {
        return agg_delta_from(&plan.sources, a, changed);
    }
    let raw = rel_delta(&plan.sources, &a.input_rel(), changed)?;
    let consolidated = consolidate(a, From::table(Name(vec!["_mv_raw".into()]), "_mv_d"));
    Some(super::kept::with_lists(
        &storage(plan.id),
        a,
        raw,
        consolidated,
    ))
}

fn agg_delta_from(sources: &[Source], a: &Aggregate, changed: &[bool]) -> Option<Query> {
    let d = rel_delta(sources, &a.input_rel(), changed)?;
    Some(consolidate(a, From::query(d, "_mv_d")))
}

/// The change rows `from` (aliased `_mv_d`) consolidated per group.
fn consolidate(a: &Aggregate, from: From) -> Query {
    let mut cols: Vec<Item> = keys_of(a, "_mv_d")
        .into_iter()
        .map(|k| Item::Expr(k, None))
        .collect();
    // COALESCE: an ungrouped aggregate over a change that no row survives still yields one row,
    // whose sums must add nothing.
    let net = ir::or_zero(ir::call("sum", vec![ir::col("_mv_d", "_mv_mult")]));
    cols.push(Item::named(net.big_int(), "_mv_count"));
    for f in a.state_fns() {
        let arg = f.arg.as_ref().map(|x| ir::col("_mv_d", x.clone()));
        let mult = ir::col("_mv_d", "_mv_mult");
        for (name, e) in agg::of(f).change_state(f.slot, arg, mult) {
            cols.push(Item::named(e, name));
        }
    }
    let mut s = Select::new(cols, vec![from]);
    s.group_by = group_by(a, "_mv_d");
    Query::select(s)
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
pub(super) fn sub_agg_sql(sa: &SubAgg, state: Query, mult: bool) -> Query {
    let a = &sa.agg;
    let mut cols: Vec<Item> = a
        .output
        .iter()
        .zip(&sa.names)
        .map(|(e, n)| Item::named(user(e.ast()), n.clone()))
        .collect();
    if mult {
        cols.push(Item::Expr(ir::bare("_mv_mult"), None));
    }
    let mut conds = Vec::new();
    if a.groups > 0 {
        conds.push(ir::bare("_mv_count").bin(ir::Op::Gt, Expr::Int(0)));
    }
    conds.extend(a.having.iter().map(|h| user(h.ast())));
    Query::select(Select::new(cols, vec![From::query(state, "_mv_s")]).filtered(conds))
}

/// A sub-aggregate's rows now.
pub(super) fn sub_agg_cur(sources: &[Source], sa: &SubAgg) -> Query {
    sub_agg_sql(sa, agg_state_from(sources, &sa.agg, Vec::new()), false)
}

/// A sub-aggregate's change: for each group its input's change touches, the group's row now
/// (+1) and before (−1), the state before being the state now minus the change's.
pub(super) fn sub_agg_delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<Query> {
    let a = &sa.agg;
    if super::rescan::needs_rescan(a) {
        return super::rescan::rescan_delta(sources, sa, changed);
    }
    let d = agg_delta_from(sources, a, changed)?;
    let keys = group_cols(a);
    // The change is read twice (which groups, and their states): computed once.
    let (now, on) = if keys.is_empty() {
        (agg_state_from(sources, a, Vec::new()), Expr::Bool(true))
    } else {
        let touched = Select::new(
            vec![Item::Expr(Expr::Int(1), None)],
            vec![named("_mv_dd", "_mv_w")],
        )
        .filtered([ir::same_cols("_mv_i", "_mv_w", &keys)]);
        (
            agg_state_from(sources, a, vec![ir::exists(Query::select(touched))]),
            ir::same_cols("_mv_n", "_mv_d", &keys),
        )
    };
    let mut cols: Vec<Item> = keys
        .iter()
        .map(|k| {
            let e = ir::call("coalesce", vec![ir::col("_mv_n", k.clone()), ir::col("_mv_d", k.clone())]);
            Item::named(e, k.clone())
        })
        .collect();
    let count = StateCol {
        name: "_mv_count".into(),
        zero_when_empty: true,
    };
    for c in std::iter::once(count).chain(state_cols(a)) {
        let (now, change) = (ir::col("_mv_n", c.name.clone()), ir::col("_mv_d", c.name.clone()));
        // A group the input no longer has: counts 0, sums NULL.
        let now_value = if c.zero_when_empty {
            ir::or_zero(now.clone())
        } else {
            now.clone()
        };
        let before = ir::or_zero(now) - ir::or_zero(change);
        let now_side = ir::col("_mv_sg", "_mv_mult").eq(Expr::Int(1));
        cols.push(Item::named(ir::case(now_side, now_value, before), c.name));
    }
    cols.push(Item::Expr(ir::col("_mv_sg", "_mv_mult"), None));
    let signs = From::Query {
        query: Box::new(Query::Values(vec![vec![Expr::Int(1)], vec![Expr::Int(-1)]])),
        alias: "_mv_sg".into(),
        columns: vec!["_mv_mult".into()],
        lateral: false,
    };
    let both = From::query(now, "_mv_n").join(JoinKind::Full, named("_mv_dd", "_mv_d"), on);
    let state = Query::With {
        ctes: vec![Cte {
            name: "_mv_dd".into(),
            query: d,
            materialized: true,
        }],
        body: Box::new(Query::select(Select::new(cols, vec![both, signs]))),
    };
    Some(sub_agg_sql(sa, state, true))
}

/// Fills the work table: the consolidated change plus `_mv_rc`, true for groups whose current
/// MIN/MAX was among the deleted values (they are recomputed from the base data).
pub fn agg_fill_work_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<Stmt> {
    let delta = agg_delta_sql(plan, a, changed)?;
    let rc: Vec<Expr> = a
        .state_fns()
        .filter_map(|f| agg::of(f).recompute_when(f.slot, "_mv_s", "_mv_d"))
        .collect();
    let rc = if rc.is_empty() {
        Expr::Bool(false)
    } else {
        ir::call("COALESCE", vec![ir::any(rc), Expr::Bool(false)])
    };
    let from = From::query(delta, "_mv_d").join(
        JoinKind::Left,
        named(&storage(plan.id), "_mv_s"),
        ir::same_cols("_mv_s", "_mv_d", &group_cols(a)),
    );
    let rows = Select::new(vec![Item::StarOf("_mv_d".into()), Item::Expr(rc, None)], vec![from]);
    Some(Stmt::insert(Name::of(&work(plan.id)), Query::select(rows)))
}

/// The work table's shape (used once, at CREATE): the delta with every source changed.
pub fn agg_work_shape_sql(plan: &Plan, a: &Aggregate) -> Option<Query> {
    let all = vec![true; plan.sources.len()];
    let delta = agg_delta_sql(plan, a, &all)?;
    let mut s = Select::new(
        vec![
            Item::StarOf("_mv_d".into()),
            Item::named(Expr::Bool(false), "_mv_rc"),
        ],
        vec![From::query(delta, "_mv_d")],
    );
    s.limit = Some(0);
    Some(Query::select(s))
}

fn agg_combine(a: &Aggregate) -> Vec<(String, Expr)> {
    let mut out = vec![(
        "_mv_count".to_string(),
        ir::col("_mv_s", "_mv_count") + ir::col("_mv_d", "_mv_count"),
    )];
    for f in a.state_fns() {
        let ag = agg::of(f);
        let combined = ag.combine(f.slot, "_mv_s", "_mv_d");
        for (c, e) in ag.state(f.slot).into_iter().zip(combined) {
            out.push((c.name, e));
        }
    }
    out
}

/// Applies the change `source` (as for [`super::bag_merge_sql`]) to the storage. Grouped:
/// MERGE keyed NULL-safely on the group, groups whose count reaches 0 disappear. Ungrouped: the
/// single row is updated in place.
pub fn agg_apply_sql(plan: &Plan, a: &Aggregate, source: From) -> Stmt {
    let set = agg_combine(a);
    let into = Name::of(&storage(plan.id));
    if a.groups == 0 {
        return Stmt::Update {
            table: into,
            alias: "_mv_s".into(),
            set,
            from: source,
        };
    }
    let mut values = keys_of(a, "_mv_d");
    values.push(ir::col("_mv_d", "_mv_count"));
    for f in a.state_fns() {
        values.extend(agg::of(f).insert(f.slot, "_mv_d"));
    }
    let count_after = ir::col("_mv_s", "_mv_count") + ir::col("_mv_d", "_mv_count");
    Stmt::Merge {
        into,
        alias: "_mv_s".into(),
        using: source,
        on: ir::same_cols("_mv_s", "_mv_d", &group_cols(a)),
        whens: vec![
            When {
                matched: true,
                cond: Some(count_after.bin(ir::Op::LtEq, Expr::Int(0))),
                action: Action::Delete,
            },
            When {
                matched: true,
                cond: None,
                action: Action::Update(set),
            },
            When {
                matched: false,
                cond: Some(ir::col("_mv_d", "_mv_count").bin(ir::Op::Gt, Expr::Int(0))),
                action: Action::Insert(values),
            },
        ],
    }
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
pub fn agg_recompute_sql(plan: &Plan, a: &Aggregate) -> Vec<Stmt> {
    let s = Name::of(&storage(plan.id));
    if a.groups == 0 {
        return vec![
            Stmt::delete_all(s.clone()),
            Stmt::insert(s, agg_state_sql(plan, a, false)),
        ];
    }
    vec![
        Stmt::Delete {
            from: s.clone(),
            alias: Some("_mv_s".into()),
            filter: vec![in_work(plan, a, "_mv_s", true)],
        },
        Stmt::insert(s, agg_state_sql(plan, a, true)),
    ]
}

/// The storage rows of the groups present in the work table, as `_mv_s` (for the
/// user-visible change fed to downstream views).
pub fn agg_affected_rel(plan: &Plan, a: &Aggregate) -> From {
    let all = named(&storage(plan.id), "_mv_s");
    if a.groups == 0 {
        return all;
    }
    let rows = Select::new(vec![Item::Star], vec![named(&storage(plan.id), "_mv_x")])
        .filtered([in_work(plan, a, "_mv_x", false)]);
    From::query(Query::select(rows), "_mv_s")
}
