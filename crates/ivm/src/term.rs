//! Terms of a delta query. A term is one SELECT's FROM clause, its extra conditions and its
//! multiplicity as a product of factors; a relation's change is a UNION ALL of terms. Keeping the
//! user's aliases visible in every term lets the user's select list, WHERE and ON predicates be
//! reused unchanged over delta tables, outer-join padding and semi-join transitions alike.

use super::outer;
use super::plan::{rel_cur, rel_delta, Item, ItemFrom, Source};
use super::text::ident;
use super::user_expr::UserExpr;

#[derive(Debug, Clone, Default)]
pub struct Term {
    /// A FROM clause (possibly a comma list at block level; a single joined table inside trees).
    pub from: String,
    /// Conditions the term's rows must meet, each parenthesized.
    pub conds: Vec<String>,
    /// Factors of the row's multiplicity (empty: 1).
    pub mult: Vec<String>,
}

impl Term {
    pub fn cur(from: String) -> Term {
        Term {
            from,
            conds: Vec::new(),
            mult: Vec::new(),
        }
    }

    /// `CAST(f1 AS BIGINT) * f2 * ...`: the first factor fixes the type, so sums never overflow
    /// the narrower types of user columns.
    pub fn mult_sql(&self) -> String {
        let mut factors = self.mult.iter().map(|f| {
            if f.contains(' ') {
                format!("({f})")
            } else {
                f.clone()
            }
        });
        match factors.next() {
            None => "CAST(1 AS BIGINT)".to_string(),
            Some(first) => {
                let mut s = format!("CAST({first} AS BIGINT)");
                for f in factors {
                    s.push_str(&format!(" * {f}"));
                }
                s
            }
        }
    }

    /// ` WHERE c1 AND c2` or nothing.
    pub fn where_sql(&self) -> String {
        where_sql(&self.conds)
    }
}

/// ` WHERE c1 AND c2`, or nothing.
pub fn where_sql(conds: &[String]) -> String {
    if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
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
pub fn item_cur(sources: &[Source], item: &Item) -> String {
    match &item.from {
        ItemFrom::Source(i) => format!("{} AS {}", sources[*i].relation, item.alias),
        ItemFrom::Sub(rel) => format!("({}) AS {}", rel_cur(sources, rel), item.alias),
        ItemFrom::Tree(t) => outer::tree_cur(sources, t),
    }
}

/// A FROM item's change as terms (empty when nothing it reads changed).
pub fn item_delta(sources: &[Source], item: &Item, changed: &[bool]) -> Vec<Term> {
    match &item.from {
        ItemFrom::Source(i) => match (&sources[*i].delta, changed[*i]) {
            (Some(d), true) => vec![Term {
                from: format!("{d} AS {}", item.alias),
                conds: Vec::new(),
                mult: vec![format!("{}._mv_mult", item.alias)],
            }],
            _ => Vec::new(),
        },
        ItemFrom::Sub(r) => match rel_delta(sources, r, changed) {
            Some(d) => vec![Term {
                from: format!("({d}) AS {}", item.alias),
                conds: Vec::new(),
                mult: vec![format!("{}._mv_mult", item.alias)],
            }],
            None => Vec::new(),
        },
        ItemFrom::Tree(t) => outer::tree_delta(sources, t, changed),
    }
}

/// The items as they are now, comma-joined.
pub fn items_cur(sources: &[Source], items: &[Item]) -> String {
    items
        .iter()
        .map(|it| item_cur(sources, it))
        .collect::<Vec<_>>()
        .join(", ")
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
    let cur: Vec<String> = items.iter().map(|it| item_cur(sources, it)).collect();
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
                vec![Term::cur(cur[j].clone())]
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
    let cols: Vec<String> = src.columns.iter().map(|c| ident(c)).collect();
    let cols = cols.join(", ");
    Some(Term {
        from: format!(
            "(SELECT {cols}, CAST(1 AS BIGINT) AS _mv_mult FROM {} \
             UNION ALL SELECT {cols}, -_mv_mult FROM {delta}) AS {}",
            src.relation, item.alias
        ),
        conds: Vec::new(),
        mult: vec![format!("{}._mv_mult", item.alias)],
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
fn inclusion_exclusion(deltas: &[Vec<Term>], cur: &[String]) -> Vec<Term> {
    let n = deltas.len();
    let mut out = Vec::new();
    for mask in 1u32..(1u32 << n) {
        if (0..n).any(|i| mask & (1 << i) != 0 && deltas[i].is_empty()) {
            continue;
        }
        let sign = if mask.count_ones() % 2 == 1 {
            "1"
        } else {
            "-1"
        };
        let mut choices = vec![vec![Term {
            from: String::new(),
            conds: Vec::new(),
            mult: vec![sign.to_string()],
        }]];
        for i in 0..n {
            choices.push(if mask & (1 << i) != 0 {
                deltas[i].clone()
            } else {
                vec![Term::cur(cur[i].clone())]
            });
        }
        out.extend(product(choices));
    }
    out
}

fn join_comma(a: &Term, b: &Term) -> Term {
    let from = if a.from.is_empty() {
        b.from.clone()
    } else {
        format!("{}, {}", a.from, b.from)
    };
    let mut conds = a.conds.clone();
    conds.extend(b.conds.iter().cloned());
    let mut mult = a.mult.clone();
    mult.extend(b.mult.iter().cloned());
    Term { from, conds, mult }
}

/// `(SELECT coalesce(sum(m), 0) ...)`-style body: the net multiplicity of the delta terms'
/// rows that satisfy `pred` (correlated to the enclosing row), as a query yielding one value
/// named `alias_col`.
pub fn delta_sum_query(terms: &[Term], pred: &UserExpr, col: &str) -> String {
    if let [t] = terms {
        let mut conds = t.conds.clone();
        conds.push(format!("({pred})"));
        return format!(
            "SELECT coalesce(sum({}), 0) AS {col} FROM {} WHERE {}",
            t.mult_sql(),
            t.from,
            conds.join(" AND ")
        );
    }
    let parts: Vec<String> = terms
        .iter()
        .map(|t| {
            let mut conds = t.conds.clone();
            conds.push(format!("({pred})"));
            format!(
                "SELECT {} AS _mv_m FROM {} WHERE {}",
                t.mult_sql(),
                t.from,
                conds.join(" AND ")
            )
        })
        .collect();
    format!(
        "SELECT coalesce(sum(_mv_m), 0) AS {col} FROM ({}) AS _mv_u",
        parts.join(" UNION ALL ")
    )
}
