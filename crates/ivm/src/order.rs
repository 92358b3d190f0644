//! A definition's final ORDER BY: the order of a view's rows is not part of its contents, so the
//! view is maintained from the query without it, and the order is applied where users read the
//! rows — the user-facing view sorts the storage's output, the way `SELECT * FROM` a PostgreSQL
//! materialized view returns the rows in the order its last refresh wrote them.
//!
//! With a constant LIMIT/OFFSET (top-k), the whole result is maintained and the limit applied
//! where the view's rows are read (the output view), so deleting one of the top rows brings the
//! next one in without recomputing anything: the kept result is the buffer beyond k.
//!
//! The kept clause names output columns by position (`ORDER BY 2 DESC, 1`), so it means the same
//! over the output view whatever the view's column names (`CREATE MATERIALIZED VIEW v (a, b)`).
//! With FETCH, a limit that is not a constant, or DISTINCT ON, the definition is left whole.
//!
//! An ORDER BY that sorts by something the select list does not show cannot be applied there:
//! the view is still maintained incrementally, its rows come back unordered, and a NOTICE says
//! so.

use std::fmt;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    Distinct, Expr, LimitClause, OrderBy, OrderByExpr, OrderByKind, OrderByOptions, OrderBySort,
    SetExpr, Value,
};

use super::ir;
use super::text::parse_query;

/// How a view's rows are sorted where they are read: by all columns, or by output positions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Order {
    All(Dir),
    Positions(Vec<(usize, Dir)>),
}

/// `[ASC | DESC] [NULLS FIRST | LAST]`, each None when the definition did not say.
pub type Dir = ir::Sort;

/// A constant `LIMIT n` and/or `OFFSET m`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

impl Order {
    pub fn to_ir(&self) -> ir::OrderBy {
        match self {
            Order::All(d) => ir::OrderBy::All(*d),
            Order::Positions(items) => ir::OrderBy::Exprs(
                items
                    .iter()
                    .map(|(p, d)| (ir::Expr::Int(*p as i64), *d))
                    .collect(),
            ),
        }
    }
}

/// The direction of an ORDER BY item as the definition wrote it.
fn dir_of(options: &OrderByOptions) -> Dir {
    Dir {
        asc: match options.sort {
            Some(OrderBySort::Asc) => Some(true),
            Some(OrderBySort::Desc) => Some(false),
            // USING is refused before an order is read (see `position`).
            _ => None,
        },
        nulls_first: options.nulls_first,
    }
}

/// As the strategy shows it: `LIMIT 2 OFFSET 1`.
impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [("LIMIT", self.limit), ("OFFSET", self.offset)]
            .iter()
            .filter_map(|(word, n)| n.map(|n| format!("{word} {n}")))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// A definition with its final ORDER BY taken apart.
#[derive(Debug, PartialEq)]
pub struct Split {
    /// The query to maintain: the definition without its ORDER BY.
    pub query: String,
    /// The order for the user-facing view, over output positions.
    pub order_by: Option<Order>,
    /// The LIMIT/OFFSET taken off with the ORDER BY, applied where the ordered rows are read.
    pub limit: Option<Limit>,
    /// Why an ORDER BY was dropped, for a NOTICE.
    pub dropped: Option<String>,
}

/// Splits `query` (whose output columns are `names`, as the query itself names them). A query
/// without a final ORDER BY, with LIMIT/OFFSET/FETCH, or that does not parse stays as it is.
pub fn split(query: &str, names: &[String]) -> Split {
    let unchanged = || Split {
        query: query.to_string(),
        order_by: None,
        limit: None,
        dropped: None,
    };
    let Some(mut q) = parse_query(query) else {
        return unchanged();
    };
    // DISTINCT ON keeps the first row of each group in this order: the order decides the
    // contents.
    let distinct_on = matches!(q.body.as_ref(), SetExpr::Select(s) if matches!(s.distinct, Some(Distinct::On(_))));
    if q.fetch.is_some() || distinct_on {
        return unchanged();
    }
    let limit = match &q.limit_clause {
        None => None,
        Some(clause) => match constant_limit(clause) {
            Some(l) => Some(l),
            None => return unchanged(),
        },
    };
    // A limit without an order picks any rows: left to the query.
    let Some(order) = q.order_by.take() else {
        return unchanged();
    };
    q.limit_clause = None;
    let stripped = q.to_string();
    match positional(&order, names) {
        Ok(clause) => Split {
            query: stripped,
            order_by: Some(clause),
            limit,
            dropped: None,
        },
        // The rows a limit keeps depend on the order: the query stays whole.
        Err(_) if limit.is_some() => unchanged(),
        Err(why) => Split {
            query: stripped,
            order_by: None,
            limit: None,
            dropped: Some(why),
        },
    }
}

/// `LIMIT n [OFFSET m]` with constant counts; None for anything else.
fn constant_limit(clause: &LimitClause) -> Option<Limit> {
    let number = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<u64>().ok(),
            _ => None,
        },
        _ => None,
    };
    let LimitClause::LimitOffset {
        limit,
        offset,
        limit_by,
    } = clause
    else {
        return None;
    };
    if !limit_by.is_empty() {
        return None;
    }
    Some(Limit {
        limit: match limit {
            Some(l) => Some(number(l)?),
            None => None,
        },
        offset: match offset {
            Some(o) => Some(number(&o.value)?),
            None => None,
        },
    })
}

/// The ORDER BY over output positions, or why it cannot be written so.
fn positional(order: &OrderBy, names: &[String]) -> Result<Order, String> {
    if order.interpolate.is_some() {
        return Err("it interpolates".into());
    }
    match &order.kind {
        OrderByKind::All(options) if matches!(options.sort, Some(OrderBySort::Using(_))) => {
            Err(format!("it sorts by ALL{options}"))
        }
        OrderByKind::All(options) => Ok(Order::All(dir_of(options))),
        OrderByKind::Expressions(items) if is_all(items, names) => {
            Ok(Order::All(dir_of(&items[0].options)))
        }
        OrderByKind::Expressions(items) => {
            let parts: Result<Vec<(usize, Dir)>, String> =
                items.iter().map(|item| position(item, names)).collect();
            Ok(Order::Positions(parts?))
        }
    }
}

/// `ORDER BY ALL` as a dialect without it parses it: one unquoted name `all` that is not a
/// column.
fn is_all(items: &[OrderByExpr], names: &[String]) -> bool {
    match items {
        [OrderByExpr {
            expr: Expr::Identifier(id),
            ..
        }] => {
            id.quote_style.is_none()
                && id.value.eq_ignore_ascii_case("all")
                && !names.iter().any(|n| n.eq_ignore_ascii_case("all"))
        }
        _ => false,
    }
}

fn position(item: &OrderByExpr, names: &[String]) -> Result<(usize, Dir), String> {
    if item.with_fill.is_some() || matches!(item.options.sort, Some(OrderBySort::Using(_))) {
        return Err(format!("it sorts by {item}"));
    }
    let pos = match &item.expr {
        Expr::Identifier(id) => names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&id.value))
            .map(|i| i + 1),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n
                .parse::<usize>()
                .ok()
                .filter(|p| (1..=names.len()).contains(p)),
            _ => None,
        },
        _ => None,
    };
    match pos {
        Some(p) => Ok((p, dir_of(&item.options))),
        None => Err(format!(
            "it sorts by {}, which is not a column of the view",
            item.expr
        )),
    }
}

/// Plans stored before the order was typed kept it as the clause text this module wrote
/// (`ORDER BY 2 DESC NULLS LAST, 1`, `ORDER BY ALL`, `LIMIT 3 OFFSET 1`): read either form.
pub mod stored {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    use super::{Dir, Limit, Order};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored<T> {
        Typed(T),
        Text(String),
    }

    fn read<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
        legacy: fn(&str) -> Option<T>,
    ) -> Result<Option<T>, D::Error> {
        match Option::<Stored<T>>::deserialize(d)? {
            None => Ok(None),
            Some(Stored::Typed(t)) => Ok(Some(t)),
            Some(Stored::Text(text)) => legacy(&text)
                .map(Some)
                .ok_or_else(|| D::Error::custom(format!("unreadable stored clause: {text}"))),
        }
    }

    pub fn order<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Order>, D::Error> {
        read(d, order_text)
    }

    pub fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit>, D::Error> {
        read(d, limit_text)
    }

    /// `[ASC|DESC] [NULLS FIRST|LAST]` as words.
    fn dir(words: &[&str]) -> Option<Dir> {
        let mut d = Dir::default();
        let mut rest = words;
        if let Some((w, tail)) = rest.split_first() {
            if let Some(asc) = matches_word(w, "ASC", "DESC") {
                d.asc = Some(asc);
                rest = tail;
            }
        }
        match rest {
            [] => Some(d),
            [n, w] if n.eq_ignore_ascii_case("NULLS") => {
                d.nulls_first = Some(matches_word(w, "FIRST", "LAST")?);
                Some(d)
            }
            _ => None,
        }
    }

    /// Some(true) for `yes`, Some(false) for `no`, None for another word.
    fn matches_word(w: &str, yes: &str, no: &str) -> Option<bool> {
        match w {
            _ if w.eq_ignore_ascii_case(yes) => Some(true),
            _ if w.eq_ignore_ascii_case(no) => Some(false),
            _ => None,
        }
    }

    fn order_text(text: &str) -> Option<Order> {
        let items = text.trim().strip_prefix("ORDER BY ")?;
        let words = |item: &str| {
            item.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let first = words(items);
        if first.first().is_some_and(|w| w.eq_ignore_ascii_case("ALL")) {
            let rest: Vec<&str> = first[1..].iter().map(String::as_str).collect();
            return Some(Order::All(dir(&rest)?));
        }
        let positions = items.split(',').map(|item| {
            let w = words(item);
            let rest: Vec<&str> = w.iter().skip(1).map(String::as_str).collect();
            Some((w.first()?.parse().ok()?, dir(&rest)?))
        });
        positions.collect::<Option<Vec<_>>>().map(Order::Positions)
    }

    fn limit_text(text: &str) -> Option<Limit> {
        let mut out = Limit {
            limit: None,
            offset: None,
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        for pair in words.chunks(2) {
            let n = pair.get(1)?.parse().ok()?;
            match pair[0] {
                "LIMIT" => out.limit = Some(n),
                "OFFSET" => out.offset = Some(n),
                _ => return None,
            }
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn clauses_stored_as_text_read_back_typed() {
            let desc_last = Dir {
                asc: Some(false),
                nulls_first: Some(false),
            };
            assert_eq!(
                order_text("ORDER BY 2 DESC NULLS LAST, 1"),
                Some(Order::Positions(vec![(2, desc_last), (1, Dir::default())]))
            );
            assert_eq!(
                order_text("ORDER BY ALL DESC"),
                Some(Order::All(Dir {
                    asc: Some(false),
                    nulls_first: None
                }))
            );
            assert_eq!(order_text("ORDER BY v + k"), None);
            let l = limit_text("LIMIT 3 OFFSET 1").unwrap();
            assert_eq!((l.limit, l.offset), (Some(3), Some(1)));
            assert_eq!(limit_text("OFFSET 4").unwrap().to_string(), "OFFSET 4");
        }

        /// A plan stored with text clauses, and one stored typed, read the same.
        #[test]
        fn plans_read_either_form() {
            #[derive(Deserialize)]
            struct P {
                #[serde(default, deserialize_with = "order")]
                order_by: Option<Order>,
                #[serde(default, deserialize_with = "limit")]
                limit: Option<Limit>,
            }
            let old: P =
                serde_json::from_str(r#"{"order_by":"ORDER BY 1","limit":"LIMIT 2"}"#).unwrap();
            let new: P = serde_json::from_str(
                r#"{"order_by":{"Positions":[[1,{"asc":null,"nulls_first":null}]]},
                    "limit":{"limit":2,"offset":null}}"#,
            )
            .unwrap();
            assert_eq!((&old.order_by, old.limit), (&new.order_by, new.limit));
            let none: P = serde_json::from_str("{}").unwrap();
            assert_eq!((none.order_by, none.limit), (None, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn output_columns_become_positions() {
        let s = split(
            "SELECT g, sum(v) AS s FROM t GROUP BY g ORDER BY s DESC NULLS LAST, G, 1",
            &names(&["g", "s"]),
        );
        assert_eq!(s.query, "SELECT g, sum(v) AS s FROM t GROUP BY g");
        let desc_last = Dir {
            asc: Some(false),
            nulls_first: Some(false),
        };
        let plain = Dir::default();
        assert_eq!(
            s.order_by,
            Some(Order::Positions(vec![
                (2, desc_last),
                (1, plain),
                (1, plain)
            ]))
        );
        assert_eq!(s.dropped, None);
        let all = split("SELECT DISTINCT g FROM t ORDER BY ALL DESC", &names(&["g"]));
        let desc = Dir {
            asc: Some(false),
            nulls_first: None,
        };
        assert_eq!(all.order_by, Some(Order::All(desc)));
    }

    #[test]
    fn an_order_outside_the_select_list_is_dropped_with_a_reason() {
        let s = split("SELECT k FROM t ORDER BY v + k", &names(&["k"]));
        assert_eq!(s.query, "SELECT k FROM t");
        assert_eq!(s.order_by, None);
        assert!(s.dropped.unwrap().contains("v + k"));
        let out_of_range = split("SELECT k FROM t ORDER BY 2", &names(&["k"]));
        assert_eq!(out_of_range.order_by, None);
    }

    #[test]
    fn a_constant_limit_is_taken_off_with_its_order() {
        let s = split(
            "SELECT g, sum(v) AS s FROM t GROUP BY g ORDER BY s DESC, g LIMIT 3 OFFSET 1",
            &names(&["g", "s"]),
        );
        assert_eq!(s.query, "SELECT g, sum(v) AS s FROM t GROUP BY g");
        let desc = Dir {
            asc: Some(false),
            nulls_first: None,
        };
        assert_eq!(
            s.order_by,
            Some(Order::Positions(vec![(2, desc), (1, Dir::default())]))
        );
        assert_eq!(
            s.limit.map(|l| l.to_string()).as_deref(),
            Some("LIMIT 3 OFFSET 1")
        );
        let offset = split("SELECT k FROM t ORDER BY k OFFSET 1", &names(&["k"]));
        assert_eq!(
            offset.limit.map(|l| l.to_string()).as_deref(),
            Some("OFFSET 1")
        );
    }

    #[test]
    fn limits_and_plain_queries_stay_as_they_are() {
        for q in [
            "SELECT k FROM t LIMIT 3",
            "SELECT k FROM t ORDER BY v LIMIT 3",
            "SELECT k FROM t ORDER BY k LIMIT (SELECT 2)",
            "SELECT k FROM t ORDER BY k FETCH FIRST 2 ROWS ONLY",
            "SELECT DISTINCT ON (g) g, k FROM t ORDER BY g, k",
            "SELECT k FROM t",
            "SELECT k FROM (SELECT k FROM t ORDER BY k) AS s",
            "not sql at all",
        ] {
            let s = split(q, &names(&["k"]));
            assert_eq!((s.query.as_str(), s.order_by, s.dropped), (q, None, None));
            assert_eq!(s.limit, None);
        }
    }
}
