//! Restricted counts: a strategy for the correlated match counts of outer and semi joins.
//! DuckDB decorrelates `LATERAL (SELECT count(*) FROM o WHERE on)` into a GROUP BY over all of
//! `o`; when the rows asking are a few candidates, the count is taken over the rows of `o`
//! that match some candidate instead, which is all a candidate's count can see.

use super::plan::{Item, ItemFrom, Source};
use super::user_expr::UserExpr;

/// `SELECT count(*) AS n FROM o WHERE on` (correlated to a row of the preserved side), reading
/// only the rows of `o` that satisfy `on` with some row of `candidates` (a FROM item under the
/// preserved side's alias, so `on` binds to it inside the restriction). Every row the count can
/// see for a candidate is among them, so the count is unchanged for candidates.
pub fn restricted_count(o_cur: &str, o_alias: &str, candidates: &str, on: &UserExpr) -> String {
    format!(
        "SELECT count(*) AS n FROM (SELECT {o_alias}.* FROM {o_cur} SEMI JOIN {candidates} ON {on}) \
         AS {o_alias} WHERE {on}"
    )
}

/// Whether the table `l` (under `alias`) and the item `r` can share the restriction's one
/// scope without a name binding differently: distinct aliases, and no column name in common.
/// (Inside a subquery, its own table came first.)
pub fn same_scope_safe(sources: &[Source], alias: &str, l: usize, r: &Item) -> bool {
    let ItemFrom::Source(ri) = r.from else {
        return false;
    };
    !r.alias.eq_ignore_ascii_case(alias)
        && !sources[l].columns.iter().any(|c| {
            sources[ri]
                .columns
                .iter()
                .any(|d| d.eq_ignore_ascii_case(c))
        })
}
