//! Join trees with outer joins (`a JOIN b ON p LEFT JOIN c ON q`, RIGHT and FULL joins),
//! maintained as Z-sets without recomputing any key.
//!
//! `P ⟕ O` is split into its inner part `P ⋈ O` (bilinear: the usual delta terms) and its
//! padded part: every row of P whose match count in O is 0, with NULLs for O. With `t(l)` the
//! indicator "no match", the padded part changes by
//!
//! ```text
//! ΔP · t_old  +  P_now · (t_now − t_old)
//! ```
//!
//! where `t_old` comes from the match count now minus the net count of matching delta rows of O.
//! The second term is only evaluated for rows of P that match some changed row of O, so padding
//! rows appear and vanish exactly when a row's match count crosses zero, and the work follows
//! the changed rows. FULL JOIN adds the mirror image. The right operand of a LEFT join (and both
//! operands of a FULL join) is a single table or subquery, as left-deep SQL chains give.

use serde::{Deserialize, Serialize};

use super::{delta_sum_query, fresh, item_cur, item_delta, rel_cur, Term};
use crate::ir::{self, user, Expr, From, Item as SelItem, JoinKind, Name, Query, Select};
use crate::plan::{Item, ItemFrom, Source};
use crate::strategy::keyed::{self, side};
use crate::strategy::restricted::restricted_count;
use crate::user_expr::UserExpr;

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum Tree {
    /// A table, view or subquery under its alias.
    Leaf(Item),
    Join {
        kind: Kind,
        /// For LEFT joins the preserved side (a RIGHT join is stored with its sides swapped).
        left: Box<Tree>,
        right: Box<Tree>,
        on: UserExpr,
    },
}

impl Tree {
    /// The tables, views and subqueries the tree joins, left to right.
    pub fn leaves(&self) -> Vec<&Item> {
        match self {
            Tree::Leaf(item) => vec![item],
            Tree::Join { left, right, .. } => {
                let mut out = left.leaves();
                out.extend(right.leaves());
                out
            }
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Inner,
    Left,
    Full,
}

/// The tree as it is now: one parenthesized joined table.
pub fn tree_cur(sources: &[Source], t: &Tree) -> From {
    match t {
        Tree::Leaf(item) => item_cur(sources, item),
        Tree::Join {
            kind,
            left,
            right,
            on,
        } => {
            let k = match kind {
                Kind::Inner => JoinKind::Inner,
                Kind::Left => JoinKind::Left,
                Kind::Full => JoinKind::Full,
            };
            tree_cur(sources, left).join(k, tree_cur(sources, right), user(on.ast()))
        }
    }
}

/// `SELECT * FROM from LIMIT 0`.
fn no_rows(from: From) -> Query {
    let mut s = Select::new(vec![SelItem::Star], vec![from]);
    s.limit = Some(0);
    Query::select(s)
}

/// The tree with every input empty but typed: joined `ON FALSE` after a preserved side, it
/// supplies the NULL padding under the user's aliases.
fn tree_empty(sources: &[Source], t: &Tree) -> From {
    match t {
        Tree::Leaf(item) => match &item.from {
            ItemFrom::Source(i) => From::query(
                no_rows(From::Table {
                    name: Name::of(&sources[*i].relation),
                    alias: None,
                }),
                item.name(),
            ),
            ItemFrom::Sub(rel) => From::query(
                no_rows(From::query(rel_cur(sources, rel), "_mv_e")),
                item.name(),
            ),
            ItemFrom::Tree(t) => tree_empty(sources, t),
        },
        Tree::Join { left, right, .. } => {
            tree_empty(sources, left).cross(tree_empty(sources, right))
        }
    }
}

/// `(term's FROM KIND JOIN right ON on)`, the term's conditions and multiplicity kept.
fn joined(t: &Term, kind: JoinKind, right: From, on: Expr) -> Term {
    Term {
        from: vec![t.joined().join(kind, right, on)],
        ..t.clone()
    }
}

/// The tree's change as terms.
pub fn tree_delta(sources: &[Source], t: &Tree, changed: &[bool]) -> Vec<Term> {
    match t {
        Tree::Leaf(item) => item_delta(sources, item, changed),
        Tree::Join {
            kind,
            left,
            right,
            on,
        } => {
            let mut out = inner_part(sources, left, right, on, changed);
            match kind {
                Kind::Inner => {}
                Kind::Left => out.extend(padded_part(sources, left, right, on, changed)),
                Kind::Full => {
                    out.extend(padded_part(sources, left, right, on, changed));
                    out.extend(padded_part(sources, right, left, on, changed));
                }
            }
            out
        }
    }
}

/// Δ(P ⋈ O) = ΔP ⋈ O + P ⋈ ΔO − ΔP ⋈ ΔO over the post-change states. The operands' conditions
/// float up to the term: they only restrict rows of their own side.
fn inner_part(
    sources: &[Source],
    p: &Tree,
    o: &Tree,
    on: &UserExpr,
    changed: &[bool],
) -> Vec<Term> {
    let dp = tree_delta(sources, p, changed);
    let dq = tree_delta(sources, o, changed);
    let (pc, oc) = (tree_cur(sources, p), tree_cur(sources, o));
    let on = user(on.ast());
    let mut out = Vec::new();
    for a in &dp {
        out.push(joined(a, JoinKind::Inner, oc.clone(), on.clone()));
    }
    for b in &dq {
        out.push(Term {
            from: vec![pc.clone().join(JoinKind::Inner, b.joined(), on.clone())],
            ..b.clone()
        });
    }
    for a in &dp {
        for b in &dq {
            let mut conds = a.conds.clone();
            conds.extend(b.conds.iter().cloned());
            let mut mult = vec![Expr::Int(-1)];
            mult.extend(a.mult.iter().cloned());
            mult.extend(b.mult.iter().cloned());
            out.push(Term {
                from: vec![a.joined().join(JoinKind::Inner, b.joined(), on.clone())],
                conds,
                mult,
            });
        }
    }
    out
}

/// The change of "rows of `p` without a match in `o`, padded with NULLs for `o`".
fn padded_part(
    sources: &[Source],
    p: &Tree,
    o: &Tree,
    on: &UserExpr,
    changed: &[bool],
) -> Vec<Term> {
    let dp = tree_delta(sources, p, changed);
    let dq = tree_delta(sources, o, changed);
    let oe = tree_empty(sources, o);
    let pad = |t: &Term| joined(t, JoinKind::Left, oe.clone(), Expr::Bool(false));
    // ΔP · t_old: changed rows of p that had no match before the change.
    let unmatched = unmatched_before(sources, p, o, on, &dp, &dq);
    let mut out: Vec<Term> = dp
        .iter()
        .map(|a| {
            let mut t = pad(a);
            t.conds.push(unmatched.clone());
            t
        })
        .collect();
    if dq.is_empty() {
        return out;
    }
    // P_now · (t_now − t_old): only rows matching a changed row of o can cross zero.
    let flips = flips_by_key(sources, p, o, on, &dq)
        .unwrap_or_else(|| flips_per_row(sources, p, o, on, &dq));
    out.push(pad(&flips));
    out
}

/// `SELECT count(*) AS n FROM o WHERE on`, correlated to a row of the preserved side.
fn count_sql(oc: From, on: &UserExpr) -> Query {
    Query::select(
        Select::new(vec![SelItem::named(Expr::CountStar, "n")], vec![oc])
            .filtered([user(on.ast())]),
    )
}

/// Whether a row of `p` had no match in `o` before the change.
fn unmatched_before(
    sources: &[Source],
    p: &Tree,
    o: &Tree,
    on: &UserExpr,
    dp: &[Term],
    dq: &[Term],
) -> Expr {
    let oc = tree_cur(sources, o);
    if dq.is_empty() {
        let any = Select::new(vec![SelItem::Expr(Expr::Int(1), None)], vec![oc])
            .filtered([user(on.ast())]);
        return ir::exists(Query::select(any)).not();
    }
    // Counted only over the rows of `o` matching a changed row of `p` (when both are single
    // tables and `p` has one delta term), not grouped over all of `o`.
    let count = match (leaves(p, o), dp) {
        (Some((pl, ol)), [a]) if a.conds.is_empty() => {
            let changed_p = Select::new(vec![SelItem::Star], a.from.clone());
            restricted_count(
                oc,
                &ol.name(),
                From::query(Query::select(changed_p), pl.name()),
                on,
            )
        }
        _ => count_sql(oc, on),
    };
    Expr::Scalar(Box::new(count)).eq(Expr::Scalar(Box::new(delta_sum_query(dq, on, "d"))))
}

/// The rows of `p` whose "no match" flips, from counts per changed key of an equi-join (no
/// correlated count per row); None when the predicate is not keyed. The term's FROM is not
/// padded yet.
fn flips_by_key(
    sources: &[Source],
    p: &Tree,
    o: &Tree,
    on: &UserExpr,
    dq: &[Term],
) -> Option<Term> {
    let (pl, ol) = leaves(p, o)?;
    let keys = keyed::split(on.ast(), &side(sources, pl), &side(sources, ol), false)?;
    let (pc, oc) = (tree_cur(sources, p), tree_cur(sources, o));
    let k = fresh(&format!("{pc}|{oc}|{on}"));
    let j = keyed::join_changed(&keys, pc, |_| oc, dq, k);
    let zero = |e: Expr| e.eq(Expr::Int(0));
    let now_empty = zero(j.now.clone());
    Some(Term {
        from: vec![j.from],
        conds: vec![now_empty.clone().bin(ir::Op::NotEq, zero(j.now - j.delta))],
        mult: vec![ir::case(now_empty, Expr::Int(1), Expr::Int(-1))],
    })
}

/// The rows of `p` whose "no match" flips, from a count per candidate row (the rows matching a
/// changed row of `o`). The term's FROM is not padded yet.
fn flips_per_row(sources: &[Source], p: &Tree, o: &Tree, on: &UserExpr, dq: &[Term]) -> Term {
    let (pc, oc) = (tree_cur(sources, p), tree_cur(sources, o));
    let k = fresh(&format!("{pc}|{oc}|{on}"));
    let (n, d) = (format!("_mv_n{k}"), format!("_mv_d{k}"));
    let on_expr = user(on.ast());
    let mut conds = Vec::new();
    // With one delta term and a single preserved table, the candidates can also be named as a
    // subquery under the table's alias, and the rows of `o` counted for them restricted to those
    // matching some candidate: the count then reads only the affected part of `o` instead of
    // grouping all of it (DuckDB decorrelates the LATERAL count into a GROUP BY over `o`).
    let mut count_now = count_sql(oc.clone(), on);
    if let (Some((pl, ol)), [b]) = (leaves(p, o), dq) {
        if b.conds.is_empty() {
            let cand = pc.clone().join(JoinKind::Semi, b.joined(), on_expr.clone());
            let cand = Select::new(vec![SelItem::Star], vec![cand]);
            count_now = restricted_count(
                oc,
                &ol.name(),
                From::query(Query::select(cand), pl.name()),
                on,
            );
        }
    }
    let candidates = match dq {
        [b] if b.conds.is_empty() => pc.join(JoinKind::Semi, b.joined(), on_expr),
        _ => {
            conds.push(ir::any(dq.iter().map(|b| {
                let mut m = b.clone();
                m.conds.push(on_expr.clone());
                ir::exists(Query::select(
                    m.select(vec![SelItem::Expr(Expr::Int(1), None)]),
                ))
            })));
            pc
        }
    };
    let (nn, dd) = (ir::col(n.clone(), "n"), ir::col(d.clone(), "d"));
    let n_empty = nn.clone().eq(Expr::Int(0));
    conds.push(ir::case(
        n_empty.clone(),
        dd.clone().bin(ir::Op::NotEq, Expr::Int(0)),
        nn.eq(dd),
    ));
    let from = candidates
        .cross(From::lateral(count_now, n))
        .cross(From::lateral(delta_sum_query(dq, on, "d"), d));
    Term {
        from: vec![from],
        conds,
        mult: vec![ir::case(n_empty, Expr::Int(1), Expr::Int(-1))],
    }
}

/// Both operands when each is a single table or subquery (the restricted counts name them).
fn leaves<'a>(p: &'a Tree, o: &'a Tree) -> Option<(&'a Item, &'a Item)> {
    match (p, o) {
        (Tree::Leaf(pl), Tree::Leaf(ol))
            if !matches!(pl.from, ItemFrom::Tree(_)) && !matches!(ol.from, ItemFrom::Tree(_)) =>
        {
            Some((pl, ol))
        }
        _ => None,
    }
}
