//! Aggregates: storage (_g1.._gk, _mv_count, then each aggregate's state columns). A refresh
//! consolidates the change per group into state (see `agg`), combines it with the stored
//! state, and recomputes from the base data only the groups an aggregate cannot combine.

use super::{rel_delta, storage, work, Aggregate, Plan};
use crate::agg;
use crate::ir::{self, Action, Cte, Expr, From, Item, JoinKind, Name, Query, Select, Stmt, When};
use crate::ops::{agg_delta_from, agg_state_from, consolidate, group_cols, keys_of};

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

/// The consolidated change per group; MIN/MAX keep the extreme of the inserted values (`m_i`) and
/// of the deleted ones (`x_i`), which decides whether the group must be recomputed, or with
/// kept candidates, the touched groups' new lists (`kept`); distinct aggregates kept by value,
/// the transitions of their distinct sets (`by_value`).
pub fn agg_delta_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<Query> {
    let by_value = !super::by_value::values_of(a).is_empty();
    if super::kept::kept(a).is_empty() && !by_value {
        return agg_delta_from(&plan.sources, a, changed);
    }
    let raw = rel_delta(&plan.sources, &a.input_rel(), changed)?;
    // With distinct values, a step before has kept the change rows (`by_value`).
    let raw = if by_value {
        super::by_value::kept_change(plan)
    } else {
        raw
    };
    let consolidated = consolidate(a, From::table(Name(vec!["_mv_raw".into()]), "_mv_d"));
    let mut joined = Joined::new(raw, consolidated);
    super::kept::add_lists(&storage(plan.id), a, &mut joined);
    super::by_value::add_transitions(plan, a, &mut joined);
    Some(joined.query())
}

/// The change per group (`_mv_d`, over the change rows `_mv_raw`) with what other relations
/// say of the same groups LEFT JOINed beside it.
pub(super) struct Joined {
    pub ctes: Vec<Cte>,
    pub cols: Vec<Item>,
    from: From,
}

impl Joined {
    fn new(raw: Query, consolidated: Query) -> Joined {
        Joined {
            ctes: vec![Cte {
                name: "_mv_raw".into(),
                query: raw,
                materialized: true,
            }],
            cols: vec![Item::StarOf("_mv_d".into())],
            from: From::query(consolidated, "_mv_d"),
        }
    }

    /// LEFT JOINs the CTE `cte`, aliased by its name, on the group keys `keys`.
    pub fn join(&mut self, cte: &str, keys: &[String]) {
        let rel = From::table(Name(vec![cte.to_string()]), cte);
        let from = std::mem::replace(&mut self.from, From::table(Name(vec![]), ""));
        self.from = from.join(JoinKind::Left, rel, ir::same_cols(cte, "_mv_d", keys));
    }

    fn query(self) -> Query {
        Query::With {
            ctes: self.ctes,
            body: Box::new(Query::select(Select::new(self.cols, vec![self.from]))),
        }
    }
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
    let rows = Select::new(
        vec![Item::StarOf("_mv_d".into()), Item::Expr(rc, None)],
        vec![from],
    );
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
