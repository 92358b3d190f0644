//! The flips of one changed test, counted per join key: when the only changed test stands
//! alone, reads one table or subquery, and its filter is equalities between it and one item of
//! the block plus conditions on its own side, a row's match count depends only on that item's
//! key. The change is grouped by key (a few rows), the test's relation is counted for those
//! keys only, and the result is joined to that item by key (see `keyed`); the block's other
//! items join as they are, so the term starts from the changed keys.

use super::super::{fresh, item_cur, items_cur, Term};
use super::{flipped, holds, Tests};
use crate::ir::Expr;
use crate::plan::Item;
use crate::strategy::keyed;

/// The term of the rows whose test flips, or None when the shape is not keyed.
pub(super) fn term(tests: &Tests, items: &[Item], moved: &[usize], conds: &[Expr]) -> Option<Term> {
    let [i] = moved else {
        return None;
    };
    let e = tests.exists[*i];
    if *i >= tests.alone {
        return None;
    }
    let (at, keys) = tests.keyed(*i)?;
    let sources = tests.sources;
    let it = &items[at];
    let cur = item_cur(sources, it);
    let k = fresh(&format!("{i}|{}|{cur}", e.filter));
    let right = &tests.right[*i];
    // An aggregate counted for a few keys groups only their input rows.
    let counted = |wanted| {
        let agg = tests.agg_for_keys(*i, &keys, wanted);
        agg.unwrap_or_else(|| item_cur(sources, &e.items[0]))
    };
    let j = keyed::join_changed(&keys, cur, counted, right, k);
    let now = holds(e, j.now.clone());
    let before = holds(e, j.now - j.delta);
    let (flip, sign) = flipped(now, before);
    let mut from = items_cur(sources, items);
    from[at] = j.from;
    let mut conds = conds.to_vec();
    conds.push(flip);
    Some(Term {
        from,
        conds,
        mult: vec![sign],
    })
}
