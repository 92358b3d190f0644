//! The flips of changed tests, counted per candidate row: the rows of the block that match
//! some changed row of a test's relation are the candidates, and each gets, per changed test,
//! its match count now and the net change of its matches (`LATERAL` subqueries). With one
//! table on the left and one changed test over one table, the candidates are picked before the
//! counts are taken, and the counts read only the rows matching some candidate (`restricted`).

use super::super::plan::{Item, ItemFrom};
use super::super::restricted::{restricted_count, same_scope_safe};
use super::super::term::{delta_sum_query, fresh, items_cur, Term};
use super::{flipped, holds, Tests};

/// A single left table, filtered to the candidates under its own alias.
struct Candidates {
    alias: String,
    source: usize,
    from: String,
}

/// The term of the rows whose changed guards flip.
pub(super) fn term(tests: &Tests, items: &[Item], moved: &[usize], mut conds: Vec<String>) -> Term {
    let sources = tests.sources;
    let mut from = items_cur(sources, items);
    let mut candidates = None;
    match (moved, items) {
        // One left table, one changed test: the candidates are picked before the counts are
        // taken (inside a subquery, so the filter's names resolve as the user wrote them).
        ([i], [it]) if !matches!(it.from, ItemFrom::Tree(_)) => {
            let any = touched(tests, *i);
            from = format!(
                "(SELECT * FROM {from} WHERE {}) AS {}",
                any.join(" OR "),
                it.alias
            );
            if let ItemFrom::Source(source) = it.from {
                candidates = Some(Candidates {
                    alias: it.alias.clone(),
                    source,
                    from: from.clone(),
                });
            }
        }
        _ => {
            let any: Vec<String> = moved.iter().flat_map(|i| touched(tests, *i)).collect();
            conds.push(format!("({})", any.join(" OR ")));
        }
    }
    // Each changed test's count now (`n`) and net change (`d`) per candidate row.
    let mut counts: Vec<Option<(String, String)>> = vec![None; tests.exists.len()];
    for i in moved {
        let e = tests.exists[*i];
        let k = fresh(&format!("{i}|{}|{}", e.filter, from));
        let (n, d) = (format!("_mv_n{k}"), format!("_mv_d{k}"));
        from.push_str(&format!(
            ", LATERAL ({}) AS {n}, LATERAL ({}) AS {d}",
            count(tests, *i, candidates.as_ref()),
            delta_sum_query(&tests.right[*i], &e.filter, "d")
        ));
        counts[*i] = Some((n, d));
    }
    let value = |i: usize, before: bool| match &counts[i] {
        Some((n, d)) if before => holds(tests.exists[i], &format!("{n}.n - {d}.d")),
        Some((n, _)) => holds(tests.exists[i], &format!("{n}.n")),
        None => tests.cur(i),
    };
    let changed: Vec<usize> = (0..tests.guards.len())
        .filter(|g| tests.guard_moved(*g))
        .collect();
    let all = |before: bool| {
        changed
            .iter()
            .map(|g| tests.guard_sql(*g, &|i| value(i, before)))
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let (flip, sign) = flipped(&all(false), &all(true));
    conds.push(flip);
    Term {
        from,
        conds,
        mult: vec![sign],
    }
}

/// A left row is a candidate for test `i` when one of the change terms of its relation
/// matches it.
fn touched(tests: &Tests, i: usize) -> Vec<String> {
    let e = tests.exists[i];
    tests.right[i]
        .iter()
        .map(|d| {
            let mut c = d.conds.clone();
            c.push(e.filter.to_string());
            format!(
                "EXISTS (SELECT 1 FROM {} WHERE {})",
                d.from,
                c.join(" AND ")
            )
        })
        .collect()
}

/// Test `i`'s match count now. A single right table is counted only over its rows matching
/// some candidate: DuckDB would otherwise group all of it by the correlation. The restriction
/// evaluates the filter with both tables in one scope, so only where no name can change table.
fn count(tests: &Tests, i: usize, candidates: Option<&Candidates>) -> String {
    let e = tests.exists[i];
    match (candidates, e.items.as_slice()) {
        (Some(c), [r]) if same_scope_safe(tests.sources, &c.alias, c.source, r) => {
            restricted_count(
                &items_cur(tests.sources, &e.items),
                &r.alias,
                &c.from,
                &e.filter,
            )
        }
        _ => tests.count_now(i),
    }
}
