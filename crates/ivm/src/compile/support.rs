//! The support check: which clauses and expressions have no incremental rule. Each refusal
//! names the construct, and that name is the reason the CREATE notice and `duckmv.views` show.

use super::reasons::Why;
use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Distinct, Expr, Function, GroupByExpr, ObjectName, Query, Select, SelectItem, Value, Visit,
    Visitor,
};

use super::{full, name_parts, Analyzer, R};

/// Whether `q` is its body alone: no WITH, ORDER BY, LIMIT or FETCH around it.
pub(super) fn bare_query(q: &Query) -> bool {
    q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none() && q.fetch.is_none()
}

/// The expression of a select item (None for a wildcard).
pub(super) fn item_expr(p: &SelectItem) -> Option<&Expr> {
    match p {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    }
}

/// The expression of the select item named `alias` (names compare as DuckDB's do, without
/// regard to case).
pub(super) fn aliased<'s>(s: &'s Select, alias: &str) -> Option<&'s Expr> {
    s.projection.iter().find_map(|p| match p {
        SelectItem::ExprWithAlias { expr, alias: a } if a.value.eq_ignore_ascii_case(alias) => {
            Some(expr)
        }
        _ => None,
    })
}

/// Whether `e` calls a window function.
pub(super) fn calls_window(e: &Expr) -> bool {
    let mut found = false;
    let _ = e.visit(&mut super::FnVisitor(|x: &Expr| {
        found |= matches!(x, Expr::Function(f) if f.over.is_some());
    }));
    found
}

impl Analyzer<'_> {
    pub(super) fn has_aggregate(&self, e: &Expr) -> bool {
        let mut v = AggregateFinder {
            an: self,
            depth: 0,
            found: false,
        };
        let _ = e.visit(&mut v);
        v.found
    }

    /// The select item a GROUP BY position `v` numbers (counted from 1).
    pub(super) fn position_key(s: &Select, v: &Value) -> R<Expr> {
        let Value::Number(n, _) = v else {
            return full(Why::ConstantGroupByKey);
        };
        let at: usize = n.parse().unwrap_or(0);
        match s.projection.get(at.wrapping_sub(1)).and_then(item_expr) {
            Some(e) => Ok(e.clone()),
            None => full(Why::GroupByPosition),
        }
    }

    /// The keys of `GROUP BY ALL`, as DuckDB finds them: every select item that reads a
    /// column and has no aggregate. A constant is not a key (so `SELECT 1, sum(v) … GROUP BY
    /// ALL` has its one row over no rows), nor is a window over the groups (one reading a
    /// column outside an aggregate would be a key, which DuckDB refuses).
    pub(super) fn group_by_all(&self, s: &Select) -> R<Vec<Expr>> {
        let mut keys = Vec::new();
        for p in &s.projection {
            let Some(e) = item_expr(p) else {
                return full(Why::StarInAnAggregateQuery);
            };
            let mut reads = false;
            let _ = e.visit(&mut super::FnVisitor(|x: &Expr| {
                reads |= matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
            }));
            if reads && !calls_window(e) && !self.has_aggregate(e) {
                keys.push(e.clone());
            }
        }
        Ok(keys)
    }

    pub(super) fn is_aggregate(&self, s: &Select) -> bool {
        let grouped = match &s.group_by {
            GroupByExpr::All(_) => true,
            GroupByExpr::Expressions(e, _) => !e.is_empty(),
        };
        if grouped || s.having.is_some() {
            return true;
        }
        let mut v = AggregateFinder {
            an: self,
            depth: 0,
            found: false,
        };
        let _ = s.projection.visit(&mut v);
        v.found
    }

    /// Clauses of a SELECT block that have no incremental rule.
    pub(super) fn check_select(&self, s: &Select) -> R<()> {
        if let Some(Distinct::On(_)) = &s.distinct {
            return full(Why::DistinctOn);
        }
        if s.top.is_some() || s.into.is_some() {
            return full(Why::TopInto);
        }
        if !s.lateral_views.is_empty() || s.prewhere.is_some() || !s.connect_by.is_empty() {
            return full(Why::ThisSelectClause);
        }
        if !s.cluster_by.is_empty() || !s.distribute_by.is_empty() || !s.sort_by.is_empty() {
            return full(Why::ThisSelectClause);
        }
        if !s.named_window.is_empty() {
            return full(Why::WindowFunction);
        }
        if s.qualify.is_some() {
            return full(Why::Qualify);
        }
        if s.value_table_mode.is_some() || s.exclude.is_some() || s.select_modifiers.is_some() {
            return full(Why::ThisSelectClause);
        }
        Ok(())
    }

    /// Rejects expressions without an incremental rule: subqueries, window functions,
    /// non-deterministic functions and (unless `aggregates_ok`) aggregates.
    pub(super) fn check_expr<V: Visit>(&self, e: &V, aggregates_ok: bool) -> R<()> {
        self.check(e, aggregates_ok, false)
    }

    /// As [`check_expr`](Self::check_expr) in the select list or QUALIFY of a query with
    /// window functions, where an aggregate with OVER is a window function.
    pub(super) fn check_windowed<V: Visit>(&self, e: &V) -> R<()> {
        self.check(e, false, true)
    }

    fn check<V: Visit>(&self, e: &V, aggregates_ok: bool, windows_ok: bool) -> R<()> {
        let mut v = ExprCheck {
            an: self,
            aggregates_ok,
            windows_ok,
            reason: None,
        };
        let _ = e.visit(&mut v);
        match v.reason {
            Some(r) => full(r),
            None => Ok(()),
        }
    }
}

/// Whether a call is an aggregate: a function DuckDB lists as one, or an ordered-set aggregate
/// (`percentile_cont(0.5) WITHIN GROUP (ORDER BY x)`, which DuckDB rewrites to one).
pub(super) fn aggregate_call(aggregates: &HashSet<String>, f: &Function) -> bool {
    !f.within_group.is_empty() || aggregates.contains(&fn_name(&f.name))
}

pub(super) fn fn_name(n: &ObjectName) -> String {
    name_parts(n)
        .last()
        .cloned()
        .unwrap_or_default()
        .to_lowercase()
}

/// Finds an aggregate call of this query level: calls inside a subquery aggregate that
/// subquery, not the query around it.
struct AggregateFinder<'x, 'a> {
    an: &'x Analyzer<'a>,
    depth: usize,
    found: bool,
}

impl Visitor for AggregateFinder<'_, '_> {
    type Break = ();
    fn pre_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            if self.depth == 0 && f.over.is_none() && aggregate_call(&self.an.aggregates, f) {
                self.found = true;
            }
        }
        ControlFlow::Continue(())
    }
}

/// A name of the definition in the space of the plan's own holes (`__mv_…`, see
/// `user_expr::hole`), which the compiler would take for one. Checked on the definition as the
/// user wrote it, before any hole is made.
pub(super) fn reserved_name(q: &Query) -> Option<String> {
    let mut found = None;
    let _ = q.visit(&mut super::FnVisitor(|e: &Expr| {
        let reserved = |i: &sqlparser::ast::Ident| i.value.to_lowercase().starts_with("__mv_");
        let hit = match e {
            Expr::Identifier(i) => reserved(i),
            Expr::CompoundIdentifier(parts) => parts.iter().any(reserved),
            _ => false,
        };
        if hit && found.is_none() {
            found = Some(e.to_string());
        }
    }));
    found
}

struct ExprCheck<'x, 'a> {
    an: &'x Analyzer<'a>,
    aggregates_ok: bool,
    windows_ok: bool,
    reason: Option<String>,
}

impl Visitor for ExprCheck<'_, '_> {
    type Break = ();
    fn pre_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.reason = Some(Why::SubqueryInExpression.into());
        ControlFlow::Break(())
    }
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Exists { .. } | Expr::Subquery(_) => {
                self.reason = Some(Why::SubqueryInExpression.into());
                return ControlFlow::Break(());
            }
            Expr::Function(f) => {
                let name = fn_name(&f.name);
                if f.over.is_some() && !self.windows_ok {
                    self.reason = Some(Why::WindowHere.with(&name));
                    return ControlFlow::Break(());
                }
                if self.an.volatile.contains(&name) {
                    self.reason = Some(Why::Volatile.with(&name));
                    return ControlFlow::Break(());
                }
                if f.over.is_none() && aggregate_call(&self.an.aggregates, f) && !self.aggregates_ok
                {
                    self.reason = Some(Why::AggregateHere.with(&name));
                    return ControlFlow::Break(());
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
