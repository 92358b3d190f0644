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

use sqlparser::ast::{
    Distinct, Expr, LimitClause, OrderBy, OrderByExpr, OrderByKind, OrderBySort, SetExpr, Value,
};

use super::text::parse_query;

/// A definition with its final ORDER BY taken apart.
#[derive(Debug, PartialEq)]
pub struct Split {
    /// The query to maintain: the definition without its ORDER BY.
    pub query: String,
    /// The ORDER BY clause for the user-facing view, over output positions.
    pub order_by: Option<String>,
    /// The LIMIT/OFFSET taken off with the ORDER BY (`LIMIT 10 OFFSET 5`), applied where the
    /// ordered rows are read.
    pub limit: Option<String>,
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

/// `LIMIT n [OFFSET m]` with constant counts, as the clause to apply; None for anything else.
fn constant_limit(clause: &LimitClause) -> Option<String> {
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
    let mut out = Vec::new();
    if let Some(l) = limit {
        out.push(format!("LIMIT {}", number(l)?));
    }
    if let Some(o) = offset {
        out.push(format!("OFFSET {}", number(&o.value)?));
    }
    Some(out.join(" "))
}

/// The ORDER BY over output positions, or why it cannot be written so.
fn positional(order: &OrderBy, names: &[String]) -> Result<String, String> {
    if order.interpolate.is_some() {
        return Err("it interpolates".into());
    }
    match &order.kind {
        OrderByKind::All(options) => Ok(format!("ORDER BY ALL{options}")),
        OrderByKind::Expressions(items) if is_all(items, names) => {
            Ok(format!("ORDER BY ALL{}", items[0].options))
        }
        OrderByKind::Expressions(items) => {
            let parts: Result<Vec<String>, String> =
                items.iter().map(|item| position(item, names)).collect();
            Ok(format!("ORDER BY {}", parts?.join(", ")))
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

fn position(item: &OrderByExpr, names: &[String]) -> Result<String, String> {
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
        Some(p) => Ok(format!("{p}{}", item.options)),
        None => Err(format!(
            "it sorts by {}, which is not a column of the view",
            item.expr
        )),
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
        assert_eq!(
            s.order_by.as_deref(),
            Some("ORDER BY 2 DESC NULLS LAST, 1, 1")
        );
        assert_eq!(s.dropped, None);
        let all = split("SELECT DISTINCT g FROM t ORDER BY ALL DESC", &names(&["g"]));
        assert_eq!(all.order_by.as_deref(), Some("ORDER BY ALL DESC"));
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
        assert_eq!(s.order_by.as_deref(), Some("ORDER BY 2 DESC, 1"));
        assert_eq!(s.limit.as_deref(), Some("LIMIT 3 OFFSET 1"));
        let offset = split("SELECT k FROM t ORDER BY k OFFSET 1", &names(&["k"]));
        assert_eq!(offset.limit.as_deref(), Some("OFFSET 1"));
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
