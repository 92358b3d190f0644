//! Terms of a delta query. A term is one SELECT's FROM clause, its extra conditions and its
//! multiplicity as a product of factors; a relation's change is a UNION ALL of terms. Keeping the
//! user's aliases visible in every term lets the user's select list, WHERE and ON predicates be
//! reused unchanged over delta tables, outer-join padding and semi-join transitions alike.

use super::ir::{self, user, Expr, From, Item as SelItem, Name, Query, Select};
use super::outer;
use super::plan::{rel_cur, rel_delta, Item, ItemFrom, Source};
use super::user_expr::UserExpr;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Term {
    /// The FROM items, comma-joined (inside a join tree, one joined item).
    pub from: Vec<From>,
    /// Conditions the term's rows must meet.
    pub conds: Vec<Expr>,
    /// Factors of the row's multiplicity (empty: 1).
    pub mult: Vec<Expr>,
}

impl Term {
    pub fn cur(from: Vec<From>) -> Term {
        Term {
            from,
            conds: Vec::new(),
            mult: Vec::new(),
        }
    }

    /// `CAST(f1 AS BIGINT) * f2 * ...`: the first factor fixes the type, so sums never overflow
    /// the narrower types of user columns.
    pub fn mult(&self) -> Expr {
        let mut factors = self.mult.iter().cloned();
        let first = factors.next().unwrap_or(Expr::Int(1)).big_int();
        factors.fold(first, |acc, f| acc * f)
    }

    /// `SELECT items FROM from WHERE conds`.
    pub fn select(&self, items: Vec<SelItem>) -> Select {
        Select::new(items, self.from.clone()).filtered(self.conds.iter().cloned())
    }

    /// The FROM items as one (cross-joined when there are several): an operand of a join.
    pub fn joined(&self) -> From {
        let mut items = self.from.iter().cloned();
        let first = items.next().expect("a term reads some relation");
        items.fold(first, From::cross)
    }
}

/// A number for internal aliases (`_mv_n7`), derived from the text it names so that the same
/// view renders the same SQL every time (the server keeps refresh statements prepared).
pub fn fresh(seed: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    seed.hash(&mut h);
    h.finish() % 1_000_000_007
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
                from: vec![From::query(d, item.name())],
                conds: Vec::new(),
                mult: vec![mult_of(item)],
            }],
            None => Vec::new(),
        },
        ItemFrom::Tree(t) => outer::tree_delta(sources, t, changed),
    }
}

/// The items as they are now, comma-joined.
pub fn items_cur(sources: &[Source], items: &[Item]) -> Vec<From> {
    items.iter().map(|it| item_cur(sources, it)).collect()
}

/// The change of the (inner, comma-joined) product of items.
///
/// Telescoping: `Δ(A₁ × … × Aₙ) = Σᵢ A₁' × … × Aᵢ₋₁' × ΔAᵢ × Aᵢ₊₁ × … × Aₙ`, with `'` the state
/// after the change and the items after `i` at their state before it (`A = A' − ΔA`, one
/// relation: the current rows with multiplicity 1 and the change's rows with the opposite sign).
/// One term per changed item, instead of one per subset of changed items. An item whose old
/// state cannot be one relation (an outer-join tree or a subquery after the first changed item)
/// keeps the inclusion–exclusion form over post-change states.
pub fn items_delta(sources: &[Source], items: &[Item], changed: &[bool]) -> Vec<Term> {
    let deltas: Vec<Vec<Term>> = items
        .iter()
        .map(|it| item_delta(sources, it, changed))
        .collect();
    let cur: Vec<From> = items.iter().map(|it| item_cur(sources, it)).collect();
    let moved: Vec<usize> = (0..items.len())
        .filter(|&i| !deltas[i].is_empty())
        .collect();
    let old: Option<Vec<Option<Term>>> = (0..items.len())
        .map(|j| match moved.first() {
            Some(&first) if j > first && !deltas[j].is_empty() => {
                item_old(sources, &items[j]).map(Some)
            }
            _ => Some(None),
        })
        .collect();
    let Some(old) = old else {
        return inclusion_exclusion(&deltas, &cur);
    };
    let mut out = Vec::new();
    for &i in &moved {
        let choices = (0..items.len()).map(|j| {
            if j == i {
                deltas[i].clone()
            } else if let (true, Some(o)) = (j > i, &old[j]) {
                vec![o.clone()]
            } else {
                vec![Term::cur(vec![cur[j].clone()])]
            }
        });
        out.extend(product(choices.collect()));
    }
    out
}

/// A changed item as it was before the change, as one FROM item with multiplicities; None when
/// it is not a plain source.
fn item_old(sources: &[Source], item: &Item) -> Option<Term> {
    let ItemFrom::Source(i) = &item.from else {
        return None;
    };
    let src = &sources[*i];
    let delta = src.delta.as_ref()?;
    let cols = || src.columns.iter().map(|c| SelItem::Expr(ir::bare(c.clone()), None));
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

fn join_comma(a: &Term, b: &Term) -> Term {
    let mut out = a.clone();
    out.from.extend(b.from.iter().cloned());
    out.conds.extend(b.conds.iter().cloned());
    out.mult.extend(b.mult.iter().cloned());
    out
}

/// `SELECT coalesce(sum(m), 0) AS col …`: the net multiplicity of the delta terms' rows that
/// satisfy `pred` (correlated to the enclosing row), as a query yielding one value.
pub fn delta_sum_query(terms: &[Term], pred: &UserExpr, col: &str) -> Query {
    let sum = |m: Expr| ir::or_zero(ir::call("sum", vec![m]));
    let matching = |t: &Term| {
        let mut t = t.clone();
        t.conds.push(user(pred.ast()));
        t
    };
    if let [t] = terms {
        let t = matching(t);
        return Query::select(t.select(vec![SelItem::named(sum(t.mult()), col)]));
    }
    let parts = terms
        .iter()
        .map(|t| {
            let t = matching(t);
            Query::select(t.select(vec![SelItem::named(t.mult(), "_mv_m")]))
        })
        .collect();
    Query::select(Select::new(
        vec![SelItem::named(sum(ir::bare("_mv_m")), col)],
        vec![From::query(Query::union_all(parts), "_mv_u")],
    ))
}
