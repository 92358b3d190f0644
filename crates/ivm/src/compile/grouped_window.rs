//! Window functions over a grouped query — `SELECT g, sum(v) AS s, rank() OVER (ORDER BY
//! sum(v) DESC) FROM t GROUP BY g`. SQL evaluates the windows after GROUP BY and HAVING, over
//! the groups' rows, so the block means the same as its windows over a derived table holding
//! the grouped query:
//!
//! ```sql
//! SELECT g', s', rank() OVER (ORDER BY a1 DESC) FROM
//!   (SELECT g AS __mv_g1, sum(v) AS __mv_a1 FROM t GROUP BY g) AS __mv_grouped
//! ```
//!
//! where every group key and every aggregate call of the select list and QUALIFY becomes a
//! column of that table. The grouped query is then maintained like any aggregate read as a
//! relation (`subagg`: a change replaces the groups it touches), and the windows like any
//! windows over a relation (`plan::windowed`: the partitions those groups fall in are
//! recomputed, over the groups' rows only, never over the base table).

use super::reasons::Why;
use sqlparser::ast::{Expr, GroupByExpr, Select, Value};

use super::lift::{derived, positional_or_alias, Lift};
use super::probe::Probe;
use super::support::aliased;
use super::{full, Analyzer, Scope, R};

/// The derived table's alias.
const GROUPED: &str = "__mv_grouped";

impl Analyzer<'_> {
    /// `s`, a grouped block with window functions, as its windows over the grouped block.
    pub(super) fn windows_over_groups(&mut self, s: &Select, scope: &Scope) -> R<Select> {
        // Aggregates in a named window's ORDER BY are lifted where the window is used.
        let s = &super::named_window::inline(s)?;
        let mut from_binds = None;
        let keys = self
            .explicit_keys(s)?
            .into_iter()
            .map(|k| self.alias_key(k, s, scope, &mut from_binds))
            .collect::<R<Vec<Expr>>>()?;
        let mut lift = Lift::new(self, GROUPED, &keys);
        let mut outer = s.clone();
        let mut others: Vec<&mut Expr> = outer.qualify.iter_mut().collect();
        lift.block(&mut outer.projection, &mut others)?;
        let inner = Select {
            projection: lift.columns(),
            qualify: None,
            distinct: None,
            group_by: GroupByExpr::Expressions(keys.clone(), Vec::new()),
            ..s.clone()
        };
        outer.from = derived(inner, GROUPED);
        outer.selection = None;
        outer.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
        outer.having = None;
        Ok(outer)
    }

    /// A GROUP BY name that is a select-list alias stands for the aliased expression unless the
    /// FROM clause has a column of that name, which DuckDB takes first. DuckDB is asked on a
    /// connection of its own (a failed bind would abort the user's transaction); when the FROM
    /// clause does not bind there (tables of this transaction), the view recomputes.
    /// `from_binds` keeps that answer for the block's other keys.
    fn alias_key(
        &mut self,
        k: Expr,
        s: &Select,
        scope: &Scope,
        from_binds: &mut Option<bool>,
    ) -> R<Expr> {
        if !positional_or_alias(&k, s) {
            return Ok(k);
        }
        let Expr::Identifier(name) = &k else {
            return full(Why::WindowOverAliasGroups);
        };
        let probe = Probe::new(scope);
        let mut binds = |e: &Expr| {
            let q = probe.select(std::slice::from_ref(e), &s.from, None);
            self.db.binds_alone(&q.to_string())
        };
        let one = Expr::value(Value::Number("1".into(), false));
        if !*from_binds.get_or_insert_with(|| binds(&one)) {
            return full(Why::WindowOverAliasGroups);
        }
        if binds(&k) {
            return Ok(k);
        }
        match aliased(s, &name.value) {
            Some(e) => Ok(e.clone()),
            None => full(Why::WindowOverAliasGroups),
        }
    }

    /// The GROUP BY keys as expressions: a position is the select item it numbers, GROUP BY
    /// ALL is [`Analyzer::group_by_all`]. Aliases are left as written.
    fn explicit_keys(&self, s: &Select) -> R<Vec<Expr>> {
        match &s.group_by {
            GroupByExpr::All(mods) if mods.is_empty() => self.group_by_all(s),
            GroupByExpr::Expressions(keys, mods) if mods.is_empty() => keys
                .iter()
                .map(|k| match k {
                    Expr::Value(v) => Self::position_key(s, &v.value),
                    other => Ok(other.clone()),
                })
                .collect(),
            _ => full(Why::GroupByModifiers),
        }
    }
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{Expr, SelectItem, SetExpr, TableFactor};

    use crate::compile::tests::Fake;
    use crate::compile::Analyzer;
    use crate::text::parse_query;

    fn select(q: &str) -> sqlparser::ast::Select {
        match *parse_query(q).unwrap().body {
            SetExpr::Select(s) => *s,
            other => panic!("not a select: {other}"),
        }
    }

    fn expr(e: &str) -> Expr {
        match &select(&format!("SELECT {e}")).projection[0] {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
            other => panic!("{other}"),
        }
    }

    fn items(s: &sqlparser::ast::Select) -> Vec<Expr> {
        s.projection
            .iter()
            .map(|p| match p {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
                other => panic!("{other}"),
            })
            .collect()
    }

    fn rewrite(q: &str) -> (sqlparser::ast::Select, sqlparser::ast::Select) {
        let mut db = Fake;
        let mut an = Analyzer::new(&mut db, 9).unwrap();
        let Ok(outer) = an.windows_over_groups(&select(q), &Vec::new()) else {
            panic!("not rewritten: {q}");
        };
        let [from] = outer.from.as_slice() else {
            panic!("one FROM item: {outer}");
        };
        let TableFactor::Derived { subquery, .. } = &from.relation else {
            panic!("not derived: {outer}");
        };
        let SetExpr::Select(inner) = subquery.body.as_ref() else {
            panic!("{subquery}");
        };
        (outer.clone(), *inner.clone())
    }

    #[test]
    fn keys_and_aggregates_become_columns_of_the_grouped_query() {
        let (outer, inner) = rewrite(
            "SELECT g, sum(v) AS s, rank() OVER (ORDER BY sum(v) DESC) AS r FROM t \
             WHERE v > 0 GROUP BY g HAVING count(*) > 1 QUALIFY r <= 2",
        );
        // The grouped query: the keys, then each aggregate call once; WHERE, GROUP BY and
        // HAVING stay with it.
        assert_eq!(items(&inner), [expr("g"), expr("sum(v)")]);
        assert_eq!(inner.selection, Some(expr("v > 0")));
        assert_eq!(inner.having, Some(expr("count(*) > 1")));
        assert!(inner.qualify.is_none());
        // The windows read its columns.
        assert_eq!(
            items(&outer),
            [
                expr("__mv_grouped.__mv_g1"),
                expr("__mv_grouped.__mv_a1"),
                expr("rank() OVER (ORDER BY __mv_grouped.__mv_a1 DESC)"),
            ]
        );
        // QUALIFY's alias is the expression it names.
        assert_eq!(
            outer.qualify,
            Some(expr(
                "rank() OVER (ORDER BY __mv_grouped.__mv_a1 DESC) <= 2"
            ))
        );
        assert!(outer.selection.is_none() && outer.having.is_none());
    }

    #[test]
    fn a_key_is_found_however_it_is_qualified() {
        let (outer, _) = rewrite(
            "SELECT t.g, k, row_number() OVER (PARTITION BY g ORDER BY count(*), t.k) AS rn \
             FROM t GROUP BY g, t.k",
        );
        assert_eq!(
            items(&outer),
            [
                expr("__mv_grouped.__mv_g1"),
                expr("__mv_grouped.__mv_g2"),
                expr(
                    "row_number() OVER (PARTITION BY __mv_grouped.__mv_g1 \
                     ORDER BY __mv_grouped.__mv_a1, __mv_grouped.__mv_g2)"
                ),
            ]
        );
    }

    #[test]
    fn a_window_may_order_by_a_select_alias() {
        let (outer, _) =
            rewrite("SELECT g, count(*) AS n, rank() OVER (ORDER BY n) AS r FROM t GROUP BY g");
        assert_eq!(
            items(&outer)[2],
            expr("rank() OVER (ORDER BY __mv_grouped.__mv_a1)")
        );
    }

    #[test]
    fn what_the_groups_cannot_answer_recomputes() {
        for (q, reason) in [
            (
                "SELECT g, rank() OVER (ORDER BY (SELECT max(k) FROM u WHERE u.k = t.k)) AS r \
                 FROM t GROUP BY g, k",
                "a subquery in a grouped query read through its groups",
            ),
            (
                "SELECT g, rank() OVER (ORDER BY nope) AS r FROM t GROUP BY g",
                "column nope in a grouped query read through its groups",
            ),
        ] {
            let mut db = Fake;
            let mut an = Analyzer::new(&mut db, 9).unwrap();
            let Err(crate::compile::Stop::Full(why)) =
                an.windows_over_groups(&select(q), &Vec::new())
            else {
                panic!("rewritten: {q}");
            };
            assert_eq!(why, reason, "{q}");
        }
    }

    #[test]
    fn positions_and_group_by_all_name_the_select_items() {
        let written = rewrite(
            "SELECT g, k % 2 AS p, sum(v) AS s, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY g, k % 2",
        );
        for q in [
            "SELECT g, k % 2 AS p, sum(v) AS s, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY 1, 2",
            "SELECT g, k % 2 AS p, sum(v) AS s, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY ALL",
        ] {
            let (outer, inner) = rewrite(q);
            assert_eq!(items(&outer), items(&written.0), "{q}");
            assert_eq!(inner.group_by, written.1.group_by, "{q}");
        }
        // Neither a constant nor a window without an aggregate is a key of GROUP BY ALL.
        let (_, inner) = rewrite(
            "SELECT g, 1 AS one, row_number() OVER () AS r, count(*) AS n FROM t GROUP BY ALL",
        );
        assert_eq!(
            inner.group_by,
            select("SELECT 1 FROM t GROUP BY g").group_by
        );
    }

    /// DuckDB on a connection of its own, as far as these tests need it: table t has columns k,
    /// g and v.
    struct Alone(Fake);

    impl crate::Sql for Alone {
        fn exec(&mut self, sql: &str) -> Result<u64, crate::DbError> {
            self.0.exec(sql)
        }
        fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, crate::DbError> {
            self.0.query(sql)
        }
        fn binds_alone(&mut self, sql: &str) -> bool {
            ["SELECT 1 FROM t", "SELECT k FROM t", "SELECT g FROM t"].contains(&sql)
        }
    }

    fn rewrite_alone(q: &str) -> Result<sqlparser::ast::Select, String> {
        let mut db = Alone(Fake);
        let mut an = Analyzer::new(&mut db, 9).unwrap();
        match an.windows_over_groups(&select(q), &Vec::new()) {
            Ok(s) => Ok(s),
            Err(crate::compile::Stop::Full(why)) => Err(why),
            Err(_) => Err("stopped otherwise".into()),
        }
    }

    #[test]
    fn a_group_by_alias_is_its_expression_unless_a_column_has_its_name() {
        // p is no column of t: the key is k % 2, as if written so.
        let by_alias = rewrite_alone(
            "SELECT k % 2 AS p, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY p",
        );
        let written = rewrite_alone(
            "SELECT k % 2 AS p, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY k % 2",
        );
        assert_eq!(by_alias.unwrap().to_string(), written.unwrap().to_string());
        // g is a column of t, so DuckDB groups by it, not by the item named g: that item is
        // then no key, and DuckDB itself refuses the definition.
        let by_column =
            rewrite_alone("SELECT g AS k, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY g");
        assert!(by_column.is_ok(), "{by_column:?}");
        let shadowed =
            rewrite_alone("SELECT g AS k, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY k");
        assert!(
            shadowed.is_err(),
            "k names t.k, which the select list does not show grouped"
        );
    }

    #[test]
    fn group_by_aliases_over_uncommitted_tables_recompute() {
        let q = "SELECT k % 2 AS p, rank() OVER (ORDER BY sum(v)) AS r FROM t GROUP BY p";
        let c = crate::compile::tests::compiled(q, 2);
        assert_eq!(
            c.full_reason.as_deref(),
            Some(
                "window functions over a GROUP BY of select-list aliases whose tables are not \
                 yet committed"
            ),
            "{q}"
        );
    }
}
