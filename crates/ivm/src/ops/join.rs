//! The inner product of a block's FROM items (comma-joined; inner-join ON predicates are part
//! of the block's filter).
//!
//! Telescoping: `Δ(A₁ × … × Aₙ) = Σᵢ A₁' × … × Aᵢ₋₁' × ΔAᵢ × Aᵢ₊₁ × … × Aₙ`, with `'` the state
//! after the change and the items after `i` at their state before it (`A = A' − ΔA`, one
//! relation: the current rows with multiplicity 1 and the change's rows with the opposite sign).
//! One term per changed item, instead of one per subset of changed items. The order of the
//! items is free; the one changed item whose old state cannot be one relation (an outer-join
//! tree or a subquery) is taken first. Two such items keep the inclusion–exclusion form over
//! post-change states: one term per non-empty subset of changed items, sign (−1)^(|S|−1).

use super::{item_cur, item_delta, mult_of, Term};
use crate::ir::{self, Expr, From, Item as SelItem, Name, Query, Select};
use crate::plan::{Item, ItemFrom, Source};

/// The change of the product of `items` as terms.
///
/// The sum telescopes in any order of the changed items; an item whose old state is not one
/// relation (a subquery, an outer-join tree) goes first, where only its new state and its change
/// are read. TPC-H Q2 (part, supplier and partsupp changed, and the grouped MIN read as a derived
/// table over two of them) runs 4 terms instead of 15.
pub(super) fn delta(sources: &[Source], items: &[Item], changed: &[bool]) -> Vec<Term> {
    let deltas: Vec<Vec<Term>> = items
        .iter()
        .map(|it| item_delta(sources, it, changed))
        .collect();
    let cur: Vec<From> = items.iter().map(|it| item_cur(sources, it)).collect();
    let mut old: Vec<Option<Term>> = vec![None; items.len()];
    let (mut order, mut stateless) = (Vec::new(), Vec::new());
    for i in (0..items.len()).filter(|&i| !deltas[i].is_empty()) {
        match item_old(sources, &items[i]) {
            Some(o) => {
                old[i] = Some(o);
                order.push(i);
            }
            None => stateless.push(i),
        }
    }
    if stateless.len() > 1 {
        return inclusion_exclusion(&deltas, &cur);
    }
    order.splice(0..0, stateless);
    let mut out = Vec::new();
    for (rank, &i) in order.iter().enumerate() {
        let choices = (0..items.len()).map(|j| match (&old[j], order[rank..].contains(&j)) {
            _ if j == i => deltas[i].clone(),
            (Some(o), true) => vec![o.clone()],
            _ => vec![Term::cur(vec![cur[j].clone()])],
        });
        out.extend(product(choices.collect()));
    }
    out
}

/// A changed item as it was before the change, as one FROM item with multiplicities; None when
/// it is not a plain source.
pub(super) fn item_old(sources: &[Source], item: &Item) -> Option<Term> {
    let ItemFrom::Source(i) = &item.from else {
        return None;
    };
    let src = &sources[*i];
    let delta = src.delta.as_ref()?;
    let cols = || read_columns(src);
    let now = cols().chain([SelItem::named(Expr::Int(1).big_int(), "_mv_mult")]);
    let undone = cols().chain([SelItem::Expr(ir::bare("_mv_mult").neg(), None)]);
    let old = Query::union_all(vec![
        Query::select(Select::new(
            now.collect(),
            vec![From::Table {
                name: Name::of(&src.relation),
                alias: None,
            }],
        )),
        Query::select(Select::new(
            undone.collect(),
            vec![From::Table {
                name: Name::of(delta),
                alias: None,
            }],
        )),
    ]);
    Some(Term {
        from: vec![From::query(old, item.name())],
        conds: Vec::new(),
        mult: vec![mult_of(item)],
    })
}

/// The columns the view reads of `src`, as select items.
pub(super) fn read_columns(src: &Source) -> impl Iterator<Item = SelItem> + '_ {
    src.columns
        .iter()
        .map(|c| SelItem::Expr(ir::bare(c.clone()), None))
}

/// Every combination of one term per position, joined.
fn product(choices: Vec<Vec<Term>>) -> Vec<Term> {
    let mut partial = vec![Term::default()];
    for options in choices {
        let mut next = Vec::new();
        for p in &partial {
            for c in &options {
                next.push(join_comma(p, c));
            }
        }
        partial = next;
    }
    partial
}

/// Inclusion–exclusion over the post-change states: one term per non-empty subset of changed
/// items and per combination of their delta terms, sign (−1)^(|S|−1) as the first factor.
fn inclusion_exclusion(deltas: &[Vec<Term>], cur: &[From]) -> Vec<Term> {
    let n = deltas.len();
    let mut out = Vec::new();
    for mask in 1u32..(1u32 << n) {
        if (0..n).any(|i| mask & (1 << i) != 0 && deltas[i].is_empty()) {
            continue;
        }
        let sign = if mask.count_ones() % 2 == 1 { 1 } else { -1 };
        let mut choices = vec![vec![Term {
            from: Vec::new(),
            conds: Vec::new(),
            mult: vec![Expr::Int(sign)],
        }]];
        for i in 0..n {
            choices.push(if mask & (1 << i) != 0 {
                deltas[i].clone()
            } else {
                vec![Term::cur(vec![cur[i].clone()])]
            });
        }
        out.extend(product(choices));
    }
    out
}

pub(super) fn join_comma(a: &Term, b: &Term) -> Term {
    let mut out = a.clone();
    out.from.extend(b.from.iter().cloned());
    out.conds.extend(b.conds.iter().cloned());
    out.mult.extend(b.mult.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terms of the view's join when every table changed.
    fn terms(q: &str, ncols: usize) -> Vec<Term> {
        let (sources, b) = crate::compile::tests::bag_block(q, ncols);
        delta(&sources, &b.items, &vec![true; sources.len()])
    }

    fn reads_sub(t: &Term) -> bool {
        t.from.iter().any(|f| matches!(f, From::Query { .. }))
    }

    /// A changed derived table after a changed table: one term each, the derived table's change
    /// first (it is read now or as its change only); two derived tables: every subset.
    #[test]
    fn a_changed_subquery_comes_first_in_the_telescoping_sum() {
        let one = terms(
            "SELECT t.k, s.m FROM t, (SELECT k, min(w) AS m FROM u GROUP BY k) s WHERE t.k = s.k",
            2,
        );
        assert_eq!(one.len(), 2, "{one:?}");
        // Δs × t as it was (two multiplicities), then s now × Δt (one).
        assert_eq!(one[0].mult.len(), 2, "{:?}", one[0]);
        assert_eq!(one[1].mult.len(), 1, "{:?}", one[1]);
        assert!(one.iter().all(reads_sub));
        let two = terms(
            "SELECT t.k, s.m, r.n FROM t, (SELECT k, min(w) AS m FROM u GROUP BY k) s, \
             (SELECT g, count(*) AS n FROM t GROUP BY g) r WHERE t.k = s.k AND r.g = t.g",
            3,
        );
        assert_eq!(two.len(), 7, "inclusion-exclusion over three changed items");
    }
}
