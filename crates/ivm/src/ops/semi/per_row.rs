//! The flips of changed tests, counted per candidate row: the rows of the block that match
//! some changed row of a test's relation are the candidates, and each gets, per changed test,
//! its match count now and the net change of its matches (`LATERAL` subqueries). With one
//! table on the left and one changed test over one table, the candidates are picked before the
//! counts are taken, and the counts read only the rows matching some candidate (`restricted`).

use super::super::{delta_sum_query, fresh, item_cur, items_cur, Term};
use super::{flipped, holds, Tests};
use crate::ir::{self, user, Expr, From, Item as SelItem, Query, Select};
use crate::plan::{Item, ItemFrom};
use crate::strategy::keyed::{self, side};
use crate::strategy::restricted::{restricted_count, same_scope_safe};

/// A single left table, filtered to the candidates under its own alias.
struct Candidates {
    alias: String,
    source: usize,
    from: From,
}

/// The term of the rows whose changed guards flip.
pub(super) fn term(tests: &Tests, items: &[Item], moved: &[usize], mut conds: Vec<Expr>) -> Term {
    let sources = tests.sources;
    let mut from = items_cur(sources, items);
    let mut candidates = None;
    match (moved, items) {
        // One left table, one changed test: the candidates are picked before the counts are
        // taken (inside a subquery, so the filter's names resolve as the user wrote them).
        ([i], [it]) if !matches!(it.from, ItemFrom::Tree(_)) => {
            let picked = Select::new(vec![SelItem::Star], from).filtered([touched(tests, *i)]);
            let picked = From::query(Query::select(picked), it.name());
            if let ItemFrom::Source(source) = it.from {
                candidates = Some(Candidates {
                    alias: it.name(),
                    source,
                    from: picked.clone(),
                });
            }
            from = vec![picked];
        }
        _ => {
            if let Some((at, picked)) = keyed_item(tests, items, moved) {
                from[at] = picked;
            }
            conds.push(ir::any(moved.iter().map(|i| touched(tests, *i))));
        }
    }
    // Each changed test's count now (`n`) and net change (`d`) per candidate row.
    let mut counts: Vec<Option<(String, String)>> = vec![None; tests.exists.len()];
    for i in moved {
        let e = tests.exists[*i];
        let shown: Vec<String> = from.iter().map(|f| f.to_string()).collect();
        let k = fresh(&format!("{i}|{}|{}", e.filter, shown.join(", ")));
        let (n, d) = (format!("_mv_n{k}"), format!("_mv_d{k}"));
        from.push(From::lateral(
            count(tests, *i, candidates.as_ref()),
            n.clone(),
        ));
        from.push(From::lateral(
            delta_sum_query(&tests.right[*i], &e.filter, "d"),
            d.clone(),
        ));
        counts[*i] = Some((n, d));
    }
    let value = |i: usize, before: bool| match &counts[i] {
        Some((n, d)) if before => holds(
            tests.exists[i],
            ir::col(n.clone(), "n") - ir::col(d.clone(), "d"),
        ),
        Some((n, _)) => holds(tests.exists[i], ir::col(n.clone(), "n")),
        None => tests.cur(i),
    };
    let changed: Vec<usize> = (0..tests.guards.len())
        .filter(|g| tests.guard_moved(*g))
        .collect();
    let all = |before: bool| {
        ir::all(
            changed
                .iter()
                .map(|g| tests.guard_sql(*g, &|i| value(i, before))),
        )
    };
    let (flip, sign) = flipped(all(false), all(true));
    conds.push(flip);
    Term {
        from,
        conds,
        mult: vec![sign],
    }
}

/// An item of the block that every changed test ties, by equalities in its filter, to the
/// test's one relation, by the same expressions of the item: its rows whose key is among the
/// changed rows' keys of those relations, under its alias. Every candidate row is among them,
/// so the other items join to a few rows instead of DuckDB joining the whole block before it
/// tests which rows are candidates. One key for all tests, so the keys are one union and the
/// filter one semi join (an OR of EXISTS would be a mark join per test over the whole item).
fn keyed_item(tests: &Tests, items: &[Item], moved: &[usize]) -> Option<(usize, From)> {
    let sources = tests.sources;
    let tree = |it: &Item| matches!(it.from, ItemFrom::Tree(_));
    // Test i's equalities with item `it`, as (item side, relation side).
    let pairs = |it: &Item, i: usize| {
        let e = tests.exists[i];
        let [r] = e.items.as_slice() else {
            return None;
        };
        if tree(r) {
            return None;
        }
        let pairs = keyed::equalities(e.filter.ast(), &side(sources, it), &side(sources, r), true);
        (!pairs.is_empty()).then_some(pairs)
    };
    let item_side = |ps: &[(Expr, Expr)]| ps.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    items
        .iter()
        .enumerate()
        .filter(|(_, it)| !tree(it))
        .find_map(|(at, it)| {
            let per_test: Vec<Vec<(Expr, Expr)>> =
                moved.iter().map(|i| pairs(it, *i)).collect::<Option<_>>()?;
            let key = item_side(&per_test[0]);
            if per_test.iter().any(|ps| item_side(ps) != key) {
                return None;
            }
            let changed = moved.iter().zip(&per_test).flat_map(|(i, ps)| {
                tests.right[*i].iter().map(move |d| {
                    let cols = ps.iter().enumerate();
                    let cols = cols.map(|(n, (_, o))| SelItem::named(o.clone(), keyed::key(n)));
                    Query::select(d.select(cols.collect()))
                })
            });
            let on = key
                .into_iter()
                .enumerate()
                .map(|(n, p)| ir::col("_mv_c", keyed::key(n)).eq(p));
            let hit = Select::new(
                vec![SelItem::Expr(Expr::Int(1), None)],
                vec![From::query(Query::union_all(changed.collect()), "_mv_c")],
            )
            .filtered([ir::all(on)]);
            let picked = Select::new(vec![SelItem::Star], vec![item_cur(sources, it)])
                .filtered([ir::exists(Query::select(hit))]);
            Some((at, From::query(Query::select(picked), it.name())))
        })
}

/// A left row is a candidate for test `i` when one of the change terms of its relation
/// matches it.
fn touched(tests: &Tests, i: usize) -> Expr {
    let e = tests.exists[i];
    ir::any(tests.right[i].iter().map(|d| {
        let mut m = d.clone();
        m.conds.push(user(e.filter.ast()));
        ir::exists(Query::select(
            m.select(vec![SelItem::Expr(Expr::Int(1), None)]),
        ))
    }))
}

/// Test `i`'s match count now. A single right table is counted only over its rows matching
/// some candidate: DuckDB would otherwise group all of it by the correlation. The restriction
/// evaluates the filter with both tables in one scope, so only where no name can change table.
fn count(tests: &Tests, i: usize, candidates: Option<&Candidates>) -> Query {
    let e = tests.exists[i];
    match (candidates, e.items.as_slice()) {
        (Some(c), [r]) if same_scope_safe(tests.sources, &c.alias, c.source, r) => {
            restricted_count(
                item_cur(tests.sources, r),
                &r.name(),
                c.from.clone(),
                &e.filter,
            )
        }
        _ => tests.count_now(i),
    }
}
