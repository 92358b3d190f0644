//! A select-project block, `SELECT select FROM items WHERE filter AND tests…`: σ and π over the
//! product of its items. Both are linear, so the block's change is its select list over the
//! change of the filtered product, each row keeping its multiplicity:
//! `Δ π σ(R) = π σ(ΔR)`, with ΔR from `join` and the existence tests from `semi`.

use super::{block_terms, items_cur, semi, Term};
use crate::ir::{user, Expr, Item as SelItem, Query};
use crate::plan::{Block, Source};

/// The FROM/WHERE of a block over current data.
pub fn block_cur_term(sources: &[Source], b: &Block) -> Term {
    let mut t = Term::cur(items_cur(sources, &b.items));
    t.conds.extend(b.filter.iter().map(|f| user(f.ast())));
    t.conds
        .extend(b.exists.iter().map(|e| semi::cond_cur(sources, e)));
    t.conds
        .extend(b.guards.iter().map(|g| semi::guard_cur(sources, g)));
    t
}

/// The block's select list over the term `t`, with the row's multiplicity when `mult`.
fn select(b: &Block, t: &Term, mult: bool) -> Query {
    let mut cols: Vec<SelItem> = b
        .select
        .iter()
        .zip(&b.names)
        .map(|(e, n)| SelItem::named(user(e.ast()), n.clone()))
        .collect();
    if cols.is_empty() {
        // `SELECT count(*) FROM t` needs no column of t, but SQL needs one.
        cols.push(SelItem::named(Expr::Int(1), "_mv_one"));
    }
    if mult {
        cols.push(SelItem::named(t.mult(), "_mv_mult"));
    }
    Query::select(t.select(cols))
}

/// The block's rows now.
pub(super) fn cur(sources: &[Source], b: &Block) -> Query {
    select(b, &block_cur_term(sources, b), false)
}

/// The block's change, or None when nothing it reads changed.
pub(super) fn delta(sources: &[Source], b: &Block, changed: &[bool]) -> Option<Query> {
    let terms = block_terms(
        sources,
        &b.items,
        b.filter.as_ref(),
        &b.exists,
        &b.guards,
        changed,
    );
    let parts: Vec<Query> = terms.iter().map(|t| select(b, t, true)).collect();
    (!parts.is_empty()).then(|| Query::union_all(parts))
}
