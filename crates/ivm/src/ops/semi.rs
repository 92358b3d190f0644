//! Semi and anti joins: `WHERE [NOT] EXISTS (…)`, `x [NOT] IN (SELECT …)`, DuckDB's `SEMI JOIN`
//! / `ANTI JOIN`. Each is a filter on the block's rows whose truth depends on another relation:
//! a row passes when its match count there is > 0 (semi) or = 0 (anti). With `t` the product of
//! a row's filters, the block's output changes by
//!
//! ```text
//! ΔL · t_old  +  L_now · (t_now − t_old)
//! ```
//!
//! (L the block without these filters). `t_old` is computed from the match count now minus the
//! net count of matching delta rows, so left and right changes in one batch are counted once;
//! the second term only visits rows of L that match a changed right row. Duplicated left rows
//! stay duplicated: every term works row by row.
//!
//! How the second term finds its rows and their counts is a strategy: `by_key` groups the
//! change by join key when one equi-join test changed, `per_row` counts per candidate row
//! otherwise (restricted to the candidates' matches where that is safe, see `restricted`).

use serde::{Deserialize, Serialize};

mod by_key;
mod per_row;

use super::{delta_sum_query, items_cur, items_delta, sub_agg, Term};
use crate::ir::{self, user, Expr, From, Item as SelItem, Query, Select};
use crate::plan::{Item, ItemFrom, Rel, Source};
use crate::strategy::keyed::{self, side, Keys};
use crate::user_expr::{hole, Hole, UserExpr};

/// One existence filter: `[NOT] EXISTS (SELECT 1 FROM items WHERE filter)`, the filter holding
/// the correlation to the outer row and the right side's own predicates.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Exists {
    pub items: Vec<Item>,
    pub filter: UserExpr,
    pub anti: bool,
}

/// The filter over current data.
pub fn cond_cur(sources: &[Source], e: &Exists) -> Expr {
    let any = Select::new(
        vec![SelItem::Expr(Expr::Int(1), None)],
        items_cur(sources, &e.items),
    )
    .filtered([user(e.filter.ast())]);
    Expr::Exists {
        query: Box::new(Query::select(any)),
        negated: e.anti,
    }
}

/// The test holds for a row with `count` matches.
fn holds(e: &Exists, count: Expr) -> Expr {
    if e.anti {
        count.eq(Expr::Int(0))
    } else {
        count.bin(ir::Op::Gt, Expr::Int(0))
    }
}

/// A WHERE conjunct combining existence tests with AND, OR and NOT: `template` is the conjunct
/// with each test a hole ([`Hole::Test`]) `i`, standing for "`exists[i]` holds".
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Guard {
    pub template: UserExpr,
    pub exists: Vec<Exists>,
}

/// `template` with each existence test's hole holding `value(i)`. Unknown counts as false, as
/// in WHERE: transitions compare these values, and `NULL <> TRUE` would hide one.
fn fill(template: &UserExpr, value: impl Fn(usize) -> Expr) -> Expr {
    let out = template.filled(Hole::Test, |i| ir::paren(value(i).to_ast()));
    ir::call("coalesce", vec![user(&out), Expr::Bool(false)])
}

/// The guard over current data.
pub fn guard_cur(sources: &[Source], g: &Guard) -> Expr {
    fill(&g.template, |i| cond_cur(sources, &g.exists[i]))
}

/// The change of `σ_{filter ∧ exists… ∧ guards…}(items)`. A top-level existence filter is a
/// guard whose template is its hole alone.
pub fn block_terms(
    sources: &[Source],
    items: &[Item],
    filter: Option<&UserExpr>,
    top: &[Exists],
    guards: &[Guard],
    changed: &[bool],
) -> Vec<Term> {
    if top.is_empty() && guards.is_empty() {
        if let Some(terms) = filter.and_then(|f| super::nested::delta(sources, items, f, changed)) {
            return terms;
        }
    }
    let mut base = items_delta(sources, items, changed);
    if let Some(f) = filter {
        super::sub_keys::restrict(sources, items, f, changed, &mut base);
        for t in &mut base {
            t.conds.push(user(f.ast()));
        }
    }
    if top.is_empty() && guards.is_empty() {
        return base;
    }
    let tests = Tests::new(sources, items, top, guards, changed);
    // ΔL · t_old: each test as it held before the change, for the term's rows.
    let mut out: Vec<Term> = base
        .into_iter()
        .map(|mut t| {
            let old: Vec<Expr> = (0..tests.guards.len())
                .map(|g| tests.guard_sql(g, &|i| tests.held_before(i, &t)))
                .collect();
            t.conds.extend(old);
            t
        })
        .collect();
    // L_now · (t_now − t_old), over rows matching some changed right row.
    let moved = tests.moved();
    if moved.is_empty() {
        return out;
    }
    let mut conds: Vec<Expr> = filter.map(|f| vec![user(f.ast())]).unwrap_or_default();
    for g in 0..tests.guards.len() {
        if !tests.guard_moved(g) {
            conds.push(tests.guard_sql(g, &|i| tests.cur(i)));
        }
    }
    let flips = by_key::term(&tests, items, &moved, &conds)
        .unwrap_or_else(|| per_row::term(&tests, items, &moved, conds));
    out.push(flips);
    out
}

/// A block's existence tests in one list, each guard's template over positions in it, and the
/// change of each test's relation.
struct Tests<'a> {
    sources: &'a [Source],
    /// The block's items, which the tests' filters correlate to.
    items: &'a [Item],
    exists: Vec<&'a Exists>,
    /// Each guard: its template and the positions of its tests.
    guards: Vec<(UserExpr, Vec<usize>)>,
    /// The top-level tests, which stand alone, come first: this many.
    alone: usize,
    right: Vec<Vec<Term>>,
}

impl<'a> Tests<'a> {
    fn new(
        sources: &'a [Source],
        items: &'a [Item],
        top: &'a [Exists],
        guards: &'a [Guard],
        changed: &[bool],
    ) -> Self {
        let mut exists: Vec<&Exists> = Vec::new();
        let mut shapes = Vec::new();
        for e in top {
            exists.push(e);
            shapes.push((UserExpr::new(hole(Hole::Test, 0)), vec![exists.len() - 1]));
        }
        for g in guards {
            let first = exists.len();
            exists.extend(g.exists.iter());
            shapes.push((g.template.clone(), (first..exists.len()).collect()));
        }
        let right = exists
            .iter()
            .map(|e| items_delta(sources, &e.items, changed))
            .collect();
        Tests {
            sources,
            items,
            exists,
            guards: shapes,
            alone: top.len(),
            right,
        }
    }

    /// Guard `g` with its tests' values from `value` (by position in the whole list).
    fn guard_sql(&self, g: usize, value: &dyn Fn(usize) -> Expr) -> Expr {
        let (template, members) = &self.guards[g];
        fill(template, |j| value(members[j]))
    }

    /// The tests whose relation changed.
    fn moved(&self) -> Vec<usize> {
        (0..self.exists.len())
            .filter(|i| !self.right[*i].is_empty())
            .collect()
    }

    fn guard_moved(&self, g: usize) -> bool {
        self.guards[g].1.iter().any(|i| !self.right[*i].is_empty())
    }

    /// Test `i` over current data.
    fn cur(&self, i: usize) -> Expr {
        cond_cur(self.sources, self.exists[i])
    }

    /// Test `i`'s match count now, correlated to the outer row.
    fn count_now(&self, i: usize) -> Query {
        let e = self.exists[i];
        let count = Select::new(
            vec![SelItem::named(Expr::CountStar, "n")],
            items_cur(self.sources, &e.items),
        );
        Query::select(count.filtered([user(e.filter.ast())]))
    }

    /// Test `i` over one table or subquery whose filter is equalities with one item of the
    /// block (which, and the split) plus conditions on its own side: a row's match count then
    /// depends on that item's key alone.
    fn keyed(&self, i: usize) -> Option<(usize, Keys)> {
        let e = self.exists[i];
        let [r] = e.items.as_slice() else {
            return None;
        };
        let tree = |it: &Item| matches!(it.from, ItemFrom::Tree(_));
        if tree(r) {
            return None;
        }
        let other = side(self.sources, r);
        // A name of any other item leaves the filter unsplit (`split` cannot place it).
        self.items
            .iter()
            .enumerate()
            .filter(|(_, it)| !tree(it))
            .find_map(|(n, it)| {
                let split = keyed::split(e.filter.ast(), &side(self.sources, it), &other, true);
                split.map(|keys| (n, keys))
            })
    }

    /// Test `i`'s relation as it is now, read only where its key is among the rows of `wanted`
    /// (columns `_mv_k0…`), when it is an aggregate keyed on its group columns: DuckDB would
    /// group all of its input before matching (see `sub_agg::cur_for_keys`).
    fn agg_for_keys(&self, i: usize, keys: &Keys, wanted: Query) -> Option<From> {
        let r = &self.exists[i].items[0];
        let ItemFrom::Sub(rel) = &r.from else {
            return None;
        };
        let Rel::Agg(sa) = rel.as_ref() else {
            return None;
        };
        sub_agg::cur_for_keys(self.sources, sa, &r.name(), keys, wanted)
    }

    /// Test `i`'s match count now for the rows of `term`: over an aggregate keyed on its group
    /// columns, only the groups of the term's keys are formed.
    fn count_for(&self, i: usize, term: &Term) -> Query {
        let e = self.exists[i];
        let restricted = self.keyed(i).and_then(|(_, keys)| {
            let shown = keys.pairs.iter().enumerate();
            let wanted = shown.map(|(n, (p, _))| SelItem::named(p.clone(), keyed::key(n)));
            let wanted = Query::select(term.select(wanted.collect()));
            self.agg_for_keys(i, &keys, wanted)
        });
        match restricted {
            Some(from) => {
                let count = Select::new(vec![SelItem::named(Expr::CountStar, "n")], vec![from]);
                Query::select(count.filtered([user(e.filter.ast())]))
            }
            None => self.count_now(i),
        }
    }

    /// Test `i` as it held before the change for the rows of `term`: the count now minus the
    /// net change of matches.
    fn held_before(&self, i: usize, term: &Term) -> Expr {
        let e = self.exists[i];
        if self.right[i].is_empty() {
            return self.cur(i);
        }
        let now = Expr::Scalar(Box::new(self.count_for(i, term)));
        let change = Expr::Scalar(Box::new(delta_sum_query(&self.right[i], &e.filter, "d")));
        holds(e, now - change)
    }
}

/// The change of rows whose guards went from `before` to `now`: a condition keeping the rows
/// that flipped, and their sign (+1 entering, −1 leaving).
fn flipped(now: Expr, before: Expr) -> (Expr, Expr) {
    (
        now.clone().bin(ir::Op::NotEq, before),
        ir::case(now, Expr::Int(1), Expr::Int(-1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{From, JoinKind};
    use crate::plan::tests::{item, source};

    /// The terms of `a WHERE [NOT] EXISTS (SELECT 1 FROM b WHERE pred)` when only b changed.
    fn terms(pred: &str, b_columns: &[&str], anti: bool) -> Vec<Term> {
        let sources = [source("a", &["k", "v"]), source("b", b_columns)];
        let test = Exists {
            items: vec![item("b", 1)],
            filter: UserExpr::new(crate::user_expr::parse(pred).unwrap()),
            anti,
        };
        block_terms(
            &sources,
            &[item("a", 0)],
            None,
            &[test],
            &[],
            &[false, true],
        )
    }

    /// Every FROM item of a term, at any depth.
    fn items_of(t: &Term) -> Vec<&From> {
        t.from.iter().flat_map(From::all).collect()
    }

    fn lateral(f: &From) -> bool {
        matches!(f, From::Query { lateral: true, .. })
    }

    fn semi_join(f: &From) -> bool {
        matches!(f, From::Join(j) if j.kind == JoinKind::Semi)
    }

    #[test]
    fn an_equi_join_test_is_counted_by_key() {
        let t = terms("b.k = a.k AND b.w > 1", &["k", "w"], false);
        assert_eq!(t.len(), 1, "only the flips of a: it did not change itself");
        let all = items_of(&t[0]);
        assert!(all
            .iter()
            .any(|f| f.alias().is_some_and(|a| a.starts_with("_mv_dk"))));
        assert!(!all.iter().any(|f| lateral(f)), "{:?}", t[0].from);
        assert_eq!(t[0].mult.len(), 1);
    }

    #[test]
    fn a_test_keyed_on_one_item_of_a_join_starts_from_the_changed_keys() {
        // a JOIN c, EXISTS over b keyed on a's column: only b changed.
        let sources = [
            source("a", &["k", "v"]),
            source("b", &["k", "w"]),
            source("c", &["x"]),
        ];
        let test = |pred: &str| Exists {
            items: vec![item("b", 1)],
            filter: UserExpr::new(crate::user_expr::parse(pred).unwrap()),
            anti: false,
        };
        let filter = UserExpr::new(crate::user_expr::parse("c.x = a.v").unwrap());
        let items = [item("c", 2), item("a", 0)];
        let flips = |pred: &str| {
            let t = block_terms(
                &sources,
                &items,
                Some(&filter),
                &[test(pred)],
                &[],
                &[false, true, false],
            );
            assert_eq!(t.len(), 1, "only the flips: a and c did not change");
            t.into_iter().next().unwrap()
        };
        let t = flips("b.k = a.k AND b.w > 1");
        assert_eq!(t.from.len(), 2, "c as it is, a joined to the changed keys");
        assert!(t.from[0].is_table("main.c"), "{:?}", t.from[0]);
        let all = items_of(&t);
        assert!(all
            .iter()
            .any(|f| f.alias().is_some_and(|a| a.starts_with("_mv_dk"))));
        assert!(!all.iter().any(|f| lateral(f)), "{:?}", t.from);
        // A filter that reads c too cannot be split on a's key alone: counted per row, over
        // the rows of a that share a key with a changed row of b.
        for pred in ["b.k = a.k AND b.w > c.x", "b.k = a.k AND b.w <> a.v"] {
            let t = flips(pred);
            assert!(items_of(&t).iter().any(|f| lateral(f)), "{:?}", t.from);
            assert!(t.from[0].is_table("main.c"), "{:?}", t.from[0]);
            let a = &t.from[1];
            assert!(
                matches!(a, From::Query { alias, .. } if alias == "a") && !a.is_table("main.a"),
                "{a:?}"
            );
        }
        // No equality with b: a is read whole.
        let t = flips("b.w > a.v");
        assert!(t.from[1].is_table("main.a"), "{:?}", t.from[1]);
    }

    #[test]
    fn other_tests_count_per_candidate_row_restricted_when_names_cannot_move() {
        // No column in common: the count reads only the rows matching a candidate.
        let t = terms("b.x < a.v", &["x"], true);
        assert_eq!(t.len(), 1);
        let all = items_of(&t[0]);
        assert!(all.iter().any(|f| lateral(f)), "{:?}", t[0].from);
        assert!(all.iter().any(|f| semi_join(f)), "{:?}", t[0].from);
        // `k` in both tables: one scope would rebind it, so the plain correlated count.
        let t = terms("b.k < a.v", &["k"], true);
        let all = items_of(&t[0]);
        assert!(all.iter().any(|f| lateral(f)) && !all.iter().any(|f| semi_join(f)));
    }

    #[test]
    fn a_change_on_the_left_only_keeps_the_tests_as_they_are() {
        let sources = [source("a", &["k", "v"]), source("b", &["k"])];
        let test = Exists {
            items: vec![item("b", 1)],
            filter: UserExpr::new(crate::user_expr::parse("b.k = a.k").unwrap()),
            anti: false,
        };
        let t = block_terms(
            &sources,
            &[item("a", 0)],
            None,
            &[test],
            &[],
            &[true, false],
        );
        assert_eq!(t.len(), 1, "ΔL · t_old alone");
        assert!(t[0].from.iter().any(|f| f.is_table("_duckmv.d_1_a")));
        // The test as it is now: an EXISTS over b (inside the guard's coalesce).
        let reads_b = |c: &Expr| {
            let ast = c.to_ast();
            let found = sqlparser::ast::visit_expressions(&ast, |e| match e {
                sqlparser::ast::Expr::Exists {
                    subquery,
                    negated: false,
                } if subquery.to_string().contains(r#"FROM "main"."b" AS "b""#) => {
                    std::ops::ControlFlow::Break(())
                }
                _ => std::ops::ControlFlow::Continue(()),
            });
            found.is_break()
        };
        assert!(t[0].conds.iter().any(reads_b), "{:?}", t[0].conds);
    }
}
