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

use serde::{Deserialize, Serialize};

use super::keyed;
use super::outer::{restricted_count, side};
use super::plan::{Item, ItemFrom, Source};
use super::term::{delta_sum_query, fresh, items_cur, items_delta, Term};
use super::user_expr::{hole, rendered, Hole, UserExpr};

/// One existence filter: `[NOT] EXISTS (SELECT 1 FROM items WHERE filter)`, the filter holding
/// the correlation to the outer row and the right side's own predicates.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Exists {
    pub items: Vec<Item>,
    pub filter: UserExpr,
    pub anti: bool,
}

/// The filter as SQL over current data.
pub fn cond_cur(sources: &[Source], e: &Exists) -> String {
    format!(
        "({}EXISTS (SELECT 1 FROM {} WHERE {}))",
        if e.anti { "NOT " } else { "" },
        items_cur(sources, &e.items),
        e.filter
    )
}

fn holds(e: &Exists, count: &str) -> String {
    if e.anti {
        format!("({count}) = 0")
    } else {
        format!("({count}) > 0")
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
fn fill(template: &UserExpr, value: impl Fn(usize) -> String) -> String {
    let out = template.filled(Hole::Test, |i| rendered(value(i)));
    format!("coalesce(({out}), FALSE)")
}

/// The guard as SQL over current data.
pub fn guard_cur(sources: &[Source], g: &Guard) -> String {
    fill(&g.template, |i| cond_cur(sources, &g.exists[i]))
}

/// The change of `σ_{filter ∧ exists… ∧ guards…}(items)`. A top-level existence filter is a
/// guard whose template is its placeholder alone.
pub fn block_terms(
    sources: &[Source],
    items: &[Item],
    filter: Option<&UserExpr>,
    top: &[Exists],
    guards: &[Guard],
    changed: &[bool],
) -> Vec<Term> {
    let mut base = items_delta(sources, items, changed);
    if let Some(f) = filter {
        for t in &mut base {
            t.conds.push(f.to_string());
        }
    }
    if top.is_empty() && guards.is_empty() {
        return base;
    }
    // Every existence test in one list; each guard names its tests by position in it.
    let mut exists: Vec<&Exists> = Vec::new();
    let mut shapes: Vec<(UserExpr, Vec<usize>)> = Vec::new();
    for e in top {
        exists.push(e);
        shapes.push((UserExpr::new(hole(Hole::Test, 0)), vec![exists.len() - 1]));
    }
    for g in guards {
        let first = exists.len();
        exists.extend(g.exists.iter());
        shapes.push((g.template.clone(), (first..exists.len()).collect()));
    }
    let guard_sql = |(template, members): &(UserExpr, Vec<usize>),
                     value: &dyn Fn(usize) -> String| {
        fill(template, |j| value(members[j]))
    };
    let right: Vec<Vec<Term>> = exists
        .iter()
        .map(|e| items_delta(sources, &e.items, changed))
        .collect();
    let count_now = |e: &Exists| {
        format!(
            "SELECT count(*) AS n FROM {} WHERE {}",
            items_cur(sources, &e.items),
            e.filter
        )
    };
    // ΔL · t_old: each test as it held before the change.
    let held_before = |i: usize| -> String {
        let e = exists[i];
        if right[i].is_empty() {
            cond_cur(sources, e)
        } else {
            holds(
                e,
                &format!(
                    "({}) - ({})",
                    count_now(e),
                    delta_sum_query(&right[i], &e.filter, "d")
                ),
            )
        }
    };
    let old: Vec<String> = shapes.iter().map(|g| guard_sql(g, &held_before)).collect();
    let mut out: Vec<Term> = base
        .into_iter()
        .map(|mut t| {
            t.conds.extend(old.iter().cloned());
            t
        })
        .collect();
    // L_now · (t_now − t_old), over rows matching some changed right row.
    let moved: Vec<usize> = (0..exists.len())
        .filter(|i| !right[*i].is_empty())
        .collect();
    if moved.is_empty() {
        return out;
    }
    let mut conds: Vec<String> = filter.map(|f| vec![f.to_string()]).unwrap_or_default();
    let cur = |i: usize| cond_cur(sources, exists[i]);
    let guard_moved = |g: &(UserExpr, Vec<usize>)| g.1.iter().any(|i| !right[*i].is_empty());
    for g in &shapes {
        if !guard_moved(g) {
            conds.push(guard_sql(g, &cur));
        }
    }
    // One left item and one changed equi-join filter standing alone (a top-level test, not
    // inside a guard) on one right item: counts per changed key.
    let alone = |i: usize| i < top.len();
    if let ([i], [it]) = (moved.as_slice(), items) {
        let e = exists[*i];
        if let Some(keys) = match (&it.from, e.items.as_slice()) {
            (ItemFrom::Tree(_), _) => None,
            (_, [r]) if alone(*i) && !matches!(r.from, ItemFrom::Tree(_)) => {
                keyed::split(e.filter.ast(), &side(sources, it), &side(sources, r), true)
            }
            _ => None,
        } {
            let cur = items_cur(sources, items);
            let k = fresh(&format!("{i}|{}|{cur}", e.filter));
            let j = keyed::join_changed(&keys, &cur, &items_cur(sources, &e.items), &right[*i], k);
            let now = holds(e, &j.now);
            let before = holds(e, &format!("{} - {}", j.now, j.delta));
            conds.push(format!("(({now}) <> ({before}))"));
            out.push(Term {
                from: j.from,
                conds,
                mult: vec![format!("CASE WHEN {now} THEN 1 ELSE -1 END")],
            });
            return out;
        }
    }
    let mut from = items_cur(sources, items);
    // The candidates as one FROM item under the left table's alias, when they can be named so.
    let mut candidates = None;
    // Per changed filter: a left row is a candidate when one of the right
    // side's change terms matches it.
    let touched = |i: usize| -> Vec<String> {
        right[i]
            .iter()
            .map(|d| {
                let mut c = d.conds.clone();
                c.push(exists[i].filter.to_string());
                format!(
                    "EXISTS (SELECT 1 FROM {} WHERE {})",
                    d.from,
                    c.join(" AND ")
                )
            })
            .collect()
    };
    match (moved.as_slice(), items) {
        // One left table, one changed filter: the candidates are picked before the counts are
        // taken (inside a subquery, so the filter's names resolve as the user wrote them).
        ([i], [it]) if !matches!(it.from, ItemFrom::Tree(_)) => {
            let any = touched(*i);
            from = format!(
                "(SELECT * FROM {from} WHERE {}) AS {}",
                any.join(" OR "),
                it.alias
            );
            if let ItemFrom::Source(src) = it.from {
                candidates = Some((it.alias.clone(), src, from.clone()));
            }
        }
        _ => {
            let any: Vec<String> = moved.iter().flat_map(|i| touched(*i)).collect();
            conds.push(format!("({})", any.join(" OR ")));
        }
    }
    // Each changed test's count now (`n`) and net change (`d`) per candidate row.
    let mut counts: Vec<Option<(String, String)>> = vec![None; exists.len()];
    for i in &moved {
        let e = exists[*i];
        let k = fresh(&format!("{i}|{}|{}", e.filter, from));
        let (n, d) = (format!("_mv_n{k}"), format!("_mv_d{k}"));
        // A single right table is counted only over its rows matching some candidate (see
        // `outer::restricted_count`): DuckDB would otherwise group all of it by the correlation.
        // The restriction evaluates the filter with both tables in one scope, where the
        // subquery's own table came first: only safe when no unqualified name can change table.
        let count = match (&candidates, e.items.as_slice()) {
            (Some((alias, l, cand)), [r]) if same_scope_safe(sources, alias, *l, r) => {
                restricted_count(&items_cur(sources, &e.items), &r.alias, cand, &e.filter)
            }
            _ => count_now(e),
        };
        from.push_str(&format!(
            ", LATERAL ({}) AS {n}, LATERAL ({}) AS {d}",
            count,
            delta_sum_query(&right[*i], &e.filter, "d")
        ));
        counts[*i] = Some((n, d));
    }
    let now_of = |i: usize| match &counts[i] {
        Some((n, _)) => holds(exists[i], &format!("{n}.n")),
        None => cur(i),
    };
    let before_of = |i: usize| match &counts[i] {
        Some((n, d)) => holds(exists[i], &format!("{n}.n - {d}.d")),
        None => cur(i),
    };
    let changed_guards: Vec<&(UserExpr, Vec<usize>)> =
        shapes.iter().filter(|g| guard_moved(g)).collect();
    let now: Vec<String> = changed_guards
        .iter()
        .map(|g| guard_sql(g, &now_of))
        .collect();
    let before: Vec<String> = changed_guards
        .iter()
        .map(|g| guard_sql(g, &before_of))
        .collect();
    let (now, before) = (now.join(" AND "), before.join(" AND "));
    conds.push(format!("(({now}) <> ({before}))"));
    out.push(Term {
        from,
        conds,
        mult: vec![format!("CASE WHEN {now} THEN 1 ELSE -1 END")],
    });
    out
}

/// Whether the left table `l` (under `alias`) and the right item `r` can share one scope
/// without a name binding differently: distinct aliases, and no column name in common.
fn same_scope_safe(sources: &[Source], alias: &str, l: usize, r: &Item) -> bool {
    let ItemFrom::Source(ri) = r.from else {
        return false;
    };
    !r.alias.eq_ignore_ascii_case(alias)
        && !sources[l].columns.iter().any(|c| {
            sources[ri]
                .columns
                .iter()
                .any(|d| d.eq_ignore_ascii_case(c))
        })
}
