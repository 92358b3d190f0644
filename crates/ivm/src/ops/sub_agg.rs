//! An aggregate read as a relation (a derived table, a CTE, the set an IN/EXISTS tests): it has
//! no storage, so its change is computed per refresh for the groups its input's change
//! touches. With `S` a group's state (`agg`): the group's row now is `out(S_now)` and before
//! `out(S_now − ΔS)`, so
//!
//! ```text
//! Δ out(γ(R)) = Σ_touched groups  +out(S_now) − out(S_now − ΔS)
//! ```
//!
//! which needs the state to be taken back (COUNT, SUM, AVG of exact types): other aggregates
//! go to `rescan`. Here too is the state algebra the view's own aggregate storage shares:
//! the state of rows (`agg_state_over`) and of a change (`consolidate`).

use super::{rel_cur, rel_delta};
use crate::agg::{self, StateCol};
use crate::ir::{self, user, Cte, Expr, From, GroupBy, Item, JoinKind, Name, Query, Select};
use crate::plan::{Aggregate, Source, SubAgg};
use crate::strategy::keyed::{self, Keys};
use crate::user_expr::Hole;
use sqlparser::ast::Expr as Ast;

pub fn group_cols(a: &Aggregate) -> Vec<String> {
    (1..=a.groups).map(|i| format!("_g{i}")).collect()
}

/// The group keys of relation `rel`.
pub fn keys_of(a: &Aggregate, rel: &'static str) -> Vec<Expr> {
    group_cols(a).into_iter().map(|g| ir::col(rel, g)).collect()
}

/// `GROUP BY rel._g1, …`, or none for an ungrouped aggregate.
fn group_by(a: &Aggregate, rel: &'static str) -> GroupBy {
    if a.groups == 0 {
        return GroupBy::None;
    }
    GroupBy::Exprs(keys_of(a, rel))
}

/// The aggregate state of the current input rows (`_mv_i`) that pass `filter`.
pub fn agg_state_from(sources: &[Source], a: &Aggregate, filter: Vec<Expr>) -> Query {
    agg_state_over(a, rel_cur(sources, &a.input_rel()), filter)
}

/// The aggregate state of the input rows `input` (as `_mv_i`) that pass `filter`.
pub fn agg_state_over(a: &Aggregate, input: Query, filter: Vec<Expr>) -> Query {
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

pub fn agg_delta_from(sources: &[Source], a: &Aggregate, changed: &[bool]) -> Option<Query> {
    let d = rel_delta(sources, &a.input_rel(), changed)?;
    Some(consolidate(a, From::query(d, "_mv_d")))
}

/// The change rows `from` (aliased `_mv_d`) consolidated per group.
pub fn consolidate(a: &Aggregate, from: From) -> Query {
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
pub(super) fn cur(sources: &[Source], sa: &SubAgg) -> Query {
    sub_agg_sql(sa, agg_state_from(sources, &sa.agg, Vec::new()), false)
}

/// A sub-aggregate's rows now, read under `alias`, for the groups whose key is among the rows
/// of `wanted` (columns `_mv_k0…`, one per pair of `keys`), when each pair's side in the
/// aggregate is one of its plain group columns: the restriction goes under the grouping, so
/// only those groups' input rows are read (DuckDB does not push a join through the grouping).
/// None when some key is not a group column.
pub(crate) fn cur_for_keys(
    sources: &[Source],
    sa: &SubAgg,
    alias: &str,
    keys: &Keys,
    wanted: Query,
) -> Option<From> {
    let mut on = Vec::new();
    for (n, (_, o)) in keys.pairs.iter().enumerate() {
        let g = group_of(sa, alias, o)?;
        on.push(ir::col("_mv_i", format!("_g{g}")).eq(ir::col("_mv_w", keyed::key(n))));
    }
    let hit = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![From::query(wanted, "_mv_w")],
    )
    .filtered(on);
    let state = agg_state_from(sources, &sa.agg, vec![ir::exists(Query::select(hit))]);
    Some(From::query(
        sub_agg_sql(sa, state, false),
        alias.to_string(),
    ))
}

/// The group column (`_g<n>`, as n) that output column `e` of the sub-aggregate read as
/// `alias` shows unchanged, if it is one.
fn group_of(sa: &SubAgg, alias: &str, e: &Expr) -> Option<usize> {
    let Expr::User(ast) = e else {
        return None;
    };
    let name = match ast.as_ref() {
        Ast::Identifier(c) => &c.value,
        Ast::CompoundIdentifier(parts) => match parts.as_slice() {
            [a, c] if a.value.eq_ignore_ascii_case(alias) => &c.value,
            _ => return None,
        },
        _ => return None,
    };
    let at = sa.names.iter().position(|n| n.eq_ignore_ascii_case(name))?;
    let Ast::Identifier(g) = sa.agg.output[at].ast() else {
        return None;
    };
    let n: usize = g.value.strip_prefix("_g")?.parse().ok()?;
    (1..=sa.agg.groups).contains(&n).then_some(n)
}

/// A sub-aggregate's change: for each group its input's change touches, the group's row now
/// (+1) and before (−1), the state before being the state now minus the change's.
pub(super) fn delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<Query> {
    let a = &sa.agg;
    if super::rescan::needs_rescan(a) {
        return super::rescan::delta(sources, sa, changed);
    }
    let d = agg_delta_from(sources, a, changed)?;
    let keys = group_cols(a);
    // The change is read twice (which groups, and their states): computed once.
    let (now, on) = if keys.is_empty() {
        (agg_state_from(sources, a, Vec::new()), Expr::Bool(true))
    } else {
        let touched = Select::new(
            vec![Item::Expr(Expr::Int(1), None)],
            vec![From::table(Name(vec!["_mv_dd".into()]), "_mv_w")],
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
            let e = ir::call(
                "coalesce",
                vec![ir::col("_mv_n", k.clone()), ir::col("_mv_d", k.clone())],
            );
            Item::named(e, k.clone())
        })
        .collect();
    let count = StateCol {
        name: "_mv_count".into(),
        zero_when_empty: true,
    };
    for c in std::iter::once(count).chain(state_cols(a)) {
        let (now, change) = (
            ir::col("_mv_n", c.name.clone()),
            ir::col("_mv_d", c.name.clone()),
        );
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
    let both = From::query(now, "_mv_n").join(
        JoinKind::Full,
        From::table(Name(vec!["_mv_dd".into()]), "_mv_d"),
        on,
    );
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
