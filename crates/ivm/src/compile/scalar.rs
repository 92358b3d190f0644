//! Uncorrelated scalar subqueries over an ungrouped aggregate — `WHERE v > (SELECT avg(v) FROM
//! t)`, `SELECT k, (SELECT count(*) FROM u) FROM t`, `HAVING sum(x) > (SELECT sum(y) FROM u)`.
//! Such a subquery has exactly one row, so the block means the same as a cross join with it
//! as a derived table: the block reads `(SELECT agg AS __mv_value FROM …) AS __mv_scalar<n>`
//! and the subquery becomes `__mv_scalar<n>.__mv_value` (a GROUP BY key too in a grouped block: it is one
//! value). The derived aggregate is maintained like any aggregate read as a relation
//! (`subagg`): a change to its input replaces its one row, and the rows that read it.
//! Correlated ones compared in a WHERE conjunct become grouped derived tables (`correlated`)
//! joined on the correlated columns; in the select list of a block that does not aggregate,
//! and anywhere else in a WHERE clause, the same tables LEFT JOINed, so an outer row without a
//! group reads the aggregate over no rows (NULL, or a count's 0).

use sqlparser::ast::{
    Expr, GroupByExpr, Ident, Join, JoinConstraint, JoinOperator, Query, Select, SelectItem,
    SetExpr,
};

use super::probe::Probe;
use super::{correlated, levels, Analyzer, Scope, R};

impl Analyzer<'_> {
    /// `s` with each scalar subquery of its own level that qualifies turned into a column of a
    /// derived table; None when none does.
    pub(super) fn scalar_subqueries(&mut self, s: &Select, scope: &Scope) -> R<Option<Select>> {
        let probe = Probe::new(scope);
        // In a grouped block the value is a key. An ungrouped aggregate has no keys: there the
        // value may only filter rows (elsewhere it is a stray column, and the view recomputes).
        let grouped = matches!(&s.group_by, GroupByExpr::Expressions(keys, _) if !keys.is_empty());
        let mut out = s.clone();
        // The scalar subqueries of the block's own level (not those inside EXISTS or IN, whose
        // queries are their own blocks) that have one row.
        let mut derived = Vec::new();
        let mut one_row = |e: &mut Expr, depth: usize| {
            let Expr::Subquery(q) = &*e else { return };
            let Some(one) = (depth == 0).then(|| self.one_row(q, &probe)).flatten() else {
                return;
            };
            self.subquery_count += 1;
            let alias = format!("__mv_scalar{}", self.subquery_count);
            *e = column(&alias);
            derived.push((alias, one));
        };
        for item in &mut out.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                levels::visit(e, &mut one_row);
            }
        }
        levels::visit(&mut out.selection, &mut one_row);
        levels::visit(&mut out.having, &mut one_row);
        let correlated = self.correlated_in_where(&mut out, &mut derived, &probe);
        let joined_in_groups = self.correlated_in_groups(&mut out, &probe);
        let joined = self.correlated_left(&mut out, &probe) || joined_in_groups;
        if derived.is_empty() && !joined {
            return Ok(None);
        }
        if joined {
            self.features.insert("correlated scalar subquery");
        }
        let uncorrelated = derived.len() > correlated.len();
        for (alias, q) in derived {
            if let GroupByExpr::Expressions(keys, _) = &mut out.group_by {
                if grouped && !correlated.contains(&alias) {
                    keys.push(column(&alias));
                }
            }
            out.from.push(super::lift::derived_table(q, &alias));
        }
        if uncorrelated {
            self.features.insert("scalar subquery");
        }
        if !correlated.is_empty() {
            self.features.insert("correlated scalar subquery");
        }
        Ok(Some(out))
    }

    /// Turns the correlated scalar subqueries of `s`'s WHERE conjuncts that qualify (see
    /// `correlated`) into derived tables, joined by new conjuncts; returns their aliases.
    fn correlated_in_where(
        &mut self,
        s: &mut Select,
        derived: &mut Vec<(String, Query)>,
        probe: &Probe,
    ) -> Vec<String> {
        let Some(selection) = s.selection.take() else {
            return Vec::new();
        };
        let outer_from = s.from.clone();
        let mut parts = correlated::conjuncts(selection);
        let mut joins = Vec::new();
        let mut aliases = Vec::new();
        for c in &mut parts {
            for e in correlated::strict_subqueries(c) {
                let Expr::Subquery(q) = &*e else { continue };
                let Some(d) = self.decorrelate(q, &outer_from, probe, true) else {
                    continue;
                };
                self.subquery_count += 1;
                let alias = format!("__mv_scalar{}", self.subquery_count);
                *e = column(&alias);
                joins.extend(correlated::joined_on(&alias, d.outer));
                aliases.push(alias.clone());
                derived.push((alias, d.query));
            }
        }
        parts.extend(joins);
        s.selection = correlated::and_all(parts);
        aliases
    }

    /// Turns into grouped derived tables LEFT JOINed on the correlated columns (see
    /// [`Analyzer::left_joined`]), in a block that reads one FROM item, the correlated scalar
    /// subqueries left in its WHERE clause (those the inner join of
    /// [`Analyzer::correlated_in_where`] cannot take: a count, which is 0 over no rows, or one
    /// under `coalesce`, `OR`, `IS NULL`, …; WHERE is evaluated before any grouping, so this
    /// holds in grouped blocks too) and, when the block neither groups nor aggregates, those of
    /// its select list. Whether any did.
    fn correlated_left(&mut self, s: &mut Select, probe: &Probe) -> bool {
        if s.from.len() != 1 {
            return false;
        }
        let ungrouped = matches!(&s.group_by, GroupByExpr::Expressions(k, _) if k.is_empty());
        let rows = ungrouped && !self.is_aggregate(s);
        let outer_from = s.from.clone();
        let mut joins = Vec::new();
        if let Some(e) = s.selection.as_mut() {
            self.left_join_each(e, &outer_from, probe, None, &mut joins);
        }
        for item in s.projection.iter_mut().filter(|_| rows) {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                self.left_join_each(e, &outer_from, probe, None, &mut joins);
            }
        }
        let any = !joins.is_empty();
        s.from[0].joins.extend(joins.into_iter().map(|(_, j)| j));
        any
    }

    /// Replaces each correlated scalar subquery of `e`'s own level that qualifies by its value
    /// read through a LEFT JOIN, which it adds to `joins` with its alias. With `within`, only
    /// subqueries correlated to those expressions (a block's GROUP BY keys) qualify.
    fn left_join_each(
        &mut self,
        e: &mut Expr,
        outer_from: &[sqlparser::ast::TableWithJoins],
        probe: &Probe,
        within: Option<&[String]>,
        joins: &mut Vec<(String, Join)>,
    ) {
        levels::visit(e, |e: &mut Expr, depth: usize| {
            let Expr::Subquery(q) = &*e else { return };
            if depth > 0 {
                return;
            }
            if let Some((alias, value, join)) = self.left_joined(q, outer_from, probe, within) {
                *e = value;
                joins.push((alias, join));
            }
        });
    }

    /// Turns the correlated scalar subqueries of the select list and HAVING clause of `s`, a
    /// block with plain GROUP BY keys and one FROM item, that are correlated to GROUP BY keys
    /// only, into grouped derived tables LEFT JOINed on them. Each group then reads one row
    /// of each (or none): the join leaves the rows and their aggregates as they were, and its
    /// columns are constant per group, so they join the GROUP BY keys and the subquery reads
    /// them after grouping. Whether any did.
    fn correlated_in_groups(&mut self, s: &mut Select, probe: &Probe) -> bool {
        let GroupByExpr::Expressions(keys, modifiers) = &s.group_by else {
            return false;
        };
        if s.from.len() != 1 || keys.is_empty() || !modifiers.is_empty() {
            return false;
        }
        let plain = keys.iter().all(|k| {
            !matches!(
                k,
                Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_) | Expr::Value(_)
            )
        });
        if !plain {
            return false;
        }
        let within: Vec<String> = keys.iter().map(key_text).collect();
        let outer_from = s.from.clone();
        let mut joins = Vec::new();
        for item in &mut s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                self.left_join_each(e, &outer_from, probe, Some(&within), &mut joins);
            }
        }
        if let Some(h) = s.having.as_mut() {
            self.left_join_each(h, &outer_from, probe, Some(&within), &mut joins);
        }
        let any = !joins.is_empty();
        for (alias, join) in joins {
            if let GroupByExpr::Expressions(keys, _) = &mut s.group_by {
                keys.extend([key_column(&alias), column(&alias)]);
            }
            s.from[0].joins.push(join);
        }
        any
    }

    /// A correlated scalar subquery read as a grouped derived table LEFT JOINed on the
    /// correlated columns (see `correlated`): an outer row without a group reads the subquery
    /// over no rows — NULL from the join, or the constant a count gives. With `within`, only
    /// when every correlated outer expression is one of those. The derived table's alias, the
    /// expression that stands for the subquery, and the join.
    fn left_joined(
        &mut self,
        q: &Query,
        outer_from: &[sqlparser::ast::TableWithJoins],
        probe: &Probe,
        within: Option<&[String]>,
    ) -> Option<(String, Expr, Join)> {
        let d = self.decorrelate(q, outer_from, probe, false)?;
        if let Some(keys) = within {
            if !d.outer.iter().all(|o| keys.contains(&key_text(o))) {
                return None;
            }
        }
        self.subquery_count += 1;
        let alias = format!("__mv_scalar{}", self.subquery_count);
        let value = match d.empty {
            // A group of the join has its key; an outer row without one reads the aggregate
            // over no rows (a count's 0), not the join's NULL.
            Some(empty) => {
                let missing = crate::ir::user(&key_column(&alias)).is_null();
                let value = crate::ir::user(&column(&alias));
                crate::ir::case(missing, crate::ir::user(&empty), value).to_ast()
            }
            None => column(&alias),
        };
        let on = correlated::and_all(correlated::joined_on(&alias, d.outer));
        let join = Join {
            relation: super::lift::derived_table(d.query, &alias).relation,
            global: false,
            join_operator: JoinOperator::LeftOuter(JoinConstraint::On(
                on.expect("a correlated subquery has keys"),
            )),
        };
        Some((alias, value, join))
    }

    /// The subquery with its one column named [`VALUE`], when it is an uncorrelated ungrouped
    /// aggregate without clauses that could leave it without its row.
    fn one_row(&mut self, q: &Query, probe: &Probe) -> Option<Query> {
        let (_, e) = self.one_value(q)?;
        let e = e.clone();
        if !self.db.binds_alone(&probe.query(q).to_string()) {
            return None;
        }
        let mut one = q.clone();
        if let SetExpr::Select(s) = one.body.as_mut() {
            s.projection = vec![SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: Ident::new(VALUE),
            }];
        }
        Some(one)
    }
}

/// The derived table's one column. Names in the `__mv_` space are the compiler's own (a
/// definition using one recomputes), so it cannot clash with a column of the block.
pub(super) const VALUE: &str = "__mv_value";

/// How a GROUP BY key and a correlated outer expression are compared: as written, ignoring
/// case (a subquery in a grouped block may only read the block's keys, so DuckDB has already
/// checked that each is one; a key written differently is simply not recognised).
fn key_text(e: &Expr) -> String {
    e.to_string().to_lowercase()
}

/// `alias.__mv_value`.
fn column(alias: &str) -> Expr {
    Expr::CompoundIdentifier(vec![Ident::new(alias), Ident::new(VALUE)])
}

/// `alias.__mv_k1`: the derived table's first key, NULL where the LEFT JOIN found no group.
fn key_column(alias: &str) -> Expr {
    Expr::CompoundIdentifier(vec![Ident::new(alias), Ident::new(correlated::key_name(0))])
}
