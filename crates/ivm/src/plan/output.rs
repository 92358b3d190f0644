//! Output: what users see, computed from the storage.

use super::{output_view, positional, Body, Plan};
use crate::ir::{self, user, Expr, From, Item, Op, Query, Select};
use crate::set_ops::SetOp;
use crate::text::ident;

/// The user-visible rows computed from `rel` (the storage, or part of it, aliased `_mv_s`).
pub fn output_sql(plan: &Plan, rel: From) -> Query {
    let positional_cols = || -> Vec<Item> {
        positional(plan.columns.len())
            .into_iter()
            .zip(&plan.columns)
            .map(|(c, n)| Item::named(ir::col("_mv_s", c), n.clone()))
            .collect()
    };
    match &plan.body {
        Body::Full { .. } | Body::Bag { distinct: true, .. } | Body::Windowed(_) => {
            Query::select(Select::new(positional_cols(), vec![rel]))
        }
        Body::Bag {
            distinct: false, ..
        } => {
            // Rows held once are read as they are: repeating every row through `range` costs
            // readers 2-3 times a plain scan, and most rows of most views are held once.
            let count = || ir::col("_mv_s", "_mv_count");
            let once = Select::new(positional_cols(), vec![rel.clone()])
                .filtered([count().bin(Op::Eq, Expr::Int(1))]);
            let repeated = Select::new(positional_cols(), vec![rel, repeat(count())])
                .filtered([count().bin(Op::Gt, Expr::Int(1))]);
            Query::union_all(vec![Query::select(once), Query::select(repeated)])
        }
        Body::Aggregate(a) => {
            // Each output cast to its column's type and named as the column.
            let cols = a
                .output
                .iter()
                .zip(plan.columns.iter().zip(&plan.types))
                .map(|(e, (n, t))| Item::named(user(e.ast()).cast(t), n.clone()))
                .collect();
            let s = Select::new(cols, vec![rel]).filtered(a.having.iter().map(|h| user(h.ast())));
            match &plan.set_op {
                Some(op) => set_op_rows(plan, op, Query::select(s)),
                None => Query::select(s),
            }
        }
    }
}

/// `range(n) AS _mv_r(_mv_n)`: beside a row, repeats it `n` times.
pub(super) fn repeat(n: Expr) -> From {
    From::Call {
        name: "range",
        args: vec![n],
        alias: Some(("_mv_r".into(), vec!["_mv_n".into()])),
    }
}

/// The rows of an EXCEPT/INTERSECT view from its counts per row (`grouped`): each group's row
/// as many times as the operation keeps it.
fn set_op_rows(plan: &Plan, op: &SetOp, grouped: Query) -> Query {
    let cols = plan
        .visible_columns()
        .iter()
        .map(|c| Item::Expr(ir::col("_mv_o", c.clone()), None))
        .collect();
    Query::select(Select::new(
        cols,
        vec![
            From::query(grouped, "_mv_o"),
            repeat(op.times("_mv_o").big_int()),
        ],
    ))
}

/// Body of the output view (`_duckmv.out_<id>`), the rows the view holds, which views
/// downstream read: the output of the whole storage, or of a top-k view its top rows.
pub fn output_view_sql(plan: &Plan) -> String {
    let all = output_sql(
        plan,
        super::aggregate::named(&super::storage(plan.id), "_mv_s"),
    );
    match (&plan.limit, &plan.order_by) {
        (Some(limit), Some(order)) => Query::select(Select {
            items: vec![Item::Star],
            from: vec![From::query(all, "_mv_o")],
            order_by: Some(order.to_ir()),
            limit: limit.limit,
            offset: limit.offset,
            ..Select::default()
        })
        .to_string(),
        _ => all.to_string(),
    }
}

/// Body of the user-facing view of a populated materialized view: the output rows, in the
/// definition's order when it has one.
pub fn user_view_sql(plan: &Plan) -> String {
    Query::select(Select {
        items: vec![Item::Star],
        from: vec![From::Table {
            name: ir::Name::of(&output_view(plan.id)),
            alias: None,
        }],
        order_by: plan.order_by.as_ref().map(|o| o.to_ir()),
        ..Select::default()
    })
    .to_string()
}

/// Body of the user-facing view while the materialized view is unpopulated: reading it fails
/// like PostgreSQL's (the server maps the message to 55000), even for `count(*)`.
pub fn unpopulated_sql(plan: &Plan, name: &str) -> String {
    let cols: Vec<String> = plan
        .visible_columns()
        .iter()
        .zip(plan.visible_types())
        .map(|(n, t)| format!("CAST(NULL AS {t}) AS {}", ident(n)))
        .collect();
    let msg = format!(
        "materialized view \"{}\" has not been populated",
        name.replace('"', "\"\"")
    );
    format!(
        "SELECT {} FROM (SELECT 1) AS _mv_u(x) WHERE error({})",
        cols.join(", "),
        crate::text::lit(&msg)
    )
}
