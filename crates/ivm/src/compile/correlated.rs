//! Correlated scalar subqueries over an ungrouped aggregate, compared in a WHERE conjunct —
//! TPC-H Q17's `l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey =
//! p_partkey)`. Correlated by equal columns only, such a subquery is, for each outer row, the
//! one group of `(SELECT l_partkey, 0.2 * avg(l_quantity) FROM lineitem GROUP BY l_partkey)`
//! whose key equals the outer column — or, when no group has that key, the aggregate over no
//! rows. The block therefore reads the grouped query as a derived table joined on the keys,
//! which is the same block when two things hold:
//! - the aggregate over no rows is NULL (`sum`, `avg`, `min`; not `count`), and the conjunct is
//!   NULL whenever the subquery is (a comparison whose path to the subquery passes only
//!   operators that return NULL for a NULL operand), so an outer row without a group is
//!   dropped by both forms;
//! - the keys and the outer columns have the same types, so at most one group equals an outer
//!   row (`'01'` and `'1'` are two groups yet both equal the integer 1).
//!
//! The derived aggregate is then maintained like any aggregate read as a relation (`subagg`):
//! a refresh recomputes the groups the change touches, and the outer rows that read them.

use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, Query, Select, SelectItem, SetExpr, TableWithJoins,
    UnaryOperator,
};

use super::probe::Probe;
use super::Analyzer;

/// A subquery read as a grouped derived table: the grouped query, for each of its keys
/// (`__mv_k1`, …) the outer expression it must equal, and the aggregate over no rows when that
/// is not NULL (`count`: 0), as a constant of its type.
pub(super) struct Decorrelated {
    pub query: Query,
    pub outer: Vec<Expr>,
    pub empty: Option<Expr>,
}

/// The derived table's key columns.
pub(super) fn key_name(i: usize) -> String {
    format!("__mv_k{}", i + 1)
}

/// The subqueries of a WHERE conjunct that the conjunct is NULL for whenever they are: the
/// conjunct is a comparison, and the path down to each passes only NULL-propagating
/// operators.
pub(super) fn strict_subqueries(conjunct: &mut Expr) -> Vec<&mut Expr> {
    let mut out = Vec::new();
    if let Expr::BinaryOp { left, op, right } = conjunct {
        if comparison(op) {
            strict_walk(left, &mut out);
            strict_walk(right, &mut out);
        }
    }
    out
}

fn comparison(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Eq | NotEq | Lt | LtEq | Gt | GtEq)
}

fn strict_walk<'e>(e: &'e mut Expr, out: &mut Vec<&'e mut Expr>) {
    use BinaryOperator::*;
    match e {
        Expr::Subquery(_) => out.push(e),
        Expr::Nested(x) | Expr::Cast { expr: x, .. } => strict_walk(x, out),
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => strict_walk(expr, out),
        Expr::BinaryOp {
            left,
            op: Plus | Minus | Multiply | Divide,
            right,
        } => {
            strict_walk(left, out);
            strict_walk(right, out);
        }
        _ => {}
    }
}

/// `alias.__mv_k1 = outer_1, …`: the derived table `alias` joined to the outer row's group.
pub(super) fn joined_on(alias: &str, outer: Vec<Expr>) -> Vec<Expr> {
    outer
        .into_iter()
        .enumerate()
        .map(|(i, o)| Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![
                Ident::new(alias),
                Ident::new(key_name(i)),
            ])),
            op: BinaryOperator::Eq,
            right: Box::new(o),
        })
        .collect()
}

/// The top-level conjuncts of a WHERE clause.
pub(super) fn conjuncts(e: Expr) -> Vec<Expr> {
    crate::user_expr::conjuncts(&e)
        .into_iter()
        .cloned()
        .collect()
}

/// `c1 AND c2 AND …`, or None for no conjunct.
pub(super) fn and_all(parts: Vec<Expr>) -> Option<Expr> {
    parts.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    })
}

impl Analyzer<'_> {
    /// The SELECT of `q` and its one select-list expression, when `q` is an ungrouped aggregate
    /// without clauses that could leave it without its one row (WITH, ORDER BY, LIMIT, HAVING,
    /// DISTINCT).
    pub(super) fn one_value<'q>(&self, q: &'q Query) -> Option<(&'q Select, &'q Expr)> {
        let plain = super::support::bare_query(q);
        let SetExpr::Select(inner) = q.body.as_ref() else {
            return None;
        };
        let ungrouped = matches!(&inner.group_by, GroupByExpr::Expressions(k, _) if k.is_empty());
        let [SelectItem::UnnamedExpr(value) | SelectItem::ExprWithAlias { expr: value, .. }] =
            inner.projection.as_slice()
        else {
            return None;
        };
        if !plain || !ungrouped || inner.having.is_some() || inner.distinct.is_some() {
            return None;
        }
        self.is_aggregate(inner).then_some((inner.as_ref(), value))
    }

    /// `q` read as a grouped derived table, when it is an ungrouped aggregate correlated to the
    /// block by `inner = outer` column conjuncts only and both conditions of the module hold —
    /// the first only when `null_when_empty`; otherwise the reader puts the value over no rows
    /// in place of a missing group. `outer_from` is the block's FROM, to learn the outer
    /// columns' types. `probe` holds the CTEs in scope, for the probes DuckDB binds.
    pub(super) fn decorrelate(
        &mut self,
        q: &Query,
        outer_from: &[TableWithJoins],
        probe: &Probe,
        null_when_empty: bool,
    ) -> Option<Decorrelated> {
        let (inner, value) = self.one_value(q)?;
        let from = inner.from.clone();
        let mut keys = Vec::new();
        let mut outer = Vec::new();
        let mut rest = Vec::new();
        for c in inner.selection.clone().map(conjuncts).unwrap_or_default() {
            match self.correlation(&c, &from, probe) {
                Some((i, o)) => {
                    keys.push(i);
                    outer.push(o);
                }
                None => rest.push(c),
            }
        }
        if keys.is_empty() {
            return None;
        }
        let mut grouped = q.clone();
        let SetExpr::Select(s) = grouped.body.as_mut() else {
            return None;
        };
        s.selection = and_all(rest);
        s.projection = keys
            .iter()
            .enumerate()
            .map(|(i, k)| SelectItem::ExprWithAlias {
                expr: k.clone(),
                alias: Ident::new(key_name(i)),
            })
            .chain(std::iter::once(SelectItem::ExprWithAlias {
                expr: value.clone(),
                alias: Ident::new(super::scalar::VALUE),
            }))
            .collect();
        s.group_by = GroupByExpr::Expressions(keys.clone(), Vec::new());
        if !self.db.binds_alone(&probe.query(&grouped).to_string()) {
            return None;
        }
        let empty = self.value_when_empty(value, &from, probe)?;
        if null_when_empty && empty.is_some() {
            return None;
        }
        let key_types = self.types(&probe.select(&keys, &from, None))?;
        let outer_types = self.types(&probe.select(&outer, outer_from, None))?;
        if key_types != outer_types {
            return None;
        }
        Some(Decorrelated {
            query: grouped,
            outer,
            empty,
        })
    }

    /// `(inner, outer)` when `c` is `x = y` of two columns of which exactly one is the
    /// subquery's own (SQL resolves a name in the innermost scope that has it).
    fn correlation(
        &mut self,
        c: &Expr,
        from: &[TableWithJoins],
        probe: &Probe,
    ) -> Option<(Expr, Expr)> {
        let (left, right) = crate::user_expr::equality(c)?;
        let column = |e: &Expr| matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        if !column(left) || !column(right) {
            return None;
        }
        let mut own = |e: &Expr| {
            let sql = probe
                .select(std::slice::from_ref(e), from, None)
                .to_string();
            self.db.binds_alone(&sql)
        };
        match (own(left), own(right)) {
            (true, false) => Some((left.clone(), right.clone())),
            (false, true) => Some((right.clone(), left.clone())),
            _ => None,
        }
    }

    /// The aggregate expression `value` over no rows: None when it cannot be asked, Some(None)
    /// when it is NULL, else the constant `CAST('text' AS type)`.
    fn value_when_empty(
        &mut self,
        value: &Expr,
        from: &[TableWithJoins],
        probe: &Probe,
    ) -> Option<Option<Expr>> {
        let probe = probe.value_over_no_rows(value, from).to_string();
        if !self.db.binds_alone(&probe) {
            return None;
        }
        match self.db.query(&probe).ok()?.as_slice() {
            [row] => match (row.first()?, row.get(1)?) {
                (None, _) => Some(None),
                (Some(text), Some(ty)) => {
                    let constant = crate::ir::Expr::Str(text.clone()).cast(ty);
                    Some(Some(constant.to_ast()))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The column types of `select`, when it binds on its own.
    fn types(&mut self, select: &Query) -> Option<Vec<String>> {
        let select = select.to_string();
        if !self.db.binds_alone(&select) {
            return None;
        }
        let rows = self.db.query(&format!("DESCRIBE {select}")).ok()?;
        Some(
            rows.into_iter()
                .map(|r| r.get(1).cloned().flatten().unwrap_or_default())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::DuckDbDialect;
    use sqlparser::parser::Parser;

    fn expr(sql: &str) -> Expr {
        Parser::new(&DuckDbDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn strict_paths_reach_subqueries_under_arithmetic_only() {
        let mut e = expr("x < 0.5 * -(SELECT avg(v) FROM t)");
        assert_eq!(strict_subqueries(&mut e).len(), 1);
        // coalesce turns a NULL subquery into a value: the row would stay.
        let mut e = expr("x < coalesce((SELECT avg(v) FROM t), 0)");
        assert!(strict_subqueries(&mut e).is_empty());
        // Not a comparison: `(SELECT …) IS NULL` holds exactly when there is no group.
        let mut e = expr("(SELECT avg(v) FROM t) IS NULL");
        assert!(strict_subqueries(&mut e).is_empty());
    }

    #[test]
    fn conjuncts_split_and_join_back() {
        let parts = conjuncts(expr("a = 1 AND (b = 2 AND c = 3) AND (d = 4 OR e = 5)"));
        assert_eq!(parts.len(), 4);
        assert_eq!(conjuncts(and_all(parts).unwrap()).len(), 4);
        assert!(and_all(Vec::new()).is_none());
    }
}
