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
//!
//! Every kept extreme of the view goes through the same few operators: the stored rows of the
//! touched groups are read once, the change is joined with them once, and the netting and the
//! cut are one aggregate each, whose rows carry one value column per extreme (the others
//! NULL). DuckDB spends a fixed time per operator and per pipeline feeding an aggregate; one
//! set of them per extreme cost V7's four extremes (SF 1, 8,000 changed rows) 44 ms against
//! 28 ms this way.

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

/// `GROUP BY rel.g1, … [, extra…]`, or `GROUP BY extra…` alone, or none.
fn group_by(rel: &str, keys: &[String], extra: Vec<Expr>) -> GroupBy {
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

/// `_mv_st`: the stored rows of the groups the change touches, read once for every kept
/// extreme (their lists and flags); the storage holds every group, the change few.
fn stored(storage: &str, keys: &[String], kept: &[(&AggFn, &Kept)]) -> Cte {
    let mut items = keys_of("_mv_s", keys);
    for (f, _) in kept {
        items.push(Item::Expr(ir::col("_mv_s", k(f.slot)), None));
        items.push(Item::Expr(ir::col("_mv_s", o(f.slot)), None));
    }
    let touched = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![cte_ref("_mv_raw".into(), "_mv_w")],
    )
    .filtered([ir::same_cols("_mv_s", "_mv_w", keys)]);
    let s = Select::new(items, vec![named(storage, "_mv_s")])
        .filtered([ir::exists(Query::select(touched))]);
    Cte {
        name: "_mv_st".into(),
        query: Query::select(s),
        materialized: true,
    }
}

fn arg(f: &AggFn) -> String {
    f.arg.clone().expect("min/max have an argument")
}

/// Whether a change row matters to its group's list of `f`: its value is at or before the
/// list's last, or the list holds the whole group (flag unset, or no stored group).
fn matters(f: &AggFn, kept: &Kept) -> Expr {
    let last = ir::call(
        "list_extract",
        vec![ir::col("_mv_st", k(f.slot)), Expr::Int(-1)],
    );
    let not_past = ir::col("_mv_r", arg(f)).bin(kept.not_past(), last);
    let open = ir::call(
        "coalesce",
        vec![ir::col("_mv_st", o(f.slot)), Expr::Bool(false)],
    );
    let m = ir::col("_mv_r", arg(f))
        .is_not_null()
        .and(open.not().or(not_past));
    ir::call("coalesce", vec![m, Expr::Bool(false)])
}

/// `_mv_rk`: the change rows `_mv_raw` that matter to some kept list, with, per extreme,
/// whether they matter to it (`_mv_m<slot>`) and its stored flag (`_mv_o<slot>`). Most rows of a
/// large group are past its lists and stop here.
fn mattering(keys: &[String], kept: &[(&AggFn, &Kept)]) -> Cte {
    let mut items = keys_of("_mv_r", keys);
    let mut args: Vec<String> = Vec::new();
    for (f, _) in kept {
        if !args.contains(&arg(f)) {
            items.push(Item::Expr(ir::col("_mv_r", arg(f)), None));
            args.push(arg(f));
        }
    }
    items.push(Item::Expr(ir::col("_mv_r", "_mv_mult"), None));
    let mut any = Vec::new();
    for (f, kept) in kept {
        let m = matters(f, kept);
        any.push(m.clone());
        items.push(Item::named(m, format!("_mv_m{}", f.slot)));
        items.push(Item::named(
            ir::col("_mv_st", o(f.slot)),
            format!("_mv_o{}", f.slot),
        ));
    }
    let from = cte_ref("_mv_raw".into(), "_mv_r").join(
        JoinKind::Left,
        cte_ref("_mv_st".into(), "_mv_st"),
        ir::same_cols("_mv_st", "_mv_r", keys),
    );
    Cte {
        name: "_mv_rk".into(),
        query: Query::select(select(items, from, vec![ir::any(any)], GroupBy::None)),
        materialized: true,
    }
}

/// `_mv_g`: the groups of those rows with, per extreme, whether the change rewrites its list
/// (`_mv_r<slot>`) and the stored flag (`_mv_o<slot>`). HAVING: an ungrouped aggregate has a
/// group only when some row matters.
fn groups(keys: &[String], kept: &[(&AggFn, &Kept)]) -> Cte {
    let mut items = keys_of("_mv_r", keys);
    let any = |col: String| {
        let any = ir::call("bool_or", vec![ir::col("_mv_r", col)]);
        ir::call("coalesce", vec![any, Expr::Bool(false)])
    };
    for (f, _) in kept {
        let slot = f.slot;
        items.push(Item::named(
            any(format!("_mv_m{slot}")),
            format!("_mv_r{slot}"),
        ));
        items.push(Item::named(
            any(format!("_mv_o{slot}")),
            format!("_mv_o{slot}"),
        ));
    }
    let mut s = select(
        items,
        cte_ref("_mv_rk".into(), "_mv_r"),
        Vec::new(),
        group_by("_mv_r", keys, Vec::new()),
    );
    s.having = vec![Expr::CountStar.bin(Op::Gt, Expr::Int(0))];
    Cte {
        name: "_mv_g".into(),
        query: Query::select(s),
        materialized: true,
    }
}

/// `CASE _mv_slot WHEN 0 THEN e0 WHEN 1 THEN e1 … END` over the extremes, `_mv_slot` being
/// the position of an extreme in `kept`.
fn per_slot(kept: &[(&AggFn, &Kept)], e: impl Fn(&AggFn) -> Expr) -> Expr {
    let whens = kept
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (ir::col("_mv_x", "_mv_slot").eq(Expr::Int(i as i64)), e(f)))
        .collect();
    Expr::Case {
        whens,
        otherwise: Box::new(Expr::Null),
    }
}

/// `… , range(n) AS _mv_x(_mv_slot)`: each row once per extreme.
fn once_per_slot(from: From, kept: &[(&AggFn, &Kept)]) -> From {
    from.cross(From::Call {
        name: "range",
        args: vec![Expr::Int(kept.len() as i64)],
        alias: Some(("_mv_x".into(), vec!["_mv_slot".into()])),
    })
}

/// The rows to net per group and value, one value column `_mv_v<slot>` per extreme (NULL in
/// the others): the change rows that matter to the extreme's list, and the values of the lists
/// the change rewrites. Each part is one branch whatever the number of extremes.
fn to_net(keys: &[String], kept: &[(&AggFn, &Kept)]) -> Query {
    let value_cols = |value: &dyn Fn(&AggFn) -> Expr| -> Vec<Item> {
        let mut items = keys_of("_mv_u", keys);
        for (i, (f, _)) in kept.iter().enumerate() {
            let mine = ir::col("_mv_x", "_mv_slot").eq(Expr::Int(i as i64));
            items.push(Item::named(
                ir::case(mine, value(f), Expr::Null),
                format!("_mv_v{}", f.slot),
            ));
        }
        items
    };
    let mut changed = value_cols(&|f| ir::col("_mv_u", arg(f)));
    changed.push(Item::named(ir::col("_mv_u", "_mv_mult"), "_mv_n"));
    let only = per_slot(kept, |f| ir::col("_mv_u", format!("_mv_m{}", f.slot)));
    let changed = Select::new(
        changed,
        vec![once_per_slot(cte_ref("_mv_rk".into(), "_mv_u"), kept)],
    )
    .filtered([only]);
    // The lists rewritten, unnested side by side (DuckDB pads the shorter with NULL).
    let mut lists = keys_of("_mv_s", keys);
    for (f, _) in kept {
        let list = ir::case(
            ir::col("_mv_g", format!("_mv_r{}", f.slot)),
            ir::col("_mv_s", k(f.slot)),
            Expr::Null,
        );
        lists.push(Item::named(
            ir::call("unnest", vec![list]),
            format!("_mv_l{}", f.slot),
        ));
    }
    let rewritten = cte_ref("_mv_st".into(), "_mv_s").join(
        JoinKind::Inner,
        cte_ref("_mv_g".into(), "_mv_g"),
        ir::same_cols("_mv_s", "_mv_g", keys),
    );
    let lists = From::query(Query::select(Select::new(lists, vec![rewritten])), "_mv_u");
    let mut listed = value_cols(&|f| ir::col("_mv_u", format!("_mv_l{}", f.slot)));
    listed.push(Item::named(Expr::Int(1), "_mv_n"));
    let present = per_slot(kept, |f| {
        ir::col("_mv_u", format!("_mv_l{}", f.slot)).is_not_null()
    });
    let listed = Select::new(listed, vec![once_per_slot(lists, kept)]).filtered([present]);
    Query::union_all(vec![Query::select(changed), Query::select(listed)])
}

/// `_mv_c`: per group, each rewritten list (`_mv_k<slot>`) and whether the cut dropped values
/// (`_mv_more<slot>`).
fn cut(keys: &[String], kept: &[(&AggFn, &Kept)]) -> Cte {
    let values: Vec<Expr> = kept
        .iter()
        .map(|(f, _)| ir::col("_mv_u", format!("_mv_v{}", f.slot)))
        .collect();
    let net = || ir::call("sum", vec![ir::col("_mv_u", "_mv_n")]);
    let mut items = keys_of("_mv_u", keys);
    items.extend(values.iter().map(|v| Item::Expr(v.clone(), None)));
    items.push(Item::named(net(), "_mv_n"));
    let mut counted = select(
        items,
        From::query(to_net(keys, kept), "_mv_u"),
        Vec::new(),
        group_by("_mv_u", keys, values),
    );
    counted.having = vec![net().bin(Op::Gt, Expr::Int(0))];
    let copies = ir::call(
        "least",
        vec![ir::col("_mv_e", "_mv_n"), Expr::Int(KEPT + 1)],
    );
    let mut items = vec![Item::StarOf("_mv_e".into())];
    items.push(Item::Expr(
        ir::call("unnest", vec![ir::call("range", vec![copies.big_int()])]),
        None,
    ));
    let repeated = Select::new(items, vec![From::query(Query::select(counted), "_mv_e")]);
    let mut items = keys_of("_mv_y", keys);
    for (f, kept) in kept {
        // `min(x, n)` / `max(x, n)`: the group's first n values in order, NULLs left out.
        let v = ir::col("_mv_y", format!("_mv_v{}", f.slot));
        items.push(Item::named(
            ir::call(kept.function, vec![v.clone(), Expr::Int(KEPT)]),
            format!("_mv_k{}", f.slot),
        ));
        items.push(Item::named(
            ir::call("count", vec![v]).bin(Op::Gt, Expr::Int(KEPT)),
            format!("_mv_more{}", f.slot),
        ));
    }
    let s = select(
        items,
        From::query(Query::select(repeated), "_mv_y"),
        Vec::new(),
        group_by("_mv_y", keys, Vec::new()),
    );
    Cte {
        name: "_mv_c".into(),
        query: Query::select(s),
        materialized: false,
    }
}

/// Adds each kept extreme's list, flag, and whether the change rewrites them to the change per
/// group `joined` (over the change rows `_mv_raw`).
pub(super) fn add_lists(storage: &str, a: &Aggregate, joined: &mut Joined) {
    let keys = group_cols(a);
    let kept = kept(a);
    if kept.is_empty() {
        return;
    }
    joined.ctes.push(stored(storage, &keys, &kept));
    joined.ctes.push(mattering(&keys, &kept));
    joined.ctes.push(groups(&keys, &kept));
    joined.ctes.push(cut(&keys, &kept));
    for (f, _) in &kept {
        let slot = f.slot;
        joined.cols.push(Item::named(
            ir::col("_mv_c", format!("_mv_k{slot}")),
            k(slot),
        ));
        let more = ir::call(
            "coalesce",
            vec![
                ir::col("_mv_c", format!("_mv_more{slot}")),
                Expr::Bool(false),
            ],
        );
        joined.cols.push(Item::named(
            ir::col("_mv_g", format!("_mv_o{slot}")).or(more),
            o(slot),
        ));
        joined.cols.push(Item::named(
            ir::call(
                "coalesce",
                vec![ir::col("_mv_g", format!("_mv_r{slot}")), Expr::Bool(false)],
            ),
            r(slot),
        ));
    }
    joined.join("_mv_g", &keys);
    joined.join("_mv_c", &keys);
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
