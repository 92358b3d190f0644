//! Bag and DISTINCT views: storage (c1..cn, _mv_count), one row per distinct row with its
//! multiplicity. A change is consolidated per row (its net count), merged into the counts, and
//! rows whose count reaches 0 are deleted; a DISTINCT view shows each row with a count > 0 once.
//! Storage and change rows end with the row's key `_mv_h` (see `row_key`) where the plan has
//! one; merges find rows by it.

use super::aggregate::named;
use super::row_key::{row_key, KEY};
use super::{positional, rel_cur, rel_delta, storage, work, Plan, Rel};
use crate::ir::{self, Action, Expr, From, GroupBy, Item, Name, Op, Query, Select, Stmt, When};

/// `CAST(rel.c1 AS t1) AS c1, …`: the rows' columns at the view's types.
fn cast_cols(types: &[String], rel: &'static str) -> Vec<Item> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let c = format!("c{}", i + 1);
            Item::named(ir::col(rel, c.clone()).cast(t), c)
        })
        .collect()
}

/// `GROUP BY 1, 2, …`: every column of the row.
fn by_position(n: usize) -> GroupBy {
    GroupBy::Exprs((1..=n as i64).map(Expr::Int).collect())
}

/// Rows and their counts of the current state (used to populate). Rows that never repeat
/// (`Plan::unique_rows`) each count 1 without grouping.
pub fn bag_state_sql(plan: &Plan, rel: &Rel) -> Query {
    let mut cols = cast_cols(&plan.types, "_mv_i");
    let count = match plan.unique_rows {
        true => Expr::Int(1),
        false => Expr::CountStar,
    };
    cols.push(Item::named(count.big_int(), "_mv_count"));
    let mut s = Select::new(
        cols,
        vec![From::query(rel_cur(&plan.sources, rel), "_mv_i")],
    );
    if !plan.unique_rows {
        s.group_by = by_position(plan.types.len());
    }
    keyed(plan, Query::select(s))
}

/// `rows` (c1..cn, _mv_count) with the row's key after them, when the plan keys its rows.
fn keyed(plan: &Plan, rows: Query) -> Query {
    if !plan.row_key {
        return rows;
    }
    let cols = positional(plan.columns.len());
    let items = vec![
        Item::StarOf("_mv_k".into()),
        Item::named(row_key(Some("_mv_k"), &cols, &plan.types), KEY),
    ];
    Query::select(Select::new(items, vec![From::query(rows, "_mv_k")]))
}

/// How storage rows `_mv_s` and change rows `_mv_d` are matched: by key, or by every column.
fn same_row(plan: &Plan) -> Expr {
    if plan.row_key {
        return ir::col("_mv_s", KEY).eq(ir::col("_mv_d", KEY));
    }
    ir::same_cols("_mv_s", "_mv_d", &positional(plan.columns.len()))
}

/// The consolidated change: one row per distinct changed row with its net count, zeros dropped.
pub fn bag_delta_sql(plan: &Plan, rel: &Rel, changed: &[bool]) -> Option<Query> {
    let d = rel_delta(&plan.sources, rel, changed)?;
    let net = || ir::call("sum", vec![ir::col("_mv_d", "_mv_mult")]);
    let mut cols = cast_cols(&plan.types, "_mv_d");
    cols.push(Item::named(net().big_int(), "_mv_count"));
    let mut s = Select::new(cols, vec![From::query(d, "_mv_d")]);
    s.group_by = by_position(plan.types.len());
    s.having = vec![net().bin(Op::NotEq, Expr::Int(0))];
    Some(keyed(plan, Query::select(s)))
}

/// `_mv_s._mv_count + _mv_d._mv_count`: a row's count after the change.
fn count_after() -> Expr {
    ir::col("_mv_s", "_mv_count") + ir::col("_mv_d", "_mv_count")
}

/// Applies the consolidated change `source` (the work table, or the change itself, aliased
/// `_mv_d`) to the storage, keyed NULL-safely on the row.
pub fn bag_merge_sql(plan: &Plan, source: From) -> Stmt {
    let cols = positional(plan.columns.len());
    let mut values: Vec<Expr> = cols.iter().map(|c| ir::col("_mv_d", c.clone())).collect();
    values.push(ir::col("_mv_d", "_mv_count"));
    if plan.row_key {
        values.push(ir::col("_mv_d", KEY));
    }
    Stmt::Merge {
        into: Name::of(&storage(plan.id)),
        alias: "_mv_s".into(),
        using: source,
        on: same_row(plan),
        whens: vec![
            When {
                matched: true,
                cond: Some(count_after().bin(Op::LtEq, Expr::Int(0))),
                action: Action::Delete,
            },
            When {
                matched: true,
                cond: None,
                action: Action::Update(vec![("_mv_count".into(), count_after())]),
            },
            When {
                matched: false,
                cond: Some(ir::col("_mv_d", "_mv_count").bin(Op::Gt, Expr::Int(0))),
                action: Action::Insert(values),
            },
        ],
    }
}

/// The user-visible change of a DISTINCT view, computed from the work table before it is
/// applied: +1 for rows that appear, −1 for rows whose count drops to zero.
pub fn distinct_transitions_sql(plan: &Plan) -> Query {
    let cols = positional(plan.columns.len());
    let mut sel: Vec<Item> = cols
        .iter()
        .map(|c| Item::Expr(ir::col("_mv_d", c.clone()), None))
        .collect();
    let stored = ir::col("_mv_s", "_mv_count").is_null();
    sel.push(Item::Expr(
        ir::case(stored.clone(), Expr::Int(1), Expr::Int(-1)),
        None,
    ));
    let from = named(&work(plan.id), "_mv_d").join(
        ir::JoinKind::Left,
        named(&storage(plan.id), "_mv_s"),
        same_row(plan),
    );
    let appears = stored.and(ir::col("_mv_d", "_mv_count").bin(Op::Gt, Expr::Int(0)));
    let vanishes = count_after().bin(Op::LtEq, Expr::Int(0));
    Query::select(Select::new(sel, vec![from]).filtered([appears.or(vanishes)]))
}
