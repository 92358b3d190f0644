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
use crate::ir::{self, Cte, Expr, From, GroupBy, Item, JoinKind, Name, Op, Query, Select};

use super::aggregate::{named, Joined};
use super::Aggregate;
use crate::ops::group_cols;

/// The kept extremes of `a`, with their order.
pub(super) fn kept(a: &Aggregate) -> Vec<(&AggFn, &'static Kept)> {
    a.state_fns()
        .filter_map(|f| crate::agg::of(f).kept().map(|k| (f, k)))
        .collect()
}

/// `rel.g1, rel.g2` (nothing for an ungrouped aggregate): the keys ahead of other columns.
fn keys_of(rel: &str, keys: &[String]) -> Vec<Item> {
    keys.iter()
        .map(|g| Item::Expr(ir::col(rel.to_string(), g.clone()), None))
        .collect()
}

/// `GROUP BY rel.g1, … [, extra]`, or `GROUP BY extra` alone, or none.
fn group_by(rel: &str, keys: &[String], extra: Option<Expr>) -> GroupBy {
    let mut cols: Vec<Expr> = keys
        .iter()
        .map(|g| ir::col(rel.to_string(), g.clone()))
        .collect();
    cols.extend(extra);
    if cols.is_empty() {
        GroupBy::None
    } else {
        GroupBy::Exprs(cols)
    }
}

/// A CTE (or other relation named by the query itself) under `alias`.
fn cte_ref(name: String, alias: &str) -> From {
    From::table(Name(vec![name]), alias)
}

/// `SELECT items FROM from [WHERE filter…] [GROUP BY …] [HAVING having]`.
fn select(items: Vec<Item>, from: From, filter: Vec<Expr>, group_by: GroupBy) -> Select {
    let mut s = Select::new(items, vec![from]).filtered(filter);
    s.group_by = group_by;
    s
}

/// `_mv_r<slot>`: the change rows `_mv_raw` that matter to their group's list, with the
/// stored flag.
fn rows(storage: &str, keys: &[String], f: &AggFn, kept: &Kept) -> Cte {
    let slot = f.slot;
    let arg = f.arg.clone().expect("min/max have an argument");
    let last = ir::call("list_extract", vec![ir::bare(k(slot)), Expr::Int(-1)]);
    let not_past = ir::col("_mv_r", arg.clone()).bin(kept.not_past(), ir::col("_mv_s", "_mv_last"));
    let mut stored: Vec<Item> = keys
        .iter()
        .map(|g| Item::Expr(ir::bare(g.clone()), None))
        .collect();
    stored.push(Item::named(ir::bare(o(slot)), "_mv_open"));
    stored.push(Item::named(last, "_mv_last"));
    let whole = From::Table {
        name: Name::of(storage),
        alias: None,
    };
    let stored = Query::select(Select::new(stored, vec![whole]));
    let stored = From::query(stored, "_mv_s");
    let mut items = keys_of("_mv_r", keys);
    items.push(Item::named(ir::col("_mv_r", arg.clone()), "_mv_v"));
    items.push(Item::named(ir::col("_mv_r", "_mv_mult"), "_mv_n"));
    items.push(Item::Expr(ir::col("_mv_s", "_mv_open"), None));
    let from = cte_ref("_mv_raw".into(), "_mv_r").join(
        JoinKind::Left,
        stored,
        ir::same_cols("_mv_s", "_mv_r", keys),
    );
    let open = ir::call(
        "coalesce",
        vec![ir::col("_mv_s", "_mv_open"), Expr::Bool(false)],
    );
    let matters = vec![ir::col("_mv_r", arg).is_not_null(), open.not().or(not_past)];
    Cte {
        name: format!("_mv_r{slot}"),
        query: Query::select(select(items, from, matters, GroupBy::None)),
        materialized: true,
    }
}

/// `_mv_g<slot>`: the groups of those rows and their stored flag. HAVING: an ungrouped
/// aggregate has a group only when some row matters.
fn groups(keys: &[String], slot: usize) -> Cte {
    let mut items = keys_of("_mv_r", keys);
    let open = ir::call("bool_or", vec![ir::col("_mv_r", "_mv_open")]);
    items.push(Item::named(
        ir::call("coalesce", vec![open, Expr::Bool(false)]),
        "_mv_open",
    ));
    let mut s = select(
        items,
        cte_ref(format!("_mv_r{slot}"), "_mv_r"),
        Vec::new(),
        group_by("_mv_r", keys, None),
    );
    s.having = vec![Expr::CountStar.bin(Op::Gt, Expr::Int(0))];
    Cte {
        name: format!("_mv_g{slot}"),
        query: Query::select(s),
        materialized: false,
    }
}

/// `_mv_c<slot>`: those groups' new list and whether the cut dropped values.
fn cut(storage: &str, keys: &[String], slot: usize, kept: &Kept) -> Cte {
    let rows = format!("_mv_r{slot}");
    let mut changed = keys_of("_mv_r", keys);
    changed.push(Item::Expr(ir::col("_mv_r", "_mv_v"), None));
    changed.push(Item::Expr(ir::col("_mv_r", "_mv_n"), None));
    let mut listed = keys_of("_mv_s", keys);
    listed.push(Item::Expr(
        ir::call("unnest", vec![ir::col("_mv_s", k(slot))]),
        None,
    ));
    listed.push(Item::Expr(Expr::Int(1), None));
    let touched = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![cte_ref(rows.clone(), "_mv_w")],
    )
    .filtered([ir::same_cols("_mv_s", "_mv_w", keys)]);
    let netted = Query::union_all(vec![
        Query::select(Select::new(changed, vec![cte_ref(rows, "_mv_r")])),
        Query::select(
            Select::new(listed, vec![named(storage, "_mv_s")])
                .filtered([ir::exists(Query::select(touched))]),
        ),
    ]);
    let net = || ir::call("sum", vec![ir::col("_mv_u", "_mv_n")]);
    let mut items = keys_of("_mv_u", keys);
    items.push(Item::Expr(ir::col("_mv_u", "_mv_v"), None));
    items.push(Item::named(net(), "_mv_n"));
    let mut counted = select(
        items,
        From::query(netted, "_mv_u"),
        Vec::new(),
        group_by("_mv_u", keys, Some(ir::col("_mv_u", "_mv_v"))),
    );
    counted.having = vec![net().bin(Op::Gt, Expr::Int(0))];
    let copies = ir::call(
        "least",
        vec![ir::col("_mv_e", "_mv_n"), Expr::Int(KEPT + 1)],
    );
    let mut items = keys_of("_mv_e", keys);
    items.push(Item::Expr(ir::col("_mv_e", "_mv_v"), None));
    items.push(Item::Expr(
        ir::call("unnest", vec![ir::call("range", vec![copies.big_int()])]),
        None,
    ));
    let repeated = Select::new(items, vec![From::query(Query::select(counted), "_mv_e")]);
    // `min(x, n)` / `max(x, n)`: the group's first n values in order.
    let first = kept.function;
    let mut items = keys_of("_mv_x", keys);
    items.push(Item::named(
        ir::call(first, vec![ir::col("_mv_x", "_mv_v"), Expr::Int(KEPT)]),
        "_mv_k",
    ));
    items.push(Item::named(
        Expr::CountStar.bin(Op::Gt, Expr::Int(KEPT)),
        "_mv_more",
    ));
    let s = select(
        items,
        From::query(Query::select(repeated), "_mv_x"),
        Vec::new(),
        group_by("_mv_x", keys, None),
    );
    Cte {
        name: format!("_mv_c{slot}"),
        query: Query::select(s),
        materialized: false,
    }
}

/// Adds each kept extreme's list, flag, and whether the change rewrites them to the change per
/// group `joined` (over the change rows `_mv_raw`).
pub(super) fn add_lists(storage: &str, a: &Aggregate, joined: &mut Joined) {
    let keys = group_cols(a);
    for (f, kept) in kept(a) {
        let slot = f.slot;
        joined.ctes.push(rows(storage, &keys, f, kept));
        joined.ctes.push(groups(&keys, slot));
        joined.ctes.push(cut(storage, &keys, slot, kept));
        let (g, c) = (format!("_mv_g{slot}"), format!("_mv_c{slot}"));
        joined
            .cols
            .push(Item::named(ir::col(c.clone(), "_mv_k"), k(slot)));
        let more = ir::call(
            "coalesce",
            vec![ir::col(c.clone(), "_mv_more"), Expr::Bool(false)],
        );
        joined.cols.push(Item::named(
            ir::col(g.clone(), "_mv_open").or(more),
            o(slot),
        ));
        joined.cols.push(Item::named(
            ir::col(g.clone(), "_mv_open").is_not_null(),
            r(slot),
        ));
        joined.join(&g, &keys);
        joined.join(&c, &keys);
    }
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
