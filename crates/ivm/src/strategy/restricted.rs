//! Restricted counts: a strategy for the correlated match counts of outer and semi joins.
//! DuckDB decorrelates `LATERAL (SELECT count(*) FROM o WHERE on)` into a GROUP BY over all of
//! `o`; when the rows asking are a few candidates, the count is taken over the rows of `o`
//! that match some candidate instead, which is all a candidate's count can see.

use crate::ir::{user, Expr, From, Item as SelItem, JoinKind, Query, Select};
use crate::plan::{Item, ItemFrom, Source};
use crate::user_expr::UserExpr;

/// `SELECT count(*) AS n FROM o WHERE on` (correlated to a row of the preserved side), reading
/// only the rows of `o` that satisfy `on` with some row of `candidates` (a FROM item under the
/// preserved side's alias, so `on` binds to it inside the restriction). Every row the count can
/// see for a candidate is among them, so the count is unchanged for candidates.
pub fn restricted_count(o_cur: From, o_alias: &str, candidates: From, on: &UserExpr) -> Query {
    let on = user(on.ast());
    let matching = Select::new(
        vec![SelItem::StarOf(o_alias.to_string())],
        vec![o_cur.join(JoinKind::Semi, candidates, on.clone())],
    );
    Query::select(
        Select::new(
            vec![SelItem::named(Expr::CountStar, "n")],
            vec![From::query(Query::select(matching), o_alias)],
        )
        .filtered([on]),
    )
}

/// Whether the table `l` (under `alias`) and the item `r` can share the restriction's one
/// scope without a name binding differently: distinct aliases, and no column name in common.
/// (Inside a subquery, its own table came first.)
pub fn same_scope_safe(sources: &[Source], alias: &str, l: usize, r: &Item) -> bool {
    let ItemFrom::Source(ri) = r.from else {
        return false;
    };
    !r.name().eq_ignore_ascii_case(alias)
        && !sources[l].columns.iter().any(|c| {
            sources[ri]
                .columns
                .iter()
                .any(|d| d.eq_ignore_ascii_case(c))
        })
}
