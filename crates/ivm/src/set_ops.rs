//! `EXCEPT` and `INTERSECT` (and their `ALL` forms) as a grouped count of each side: a row
//! that occurs `l` times on the left and `r` times on the right occurs
//!
//! | `INTERSECT ALL` | `INTERSECT`     | `EXCEPT ALL`   | `EXCEPT`          |
//! |-----------------|-----------------|----------------|-------------------|
//! | min(l, r)       | 1 if l, r > 0   | max(l − r, 0)  | 1 if l > 0, r = 0 |
//!
//! times in the result (set operations compare NULLs as equal, as GROUP BY does). So the view
//! is maintained as the aggregate
//! `SELECT cols, count(*) FILTER (WHERE side = 1), count(*) FILTER (WHERE side = 2) FROM
//! (left UNION ALL right) GROUP BY cols`, whose counts a change adjusts by its signs, and its
//! output keeps or repeats each group's row by those counts (see `plan::output_sql`). Both
//! sides may be any query the rest of the engine maintains.

use serde::{Deserialize, Serialize};
use sqlparser::ast::{SetExpr, SetOperator, SetQuantifier};

use super::ir::{self, Expr, Op};
use super::text::{ident, parse_query};

/// Which set operation a view's output applies to its two counts.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetOp {
    pub intersect: bool,
    pub all: bool,
}

/// The names of the two count columns the rewritten query adds after the view's own.
pub const LEFT: &str = "_mv_left";
pub const RIGHT: &str = "_mv_right";

/// The grouped count that maintains `query`, when it is one EXCEPT or INTERSECT of two queries
/// (whose output columns are `names`, all distinct).
pub fn rewrite(query: &str, names: &[String]) -> Option<(String, SetOp)> {
    let q = parse_query(query)?;
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return None;
    }
    let SetExpr::SetOperation {
        op,
        set_quantifier,
        left,
        right,
    } = q.body.as_ref()
    else {
        return None;
    };
    let intersect = match op {
        SetOperator::Intersect => true,
        SetOperator::Except | SetOperator::Minus => false,
        _ => return None,
    };
    let all = match set_quantifier {
        SetQuantifier::All => true,
        SetQuantifier::Distinct | SetQuantifier::None => false,
        _ => return None,
    };
    let distinct_names = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].iter().any(|m| m.eq_ignore_ascii_case(n)));
    if names.is_empty() || !distinct_names {
        return None;
    }
    let cols: Vec<String> = names.iter().map(|n| ident(n)).collect();
    let cols = cols.join(", ");
    let with = q.with.as_ref().map(|w| format!("{w} ")).unwrap_or_default();
    let sql = format!(
        "{with}SELECT {cols}, count(*) FILTER (WHERE _mv_side = 1) AS {LEFT}, \
         count(*) FILTER (WHERE _mv_side = 2) AS {RIGHT} FROM \
         (SELECT *, 1 AS _mv_side FROM ({left}) AS _mv_l UNION ALL \
         SELECT *, 2 AS _mv_side FROM ({right}) AS _mv_r) AS _mv_u GROUP BY {cols}"
    );
    Some((sql, SetOp { intersect, all }))
}

impl SetOp {
    /// `EXCEPT ALL`, `INTERSECT`, … as `duckmv.views.strategy` names it.
    pub fn name(&self) -> String {
        let op = if self.intersect {
            "INTERSECT"
        } else {
            "EXCEPT"
        };
        if self.all {
            format!("{op} ALL")
        } else {
            op.to_string()
        }
    }

    /// The times a group's row occurs in the result, over the aggregate's output `rel`:
    /// a count for the ALL forms (rows repeated), a condition otherwise (kept once).
    pub fn times(&self, rel: &'static str) -> Expr {
        let (l, r) = (ir::col(rel, LEFT), ir::col(rel, RIGHT));
        let some = |e: Expr| e.bin(Op::Gt, Expr::Int(0));
        let one_if = |c: Expr| ir::case(c, Expr::Int(1), Expr::Int(0));
        match (self.intersect, self.all) {
            (true, true) => ir::call("least", vec![l, r]),
            (false, true) => ir::call("greatest", vec![l - r, Expr::Int(0)]),
            (true, false) => one_if(some(l).and(some(r))),
            (false, false) => one_if(some(l).and(r.eq(Expr::Int(0)))),
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
    fn each_form_becomes_a_count_of_each_side() {
        let (sql, op) =
            rewrite("SELECT k FROM t EXCEPT ALL SELECT k FROM u", &names(&["k"])).unwrap();
        assert_eq!(
            op,
            SetOp {
                intersect: false,
                all: true
            }
        );
        assert!(
            sql.starts_with(r#"SELECT "k", count(*) FILTER (WHERE _mv_side = 1)"#),
            "{sql}"
        );
        assert!(
            sql.contains("FROM (SELECT k FROM t) AS _mv_l UNION ALL"),
            "{sql}"
        );
        assert!(sql.ends_with(r#"GROUP BY "k""#), "{sql}");
        let (_, op) = rewrite("SELECT k FROM t INTERSECT SELECT k FROM u", &names(&["k"])).unwrap();
        assert_eq!(
            op,
            SetOp {
                intersect: true,
                all: false
            }
        );
        let some = |c: &'static str| ir::col("o", c).bin(Op::Gt, Expr::Int(0));
        assert_eq!(
            op.times("o"),
            ir::case(some(LEFT).and(some(RIGHT)), Expr::Int(1), Expr::Int(0))
        );
    }

    #[test]
    fn other_queries_are_not_rewritten() {
        for q in [
            "SELECT k FROM t UNION SELECT k FROM u",
            "SELECT k FROM t",
            "SELECT k FROM t EXCEPT SELECT k FROM u ORDER BY 1 LIMIT 2",
        ] {
            assert_eq!(rewrite(q, &names(&["k"])), None, "{q}");
        }
        // Two output columns of one name cannot be grouped by name.
        assert_eq!(
            rewrite(
                "SELECT k, k FROM t EXCEPT SELECT k, k FROM u",
                &names(&["k", "k"])
            ),
            None
        );
    }
}
