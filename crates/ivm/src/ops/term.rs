//! Terms of a delta query. A term is one SELECT's FROM clause, its extra conditions and its
//! multiplicity as a product of factors; a relation's change is a UNION ALL of terms. Keeping the
//! user's aliases visible in every term lets the user's select list, WHERE and ON predicates be
//! reused unchanged over delta tables, outer-join padding and semi-join transitions alike.

use crate::ir::{self, user, Expr, From, Item as SelItem, Query, Select};
use crate::user_expr::UserExpr;

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
