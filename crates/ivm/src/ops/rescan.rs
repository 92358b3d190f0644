//! The change of an aggregate read as a relation whose state cannot be taken back — a MIN or
//! MAX, whose value before a deleted extreme only the group's other rows know. For each group
//! the input's change touches: the group's row now (+1), aggregated from the current input, and
//! its row before (−1), aggregated from the input as it was. The input before is, for the
//! touched groups only, the current rows and the change's rows with the opposite sign,
//! consolidated: `R = R' − ΔR`, each row as often as its net multiplicity.
//!
//! Both rows are recomputed, so the row taken back is exactly the one added when it was
//! current; untouched groups are not read beyond the join that finds the touched ones.

use super::sub_agg::{agg_state_over, group_cols, sub_agg_sql};
use super::{rel_cur, rel_delta};
use crate::ir::{self, Cte, Expr, From, Item, Name, Op, Query, Select};
use crate::plan::{rel_names, Aggregate, Source, SubAgg};

/// A CTE of the change under an alias.
fn named(cte: &str, alias: &str) -> From {
    From::table(Name(vec![cte.to_string()]), alias)
}

/// Whether the sub-aggregate's change needs the group's rows before (see the module).
pub(super) fn needs_rescan(a: &Aggregate) -> bool {
    a.state_fns().any(|f| !crate::agg::of(f).invertible())
}

/// The sub-aggregate's change: rows now (+1) and before (−1) of the touched groups.
pub(super) fn delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<Query> {
    let a = &sa.agg;
    let input = a.input_rel();
    let d = rel_delta(sources, &input, changed)?;
    let keys = group_cols(a);
    let names = rel_names(&input);
    let cols = || names.iter().map(|c| Item::Expr(ir::bare(c.clone()), None));
    // Which groups, and the old rows: the change is read twice, so it is computed once.
    let mut ctes = vec![Cte {
        name: "_mv_rd".into(),
        query: d,
        materialized: true,
    }];
    let mut touched = Vec::new();
    if !keys.is_empty() {
        let mut distinct = Select::new(
            keys.iter()
                .map(|k| Item::Expr(ir::bare(k.clone()), None))
                .collect(),
            vec![named("_mv_rd", "_mv_rd")],
        );
        distinct.distinct = true;
        ctes.push(Cte {
            name: "_mv_dd".into(),
            query: Query::select(distinct),
            materialized: false,
        });
        let any = Select::new(
            vec![Item::Expr(Expr::Int(1), None)],
            vec![named("_mv_dd", "_mv_w")],
        )
        .filtered([ir::same_cols("_mv_i", "_mv_w", &keys)]);
        touched.push(ir::exists(Query::select(any)));
    }
    let cur = rel_cur(sources, &input);
    let now = agg_state_over(a, cur.clone(), touched.clone());
    let current = Select::new(
        cols()
            .chain([Item::named(Expr::Int(1).big_int(), "_mv_mult")])
            .collect(),
        vec![From::query(cur, "_mv_i")],
    )
    .filtered(touched);
    let before = agg_state_over(a, old_rows(names, current), Vec::new());
    let state = Query::With {
        ctes,
        body: Box::new(Query::union_all(vec![
            Query::select(Select::new(
                vec![Item::Star, Item::named(Expr::Int(1).big_int(), "_mv_mult")],
                vec![From::query(now, "_mv_n")],
            )),
            Query::select(Select::new(
                vec![Item::Star, Item::Expr(Expr::Int(-1).big_int(), None)],
                vec![From::query(before, "_mv_b")],
            )),
        ])),
    };
    Some(sub_agg_sql(sa, state, true))
}

/// The touched groups' rows as they were: the current rows (`current`, each with `_mv_mult` 1)
/// with the change taken back, each row as often as its net count.
fn old_rows(names: &[String], current: Select) -> Query {
    let cols = || names.iter().map(|c| Item::Expr(ir::bare(c.clone()), None));
    let col_exprs = || {
        names
            .iter()
            .map(|c| ir::bare(c.clone()))
            .collect::<Vec<_>>()
    };
    let undone = Select::new(
        cols()
            .chain([Item::Expr(ir::bare("_mv_mult").neg(), None)])
            .collect(),
        vec![named("_mv_rd", "_mv_rd")],
    );
    let both = Query::union_all(vec![Query::select(current), Query::select(undone)]);
    let net = || ir::call("sum", vec![ir::bare("_mv_mult")]);
    let mut netted = Select::new(
        cols()
            .chain([Item::named(net().big_int(), "_mv_m")])
            .collect(),
        vec![From::query(both, "_mv_u")],
    );
    netted.group_by = ir::GroupBy::Exprs(col_exprs());
    netted.having = vec![net().bin(Op::Gt, Expr::Int(0))];
    // Each old row as often as its net count.
    let repeat = From::Call {
        name: "range",
        args: vec![ir::col("_mv_o", "_mv_m")],
        alias: None,
    };
    Query::select(Select::new(
        cols().collect(),
        vec![From::query(Query::select(netted), "_mv_o"), repeat],
    ))
}
