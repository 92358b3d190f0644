//! The flips of one changed test, counted per join key: when the only changed test stands
//! alone, reads one table or subquery, and its filter is equalities between the two sides
//! plus conditions on its own side, a row's match count depends only on its key. The change
//! is grouped by key (a few rows), the test's relation is counted for those keys only, and the
//! result is joined to the block's one item by key (see `keyed`).

use super::super::{fresh, item_cur, Term};
use super::{flipped, holds, Tests};
use crate::ir::Expr;
use crate::plan::{Item, ItemFrom};
use crate::strategy::keyed::{self, side};

/// The term of the rows whose test flips, or None when the shape is not keyed.
pub(super) fn term(tests: &Tests, items: &[Item], moved: &[usize], conds: &[Expr]) -> Option<Term> {
    let ([i], [it]) = (moved, items) else {
        return None;
    };
    let e = tests.exists[*i];
    let [r] = e.items.as_slice() else {
        return None;
    };
    let trees = matches!(it.from, ItemFrom::Tree(_)) || matches!(r.from, ItemFrom::Tree(_));
    if trees || *i >= tests.alone {
        return None;
    }
    let sources = tests.sources;
    let keys = keyed::split(e.filter.ast(), &side(sources, it), &side(sources, r), true)?;
    let cur = item_cur(sources, it);
    let k = fresh(&format!("{i}|{}|{cur}", e.filter));
    let j = keyed::join_changed(&keys, cur, item_cur(sources, r), &tests.right[*i], k);
    let now = holds(e, j.now.clone());
    let before = holds(e, j.now - j.delta);
    let (flip, sign) = flipped(now, before);
    let mut conds = conds.to_vec();
    conds.push(flip);
    Some(Term {
        from: vec![j.from],
        conds,
        mult: vec![sign],
    })
}
