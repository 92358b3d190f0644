//! The operators that maintain a relation, and the one dispatcher between them.
//!
//! A relation of a plan (`plan::Rel`) and each FROM item of a block (`plan::ItemFrom`) is
//! rendered twice: its rows now (`*_cur`) and its change as signed rows (`*_delta`, a UNION ALL
//! of [`Term`]s with a multiplicity each). Each kind has its own module stating its delta rule;
//! operators reach each other's relations only through the functions here.
//!
//! - `project`: a select-project block over the product of its items (σπ);
//! - `join`: the inner product of a block's items;
//! - `nested`: the same under a filter, with the sum of its terms factored;
//! - `outer`: join trees with LEFT/RIGHT/FULL joins;
//! - `semi`: EXISTS / IN / SEMI / ANTI tests on a block's rows;
//! - `union`: UNION ALL;
//! - `sub_agg`: an aggregate read as a relation (a derived table, a CTE, an IN/EXISTS set);
//! - `rescan`: the same for aggregates whose state cannot be taken back (MIN/MAX);
//! - `sub_keys`: such an aggregate, read as it is now, grouped only for the keys a change meets.
//!
//! How the counts of outer and semi joins are found is a strategy (`crate::strategy`).

mod join;
mod nested;
mod outer;
mod project;
mod rescan;
mod semi;
mod sub_agg;
mod sub_keys;
mod term;
mod union;

pub use outer::{Kind, Tree};
pub use project::block_cur_term;
pub use semi::{Exists, Guard};
pub use sub_agg::{agg_delta_from, agg_state_from, consolidate, group_cols, keys_of};
pub use term::{delta_sum_query, fresh, Term};

use crate::ir::{self, Expr, From, Name, Query};
use crate::plan::{Item, ItemFrom, Rel, Source};

/// The relation's current rows.
pub fn rel_cur(sources: &[Source], rel: &Rel) -> Query {
    match rel {
        Rel::Block(b) => project::cur(sources, b),
        Rel::Agg(sa) => sub_agg::cur(sources, sa),
        Rel::Union(parts) => union::cur(sources, parts),
    }
}

/// The relation's change as signed rows (its columns plus `_mv_mult`), or None when it provably
/// has none because every source it reads is unchanged.
pub fn rel_delta(sources: &[Source], rel: &Rel, changed: &[bool]) -> Option<Query> {
    match rel {
        Rel::Block(b) => project::delta(sources, b, changed),
        Rel::Agg(sa) => sub_agg::delta(sources, sa, changed),
        Rel::Union(parts) => union::delta(sources, parts, changed),
    }
}

/// A FROM item as it is now.
pub fn item_cur(sources: &[Source], item: &Item) -> From {
    match &item.from {
        ItemFrom::Source(i) => From::table(Name::of(&sources[*i].relation), item.name()),
        ItemFrom::Sub(rel) => From::query(rel_cur(sources, rel), item.name()),
        ItemFrom::Tree(t) => outer::tree_cur(sources, t),
    }
}

/// The multiplicity column of a change read under `item`'s alias.
fn mult_of(item: &Item) -> Expr {
    ir::col(item.name(), "_mv_mult")
}

/// A FROM item's change as terms (empty when nothing it reads changed).
pub fn item_delta(sources: &[Source], item: &Item, changed: &[bool]) -> Vec<Term> {
    match &item.from {
        ItemFrom::Source(i) => match (&sources[*i].delta, changed[*i]) {
            (Some(d), true) => vec![Term {
                from: vec![From::table(Name::of(d), item.name())],
                conds: Vec::new(),
                mult: vec![mult_of(item)],
            }],
            _ => Vec::new(),
        },
        ItemFrom::Sub(r) => match rel_delta(sources, r, changed) {
            Some(d) => vec![Term {
                from: vec![From::query(shared_if_agg(r, d), item.name())],
                conds: Vec::new(),
                mult: vec![mult_of(item)],
            }],
            None => Vec::new(),
        },
        ItemFrom::Tree(t) => outer::tree_delta(sources, t, changed),
    }
}

/// An aggregate's change is computed once, before the join that reads it (see
/// `ir::shared`): read in place, DuckDB joins it last.
fn shared_if_agg(rel: &Rel, delta: Query) -> Query {
    match rel {
        Rel::Agg(_) => Query::shared(delta),
        _ => delta,
    }
}

/// The items as they are now, comma-joined.
pub fn items_cur(sources: &[Source], items: &[Item]) -> Vec<From> {
    items.iter().map(|it| item_cur(sources, it)).collect()
}

/// The change of the inner product of `items` (see `join`).
pub fn items_delta(sources: &[Source], items: &[Item], changed: &[bool]) -> Vec<Term> {
    join::delta(sources, items, changed)
}

/// The change of a block's items under its filter and existence tests (see `semi`).
pub use semi::block_terms;
