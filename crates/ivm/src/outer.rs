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

use super::keyed::{self, side};
use super::plan::{rel_cur, Item, ItemFrom, Source};
use super::restricted::restricted_count;
use super::term::{delta_sum_query, fresh, item_cur, item_delta, Term};
use super::user_expr::UserExpr;

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
pub fn tree_cur(sources: &[Source], t: &Tree) -> String {
    match t {
        Tree::Leaf(item) => item_cur(sources, item),
        Tree::Join {
            kind,
            left,
            right,
            on,
        } => {
            let k = match kind {
                Kind::Inner => "INNER",
                Kind::Left => "LEFT",
                Kind::Full => "FULL",
            };
            format!(
                "({} {k} JOIN {} ON {on})",
                tree_cur(sources, left),
                tree_cur(sources, right)
            )
        }
    }
}

/// The tree with every input empty but typed: joined `ON FALSE` after a preserved side, it
/// supplies the NULL padding under the user's aliases.
fn tree_empty(sources: &[Source], t: &Tree) -> String {
    match t {
        Tree::Leaf(item) => match &item.from {
            ItemFrom::Source(i) => format!(
                "(SELECT * FROM {} LIMIT 0) AS {}",
                sources[*i].relation, item.alias
            ),
            ItemFrom::Sub(rel) => format!(
                "(SELECT * FROM ({}) AS _mv_e LIMIT 0) AS {}",
                rel_cur(sources, rel),
                item.alias
            ),
            ItemFrom::Tree(t) => tree_empty(sources, t),
        },
        Tree::Join { left, right, .. } => format!(
            "({} CROSS JOIN {})",
            tree_empty(sources, left),
            tree_empty(sources, right)
        ),
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
    let mut out = Vec::new();
    for a in &dp {
        out.push(Term {
            from: format!("({} INNER JOIN {oc} ON {on})", a.from),
            conds: a.conds.clone(),
            mult: a.mult.clone(),
        });
    }
    for b in &dq {
        out.push(Term {
            from: format!("({pc} INNER JOIN {} ON {on})", b.from),
            conds: b.conds.clone(),
            mult: b.mult.clone(),
        });
    }
    for a in &dp {
        for b in &dq {
            let mut conds = a.conds.clone();
            conds.extend(b.conds.iter().cloned());
            let mut mult = vec!["-1".to_string()];
            mult.extend(a.mult.iter().cloned());
            mult.extend(b.mult.iter().cloned());
            out.push(Term {
                from: format!("({} INNER JOIN {} ON {on})", a.from, b.from),
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
    // ΔP · t_old: changed rows of p that had no match before the change.
    let unmatched = unmatched_before(sources, p, o, on, &dp, &dq);
    let mut out: Vec<Term> = dp
        .iter()
        .map(|a| {
            let mut conds = a.conds.clone();
            conds.push(unmatched.clone());
            Term {
                from: format!("({} LEFT JOIN {oe} ON FALSE)", a.from),
                conds,
                mult: a.mult.clone(),
            }
        })
        .collect();
    if dq.is_empty() {
        return out;
    }
    // P_now · (t_now − t_old): only rows matching a changed row of o can cross zero.
    let flips = flips_by_key(sources, p, o, on, &dq)
        .unwrap_or_else(|| flips_per_row(sources, p, o, on, &dq));
    out.push(Term {
        from: format!("({} LEFT JOIN {oe} ON FALSE)", flips.from),
        ..flips
    });
    out
}

fn count_sql(oc: &str, on: &UserExpr) -> String {
    format!("SELECT count(*) AS n FROM {oc} WHERE {on}")
}

/// Whether a row of `p` had no match in `o` before the change.
fn unmatched_before(
    sources: &[Source],
    p: &Tree,
    o: &Tree,
    on: &UserExpr,
    dp: &[Term],
    dq: &[Term],
) -> String {
    let oc = tree_cur(sources, o);
    if dq.is_empty() {
        return format!("(NOT EXISTS (SELECT 1 FROM {oc} WHERE {on}))");
    }
    // Counted only over the rows of `o` matching a changed row of `p` (when both are single
    // tables and `p` has one delta term), not grouped over all of `o`.
    let count = match (leaves(p, o), dp) {
        (Some((pl, ol)), [a]) if a.conds.is_empty() => restricted_count(
            &oc,
            &ol.alias,
            &format!("(SELECT * FROM {}) AS {}", a.from, pl.alias),
            on,
        ),
        _ => count_sql(&oc, on),
    };
    format!("(({count}) = ({}))", delta_sum_query(dq, on, "d"))
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
    let j = keyed::join_changed(&keys, &pc, &oc, dq, k);
    let now = &j.now;
    Some(Term {
        from: j.from.clone(),
        conds: vec![format!("(({now} = 0) <> ({now} - {} = 0))", j.delta)],
        mult: vec![format!("CASE WHEN {now} = 0 THEN 1 ELSE -1 END")],
    })
}

/// The rows of `p` whose "no match" flips, from a count per candidate row (the rows matching a
/// changed row of `o`). The term's FROM is not padded yet.
fn flips_per_row(sources: &[Source], p: &Tree, o: &Tree, on: &UserExpr, dq: &[Term]) -> Term {
    let (pc, oc) = (tree_cur(sources, p), tree_cur(sources, o));
    let k = fresh(&format!("{pc}|{oc}|{on}"));
    let (n, d) = (format!("_mv_n{k}"), format!("_mv_d{k}"));
    let mut conds = Vec::new();
    // With one delta term and a single preserved table, the candidates can also be named as a
    // subquery under the table's alias, and the rows of `o` counted for them restricted to those
    // matching some candidate: the count then reads only the affected part of `o` instead of
    // grouping all of it (DuckDB decorrelates the LATERAL count into a GROUP BY over `o`).
    let mut count_now = count_sql(&oc, on);
    if let (Some((pl, ol)), [b]) = (leaves(p, o), dq) {
        if b.conds.is_empty() {
            let cand = format!(
                "(SELECT * FROM {pc} SEMI JOIN {} ON {on}) AS {}",
                b.from, pl.alias
            );
            count_now = restricted_count(&oc, &ol.alias, &cand, on);
        }
    }
    let candidates = match dq {
        [b] if b.conds.is_empty() => format!("({pc} SEMI JOIN {} ON {on})", b.from),
        _ => {
            let any: Vec<String> = dq
                .iter()
                .map(|b| {
                    let mut c = b.conds.clone();
                    c.push(format!("({on})"));
                    format!(
                        "EXISTS (SELECT 1 FROM {} WHERE {})",
                        b.from,
                        c.join(" AND ")
                    )
                })
                .collect();
            conds.push(format!("({})", any.join(" OR ")));
            pc
        }
    };
    conds.push(format!(
        "(CASE WHEN {n}.n = 0 THEN {d}.d <> 0 ELSE {n}.n = {d}.d END)"
    ));
    Term {
        from: format!(
            "({candidates} CROSS JOIN LATERAL ({count_now}) AS {n} CROSS JOIN LATERAL ({}) AS {d})",
            delta_sum_query(dq, on, "d")
        ),
        conds,
        mult: vec![format!("CASE WHEN {n}.n = 0 THEN 1 ELSE -1 END")],
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
