//! Output: what users see, computed from the storage.

use super::{output_view, positional, Body, Plan};
use crate::set_ops::SetOp;
use crate::text::ident;

/// The user-visible rows computed from `rel` (the storage, or part of it).
pub fn output_sql(plan: &Plan, rel: &str) -> String {
    let positional_cols = || -> String {
        positional(plan.columns.len())
            .iter()
            .zip(&plan.columns)
            .map(|(c, n)| format!("_mv_s.{c} AS {}", ident(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &plan.body {
        Body::Full { .. } | Body::Bag { distinct: true, .. } | Body::Windowed(_) => {
            format!("SELECT {} FROM {rel} AS _mv_s", positional_cols())
        }
        Body::Bag {
            distinct: false, ..
        } => format!(
            "SELECT {} FROM {rel} AS _mv_s, range(_mv_s._mv_count) AS _mv_r(_mv_n)",
            positional_cols()
        ),
        Body::Aggregate(a) => {
            let mut sql = format!("SELECT {} FROM {rel} AS _mv_s", a.output.join(", "));
            if let Some(h) = &a.having {
                sql.push_str(&format!(" WHERE {h}"));
            }
            match &plan.set_op {
                Some(op) => set_op_rows(plan, op, &sql),
                None => sql,
            }
        }
    }
}

/// The rows of an EXCEPT/INTERSECT view from its counts per row (`grouped`): each group's row
/// as many times as the operation keeps it.
fn set_op_rows(plan: &Plan, op: &SetOp, grouped: &str) -> String {
    let cols: Vec<String> = plan
        .visible_columns()
        .iter()
        .map(|c| format!("_mv_o.{}", ident(c)))
        .collect();
    format!(
        "SELECT {} FROM ({grouped}) AS _mv_o, range(CAST({} AS BIGINT)) AS _mv_r(_mv_n)",
        cols.join(", "),
        op.times("_mv_o")
    )
}

/// Body of the output view (`_duckmv.out_<id>`), the rows the view holds, which views
/// downstream read: the output of the whole storage, or of a top-k view its top rows.
pub fn output_view_sql(plan: &Plan) -> String {
    let all = output_sql(plan, &super::storage(plan.id));
    match (&plan.limit, &plan.order_by) {
        (Some(limit), Some(order)) => format!("SELECT * FROM ({all}) AS _mv_o {order} {limit}"),
        _ => all,
    }
}

/// Body of the user-facing view of a populated materialized view: the output rows, in the
/// definition's order when it has one.
pub fn user_view_sql(plan: &Plan) -> String {
    let out = output_view(plan.id);
    match &plan.order_by {
        Some(order) => format!("SELECT * FROM {out} {order}"),
        None => format!("SELECT * FROM {out}"),
    }
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
