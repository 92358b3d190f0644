//! The view compiler: parses a definition once, at CREATE, decides how each part is maintained
//! and produces a [`Plan`]. Shapes without an incremental rule get `Body::Full` and a reason that
//! the CREATE notice and the catalog show.

use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Distinct, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    GroupByExpr, Ident, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, Query, Select,
    SelectItem, SelectItemQualifiedWildcardKind, SetExpr, SetOperator, SetQuantifier, TableFactor,
    Visit, VisitMut, Visitor, VisitorMut,
};

mod column_lists;
mod filter;
mod joins;
mod resolve;
mod select_tests;
mod subagg;

use super::agg;
use super::ir;
use super::plan::{
    AggFn, AggKind, Aggregate, Block, Body, Item, ItemFrom, Plan, Rel, Source, SourceKind,
};
use super::semi::{Exists, Guard};
use super::text::{ident, sanitize, unquoted};
use super::user_expr::{fill_holes, hole, hole_index, Hole, UserExpr};
use super::{IvmError, Sql};
pub(super) use resolve::current_database;
use resolve::resolve;

/// Joins wider than this are recomputed: inclusion–exclusion needs 2ⁿ−1 terms.
const MAX_JOIN_INPUTS: usize = 8;

/// Result of compiling: the plan and, for full-recompute views, the reason for the notice.
pub struct Compiled {
    pub plan: Plan,
    pub full_reason: Option<String>,
}

/// Why the analysis stopped: either the shape is not incremental (full recompute) or the
/// database refused a lookup.
enum Stop {
    Full(String),
    Err(IvmError),
}

impl From<super::DbError> for Stop {
    fn from(e: super::DbError) -> Self {
        Stop::Err(IvmError::Db(e))
    }
}

impl From<IvmError> for Stop {
    fn from(e: IvmError) -> Self {
        Stop::Err(e)
    }
}

type R<T> = Result<T, Stop>;

fn full<T>(reason: impl Into<String>) -> R<T> {
    Err(Stop::Full(reason.into()))
}

/// Compiles `query` (already validated by DuckDB, whose output names and types are given).
pub fn compile(
    db: &mut dyn Sql,
    id: i64,
    query: &str,
    columns: Vec<String>,
    types: Vec<String>,
) -> Result<Compiled, IvmError> {
    let Some(q) = super::text::parse_query(query) else {
        let plan = full_plan(
            db,
            id,
            query,
            None,
            columns,
            types,
            "syntax duckmv cannot analyse",
        )?;
        return Ok(Compiled {
            plan,
            full_reason: Some("syntax duckmv cannot analyse".into()),
        });
    };
    let mut an = Analyzer::new(db, id)?;
    match an.top(&q, columns.len()) {
        Ok(body) => {
            let strategy = format!("incremental: {}", an.describe(&body));
            let sources = an.sources;
            let mut plan = Plan {
                id,
                columns,
                types,
                sources,
                body,
                strategy,
                order_by: None,
                set_op: None,
            };
            if let Body::Aggregate(a) = &mut plan.body {
                finish_output(a, &plan.columns, &plan.types);
            }
            if !reloads(&plan) {
                let reason = "an expression duckmv cannot store";
                let plan = full_plan(an.db, id, query, Some(&q), plan.columns, plan.types, reason)?;
                return Ok(Compiled {
                    plan,
                    full_reason: Some(reason.into()),
                });
            }
            Ok(Compiled {
                plan,
                full_reason: None,
            })
        }
        Err(Stop::Err(e)) => Err(e),
        Err(Stop::Full(reason)) => {
            let plan = full_plan(an.db, id, query, Some(&q), columns, types, &reason)?;
            Ok(Compiled {
                plan,
                full_reason: Some(reason),
            })
        }
    }
}

/// A full-recompute plan; its sources are still recorded so dropping a table it reads is refused.
fn full_plan(
    db: &mut dyn Sql,
    id: i64,
    query: &str,
    parsed: Option<&Query>,
    columns: Vec<String>,
    types: Vec<String>,
    reason: &str,
) -> Result<Plan, IvmError> {
    let mut sources: Vec<Source> = Vec::new();
    if let Some(q) = parsed {
        let mut ctes = HashSet::new();
        let _ = q.visit(&mut CteNames(&mut ctes));
        let mut names = Vec::new();
        let _ = sqlparser::ast::visit_relations(q, |r: &ObjectName| {
            names.push(r.clone());
            ControlFlow::<()>::Continue(())
        });
        for n in names {
            let parts = name_parts(&n);
            if parts.len() == 1 && ctes.contains(&parts[0].to_lowercase()) {
                continue;
            }
            if let Some(src) = resolve(db, &parts)? {
                if !sources.iter().any(|s| same_relation(s, &src)) {
                    sources.push(src);
                }
            }
        }
    }
    Ok(Plan {
        id,
        columns,
        types,
        sources,
        body: Body::Full {
            query: query.to_string(),
        },
        strategy: format!("full: {reason}"),
        order_by: None,
        set_op: None,
    })
}

/// Whether the plan reads back from the text the catalog stores it as: every expression of the
/// user's that it keeps must parse again (see `user_expr`), or the view could not be loaded.
fn reloads(plan: &Plan) -> bool {
    serde_json::to_string(plan)
        .ok()
        .and_then(|json| serde_json::from_str::<Plan>(&json).ok())
        .is_some()
}

fn same_relation(a: &Source, b: &Source) -> bool {
    a.catalog == b.catalog && a.schema == b.schema && a.name == b.name
}

struct CteNames<'a>(&'a mut HashSet<String>);
impl Visitor for CteNames<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            for c in &w.cte_tables {
                self.0.insert(c.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}

fn name_parts(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            ObjectNamePart::Function(f) => f.name.value.clone(),
        })
        .collect()
}

/// Aggregates a block refers to, with their state slots and argument columns.
#[derive(Default)]
struct AggCollector {
    aggs: Vec<(String, AggFn)>,
    args: Vec<Expr>,
}

struct Analyzer<'a> {
    db: &'a mut dyn Sql,
    id: i64,
    sources: Vec<Source>,
    aggregates: HashSet<String>,
    volatile: HashSet<String>,
    features: BTreeSet<&'static str>,
    subquery_count: usize,
}

type Scope = Vec<(String, Query)>;

/// What one SELECT block reads and filters, before its select list is interpreted.
struct BlockFrom {
    items: Vec<Item>,
    columns: Vec<Vec<String>>,
    filter: Option<UserExpr>,
    /// Semi/anti filters (EXISTS, IN, SEMI/ANTI JOIN).
    exists: Vec<Exists>,
    /// Conjuncts combining existence tests with AND/OR/NOT.
    guards: Vec<Guard>,
    /// (quoted alias, columns) of every relation the select list can see, in FROM order.
    visible: Vec<(String, Vec<String>)>,
}

impl<'a> Analyzer<'a> {
    fn new(db: &'a mut dyn Sql, id: i64) -> Result<Self, IvmError> {
        // Which function names are aggregates and which are not deterministic comes from DuckDB
        // itself, so user macros and extension functions are classified too.
        let rows = db.query(
            "SELECT DISTINCT lower(function_name), function_type = 'aggregate' FROM duckdb_functions() \
             WHERE function_type = 'aggregate' OR stability IN ('VOLATILE', 'CONSISTENT_WITHIN_QUERY')",
        )?;
        let mut aggregates = HashSet::new();
        let mut volatile: HashSet<String> = [
            "current_timestamp",
            "current_date",
            "current_time",
            "localtimestamp",
            "localtime",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        for r in rows {
            let name = r[0].clone().unwrap_or_default();
            if r[1].as_deref() == Some("true") {
                aggregates.insert(name);
            } else {
                volatile.insert(name);
            }
        }
        Ok(Analyzer {
            db,
            id,
            sources: Vec::new(),
            aggregates,
            volatile,
            features: BTreeSet::new(),
            subquery_count: 0,
        })
    }

    fn describe(&self, body: &Body) -> String {
        let kind = match body {
            Body::Full { .. } => "full".to_string(),
            Body::Bag { distinct: true, .. } => "distinct".to_string(),
            Body::Bag {
                distinct: false, ..
            } => "projection".to_string(),
            Body::Aggregate(a) => {
                let mut names: Vec<&str> = a.aggs.iter().map(|f| agg::of(f).name()).collect();
                names.dedup();
                let names: BTreeSet<&str> = names.into_iter().collect();
                let names: Vec<&str> = names.into_iter().collect();
                format!("aggregate({})", names.join(","))
            }
        };
        let mut over: Vec<&str> = self.features.iter().copied().collect();
        if over.is_empty() {
            over.push("one table");
        }
        format!("{kind} over {}", over.join(", "))
    }

    /// The whole definition.
    fn top(&mut self, q: &Query, ncols: usize) -> R<Body> {
        let scope = self.query_scope(q, &Vec::new())?;
        match q.body.as_ref() {
            SetExpr::Select(s) if self.is_aggregate(s) => {
                Ok(Body::Aggregate(self.aggregate(s, &scope)?))
            }
            SetExpr::Select(s) => {
                let distinct = matches!(s.distinct, Some(Distinct::Distinct));
                let names = super::plan::positional(ncols);
                if let Some(rel) = self.select_tests(s, &scope, &names)? {
                    return Ok(Body::Bag { rel, distinct });
                }
                let block = self.spj(s, &scope, Some(names))?;
                Ok(Body::Bag {
                    rel: Rel::Block(block),
                    distinct,
                })
            }
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier,
                ..
            } => {
                let distinct = match set_quantifier {
                    SetQuantifier::All => false,
                    SetQuantifier::Distinct | SetQuantifier::None => true,
                    _ => return full("UNION BY NAME"),
                };
                let names = super::plan::positional(ncols);
                let rel = self.union(q.body.as_ref(), &scope, distinct, &names)?;
                Ok(Body::Bag { rel, distinct })
            }
            SetExpr::SetOperation { op, .. } => full(format!("{op}").to_uppercase()),
            SetExpr::Query(inner) if q.with.is_none() => self.top(inner, ncols),
            _ => full("this kind of query"),
        }
    }

    /// Checks the clauses around a query body and returns the CTEs it defines, inlined later
    /// wherever they are referenced.
    fn query_scope(&mut self, q: &Query, outer: &Scope) -> R<Scope> {
        if q.order_by.is_some() {
            return full("ORDER BY");
        }
        if q.limit_clause.is_some() || q.fetch.is_some() {
            return full("LIMIT");
        }
        if !q.locks.is_empty()
            || q.for_clause.is_some()
            || q.settings.is_some()
            || !q.pipe_operators.is_empty()
        {
            return full("this query clause");
        }
        let mut scope = outer.clone();
        if let Some(w) = &q.with {
            if w.recursive {
                return full("WITH RECURSIVE");
            }
            for cte in &w.cte_tables {
                let body = if cte.alias.columns.is_empty() {
                    (*cte.query).clone()
                } else {
                    column_lists::rename(&cte.query, &cte.alias.columns).or_else(full)?
                };
                scope.push((cte.alias.name.value.to_lowercase(), body));
            }
            self.features.insert("CTE");
        }
        Ok(scope)
    }

    fn union(&mut self, body: &SetExpr, scope: &Scope, distinct: bool, names: &[String]) -> R<Rel> {
        let mut branches = Vec::new();
        self.union_branches(body, distinct, &mut branches)?;
        self.features
            .insert(if distinct { "UNION" } else { "UNION ALL" });
        let mut rels = Vec::new();
        for b in branches {
            match b {
                SetExpr::Select(s) => {
                    if self.is_aggregate(s) || s.distinct.is_some() {
                        return full("an aggregate or DISTINCT inside UNION");
                    }
                    rels.push(Rel::Block(self.spj(s, scope, Some(names.to_vec()))?));
                }
                SetExpr::Query(q) => {
                    let inner = self.query_scope(q, scope)?;
                    rels.push(self.union(q.body.as_ref(), &inner, false, names)?);
                }
                _ => return full("this kind of UNION branch"),
            }
        }
        Ok(Rel::Union(rels))
    }

    fn union_branches<'q>(
        &self,
        e: &'q SetExpr,
        distinct: bool,
        out: &mut Vec<&'q SetExpr>,
    ) -> R<()> {
        match e {
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier,
                left,
                right,
            } => {
                let this = match set_quantifier {
                    SetQuantifier::All => false,
                    SetQuantifier::Distinct | SetQuantifier::None => true,
                    _ => return full("UNION BY NAME"),
                };
                if this != distinct {
                    return full("a mix of UNION and UNION ALL");
                }
                self.union_branches(left, distinct, out)?;
                self.union_branches(right, distinct, out)
            }
            SetExpr::SetOperation { op, .. } => full(format!("{op}").to_uppercase()),
            other => {
                out.push(other);
                Ok(())
            }
        }
    }

    /// A subquery or CTE used as a FROM item: select-project-join blocks and UNION ALL only.
    fn sub(&mut self, q: &Query, scope: &Scope) -> R<(Rel, Vec<String>)> {
        let scope = self.query_scope(q, scope)?;
        self.features.insert("subquery");
        let rel = match q.body.as_ref() {
            SetExpr::Select(s) => {
                if self.is_aggregate(s) {
                    return self.sub_aggregate(s, &scope, true);
                }
                if s.distinct.is_some() {
                    return full("DISTINCT inside a subquery");
                }
                Rel::Block(self.spj(s, &scope, None)?)
            }
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier: SetQuantifier::All,
                ..
            } => {
                let mut branches = Vec::new();
                self.union_branches(q.body.as_ref(), false, &mut branches)?;
                let mut rels = Vec::new();
                let mut names: Option<Vec<String>> = None;
                for b in branches {
                    let SetExpr::Select(s) = b else {
                        return full("this kind of UNION branch");
                    };
                    if self.is_aggregate(s) || s.distinct.is_some() {
                        return full("an aggregate or DISTINCT inside UNION");
                    }
                    let block = self.spj(s, &scope, names.clone())?;
                    names.get_or_insert_with(|| block.names.clone());
                    rels.push(Rel::Block(block));
                }
                self.features.insert("UNION ALL");
                Rel::Union(rels)
            }
            SetExpr::Query(inner) => return self.sub(inner, &scope),
            SetExpr::SetOperation { op, .. } => return full(format!("{op}").to_uppercase()),
            _ => return full("this kind of subquery"),
        };
        let names = match &rel {
            Rel::Block(b) => b.names.clone(),
            Rel::Union(parts) => match &parts[0] {
                Rel::Block(b) => b.names.clone(),
                Rel::Union(_) | Rel::Agg(_) => return full("nested UNION"),
            },
            Rel::Agg(sa) => sa.names.clone(),
        };
        Ok((rel, names))
    }

    fn has_aggregate(&self, e: &Expr) -> bool {
        let mut v = AggregateFinder {
            an: self,
            depth: 0,
            found: false,
        };
        let _ = e.visit(&mut v);
        v.found
    }

    fn is_aggregate(&self, s: &Select) -> bool {
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
    fn check_select(&self, s: &Select) -> R<()> {
        if let Some(Distinct::On(_)) = &s.distinct {
            return full("DISTINCT ON");
        }
        if s.top.is_some() || s.into.is_some() {
            return full("TOP / INTO");
        }
        if !s.lateral_views.is_empty() || s.prewhere.is_some() || !s.connect_by.is_empty() {
            return full("this SELECT clause");
        }
        if !s.cluster_by.is_empty() || !s.distribute_by.is_empty() || !s.sort_by.is_empty() {
            return full("this SELECT clause");
        }
        if !s.named_window.is_empty() {
            return full("a window function");
        }
        if s.qualify.is_some() {
            return full("QUALIFY");
        }
        if s.value_table_mode.is_some() || s.exclude.is_some() || s.select_modifiers.is_some() {
            return full("this SELECT clause");
        }
        Ok(())
    }

    /// Rejects expressions without an incremental rule: subqueries, window functions,
    /// non-deterministic functions and (unless `aggregates_ok`) aggregates.
    fn check_expr<V: Visit>(&self, e: &V, aggregates_ok: bool) -> R<()> {
        let mut v = ExprCheck {
            an: self,
            aggregates_ok,
            reason: None,
        };
        let _ = e.visit(&mut v);
        match v.reason {
            Some(r) => full(r),
            None => Ok(()),
        }
    }

    /// FROM and WHERE of a block: inner/cross joins of tables, views and subqueries.
    fn from(&mut self, s: &Select, scope: &Scope) -> R<BlockFrom> {
        if s.from.is_empty() {
            return full("a query without FROM");
        }
        let mut out = BlockFrom {
            items: Vec::new(),
            columns: Vec::new(),
            filter: None,
            exists: Vec::new(),
            guards: Vec::new(),
            visible: Vec::new(),
        };
        let mut preds: Vec<Expr> = Vec::new();
        for twj in &s.from {
            if !twj.joins.iter().all(|j| joins::is_inner(&j.join_operator)) {
                self.chain(twj, scope, &mut out)?;
                continue;
            }
            let first = out.items.len();
            self.factor(&twj.relation, scope, &mut out)?;
            for j in &twj.joins {
                let constraint = match &j.join_operator {
                    JoinOperator::Join(c) | JoinOperator::Inner(c) => c,
                    JoinOperator::CrossJoin(c) => c,
                    JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => return full("LEFT JOIN"),
                    JoinOperator::Right(_) | JoinOperator::RightOuter(_) => {
                        return full("RIGHT JOIN")
                    }
                    JoinOperator::FullOuter(_) => return full("FULL JOIN"),
                    JoinOperator::Semi(_)
                    | JoinOperator::LeftSemi(_)
                    | JoinOperator::RightSemi(_) => return full("SEMI JOIN"),
                    JoinOperator::Anti(_)
                    | JoinOperator::LeftAnti(_)
                    | JoinOperator::RightAnti(_) => return full("ANTI JOIN"),
                    JoinOperator::AsOf { .. } => return full("ASOF JOIN"),
                    _ => return full("this kind of join"),
                };
                match constraint {
                    JoinConstraint::On(e) => {
                        self.check_expr(e, false)?;
                        preds.push(e.clone());
                    }
                    JoinConstraint::None => {}
                    JoinConstraint::Natural => return full("NATURAL JOIN"),
                    _ => return full("JOIN ... USING"),
                }
                self.factor(&j.relation, scope, &mut out)?;
            }
            for i in first..out.items.len() {
                out.visible
                    .push((out.items[i].alias.clone(), out.columns[i].clone()));
            }
        }
        if out.items.len() > MAX_JOIN_INPUTS {
            return full(format!("a join of more than {MAX_JOIN_INPUTS} relations"));
        }
        if out.items.len() > 1 {
            self.features.insert("inner join");
        }
        if let Some(w) = &s.selection {
            self.where_clause(w, scope, &mut out, &mut preds)?;
        }
        out.filter = UserExpr::all(preds);
        Ok(out)
    }

    fn factor(&mut self, f: &TableFactor, scope: &Scope, out: &mut BlockFrom) -> R<()> {
        match f {
            TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                version: None,
                sample: None,
                ..
            } if with_hints.is_empty() => {
                if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                    return full("a table alias with a column list");
                }
                let parts = name_parts(name);
                let alias_name = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| parts.last().cloned().unwrap_or_default());
                if parts.len() == 1 {
                    let lower = parts[0].to_lowercase();
                    if let Some(pos) = scope.iter().rposition(|(n, _)| *n == lower) {
                        let (_, cte) = &scope[pos];
                        let inner: Scope = scope[..pos].to_vec();
                        let (rel, cols) = self.sub(&cte.clone(), &inner)?;
                        out.items.push(Item {
                            alias: ident(&alias_name),
                            from: ItemFrom::Sub(Box::new(rel)),
                        });
                        out.columns.push(cols);
                        return Ok(());
                    }
                }
                let Some(src) = resolve(self.db, &parts)? else {
                    return full(format!(
                        "a reference to {name}, which is not a base table or materialized view"
                    ));
                };
                if let Some(cat) = &src.catalog {
                    return full(format!("a table in another attached database (\"{cat}\")"));
                }
                if src.kind == SourceKind::View {
                    self.features.insert("materialized view");
                }
                let idx = match self.sources.iter().position(|s| same_relation(s, &src)) {
                    Some(i) => i,
                    None => {
                        let mut src = src;
                        let base = format!("d_{}_{}", self.id, sanitize(&src.name));
                        let mut delta = base.clone();
                        let mut k = 1;
                        while self
                            .sources
                            .iter()
                            .any(|s| s.delta.as_deref() == Some(&format!("_duckmv.{delta}")))
                        {
                            k += 1;
                            delta = format!("{base}_{k}");
                        }
                        src.delta = Some(format!("_duckmv.{delta}"));
                        self.sources.push(src);
                        self.sources.len() - 1
                    }
                };
                out.columns.push(self.sources[idx].columns.clone());
                out.items.push(Item {
                    alias: ident(&alias_name),
                    from: ItemFrom::Source(idx),
                });
                Ok(())
            }
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                sample: None,
            } => {
                let renamed = match alias.as_ref().filter(|a| !a.columns.is_empty()) {
                    Some(a) => Some(column_lists::rename(subquery, &a.columns).or_else(full)?),
                    None => None,
                };
                let (rel, cols) = self.sub(renamed.as_ref().unwrap_or(subquery), scope)?;
                self.subquery_count += 1;
                let alias_name = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| format!("_mv_sq{}", self.subquery_count));
                out.items.push(Item {
                    alias: ident(&alias_name),
                    from: ItemFrom::Sub(Box::new(rel)),
                });
                out.columns.push(cols);
                Ok(())
            }
            TableFactor::Derived { lateral: true, .. } => full("LATERAL"),
            TableFactor::NestedJoin { .. } => full("a parenthesized join"),
            TableFactor::Table { args: Some(_), .. }
            | TableFactor::Function { .. }
            | TableFactor::TableFunction { .. } => full("a table function"),
            _ => full("this kind of FROM item"),
        }
    }

    /// Expands `*` and `t.*` against the FROM items' columns; other items keep their expression
    /// and optional alias.
    fn projection(&self, s: &Select, from: &BlockFrom) -> R<Vec<(Expr, Option<String>)>> {
        let mut out = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    self.check_expr(e, false)?;
                    // DuckDB names a bare column after the column; other expressions it names
                    // itself (asked later, only if needed).
                    let name = match e {
                        Expr::Identifier(i) => Some(i.value.clone()),
                        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
                        _ => None,
                    };
                    out.push((e.clone(), name));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    self.check_expr(expr, false)?;
                    out.push((expr.clone(), Some(alias.value.clone())));
                }
                SelectItem::Wildcard(opts) => {
                    if !plain_wildcard(opts) {
                        return full("* with EXCLUDE/REPLACE");
                    }
                    for (alias, cols) in &from.visible {
                        for c in cols {
                            out.push((column_of(alias, c), Some(c.clone())));
                        }
                    }
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    opts,
                ) => {
                    if !plain_wildcard(opts) {
                        return full("* with EXCLUDE/REPLACE");
                    }
                    let parts = name_parts(n);
                    let want = ident(parts.last().map(String::as_str).unwrap_or(""));
                    let Some((alias, cols)) = from
                        .visible
                        .iter()
                        .find(|(a, _)| a.to_lowercase() == want.to_lowercase())
                    else {
                        return full("a qualified * duckmv cannot resolve");
                    };
                    for c in cols {
                        out.push((column_of(alias, c), Some(c.clone())));
                    }
                }
                _ => return full("this kind of select item"),
            }
        }
        Ok(out)
    }

    /// A select-project-join block. `names` fixes the output names (the top level uses
    /// positional `c1..cn`); otherwise they are DuckDB's own names for the select list.
    fn spj(&mut self, s: &Select, scope: &Scope, names: Option<Vec<String>>) -> R<Block> {
        self.check_select(s)?;
        let from = self.from(s, scope)?;
        let proj = self.projection(s, &from)?;
        let select: Vec<UserExpr> = proj.iter().map(|(e, _)| UserExpr::new(e.clone())).collect();
        let names = match names {
            Some(n) if n.len() == select.len() => n,
            Some(_) => return full("a select list duckmv cannot match to the view's columns"),
            None => {
                if proj.iter().all(|(_, a)| a.is_some()) {
                    proj.iter().map(|(_, a)| a.clone().unwrap()).collect()
                } else {
                    // DuckDB names unaliased expressions itself; ask it rather than guess.
                    let unaliased: Vec<String> = proj
                        .iter()
                        .map(|(e, a)| match a {
                            Some(a) => format!("{e} AS {}", ident(a)),
                            None => e.to_string(),
                        })
                        .collect();
                    let probe = Block {
                        items: from.items.clone(),
                        select: Vec::new(),
                        names: Vec::new(),
                        filter: from.filter.clone(),
                        exists: from.exists.clone(),
                        guards: from.guards.clone(),
                    };
                    let t = super::plan::block_cur_term(&self.sources, &probe);
                    let sql = format!(
                        "DESCRIBE SELECT {} FROM {}{}",
                        unaliased.join(", "),
                        t.from,
                        t.where_sql()
                    );
                    let rows = self.db.query(&sql)?;
                    rows.into_iter()
                        .map(|r| r[0].clone().unwrap_or_default())
                        .collect()
                }
            }
        };
        Ok(Block {
            items: from.items,
            select,
            names,
            filter: from.filter,
            exists: from.exists,
            guards: from.guards,
        })
    }

    /// GROUP BY / ungrouped aggregation over a select-project-join input; existence tests in
    /// the select list (`count(*) FILTER (WHERE EXISTS …)`, `sum(CASE WHEN x IN … THEN …)`)
    /// make the input a union of copies (see `select_tests`), aggregated as one.
    fn aggregate(&mut self, s: &Select, scope: &Scope) -> R<Aggregate> {
        self.check_select(s)?;
        if s.distinct.is_some() {
            return full("DISTINCT with aggregates");
        }
        let Some(copies) = select_tests::copies(s)? else {
            return self.aggregate_block(s, scope);
        };
        let mut first: Option<Aggregate> = None;
        let mut inputs = Vec::new();
        for (copy, values) in copies {
            let a = self.aggregate_block(&copy, scope)?;
            let mut input = a.input.clone();
            select_tests::fill(&mut input, &values);
            inputs.push(input);
            match &first {
                None => first = Some(a),
                // Copies differ only in their filters (the tests are placeholders until
                // `fill`), so they compile alike; this only guards that.
                Some(f)
                    if format!("{:?}", (f.groups, &f.aggs, &f.output, &f.having))
                        == format!("{:?}", (a.groups, &a.aggs, &a.output, &a.having))
                        && f.input.names == a.input.names => {}
                Some(_) => return full("EXISTS/IN in aggregates whose copies differ"),
            }
        }
        let mut a = first.expect("at least two copies");
        a.input = inputs.remove(0);
        a.copies = inputs;
        self.features.insert("EXISTS/IN in the select list");
        Ok(a)
    }

    fn aggregate_block(&mut self, s: &Select, scope: &Scope) -> R<Aggregate> {
        let from = self.from(s, scope)?;
        let group_exprs: Vec<Expr> = match &s.group_by {
            GroupByExpr::Expressions(e, mods) if mods.is_empty() => e.clone(),
            // GROUP BY ALL groups by every select item without an aggregate.
            GroupByExpr::All(mods) if mods.is_empty() => {
                let mut keys = Vec::new();
                for p in &s.projection {
                    let e = match p {
                        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                        _ => return full("* in an aggregate query"),
                    };
                    if !self.has_aggregate(e) {
                        keys.push(e.clone());
                    }
                }
                keys
            }
            _ => return full("GROUP BY modifiers"),
        };
        // Positional and alias GROUP BY refer to the select list.
        let mut groups: Vec<Expr> = Vec::new();
        for g in &group_exprs {
            if matches!(g, Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_)) {
                return full("GROUPING SETS / CUBE / ROLLUP");
            }
            self.check_expr(g, false)?;
            let resolved = match g {
                Expr::Value(v) => {
                    let sqlparser::ast::Value::Number(n, _) = &v.value else {
                        return full("a constant GROUP BY key");
                    };
                    let idx: usize = n
                        .to_string()
                        .parse()
                        .map_err(|_| Stop::Full("a GROUP BY position".into()))?;
                    match s.projection.get(idx.wrapping_sub(1)) {
                        Some(SelectItem::UnnamedExpr(e))
                        | Some(SelectItem::ExprWithAlias { expr: e, .. }) => e.clone(),
                        _ => return full("a GROUP BY position"),
                    }
                }
                Expr::Identifier(i)
                    if !from
                        .columns
                        .iter()
                        .flatten()
                        .any(|c| c.eq_ignore_ascii_case(&i.value)) =>
                {
                    let aliased = s.projection.iter().find_map(|p| match p {
                        SelectItem::ExprWithAlias { expr, alias }
                            if alias.value.eq_ignore_ascii_case(&i.value) =>
                        {
                            Some(expr.clone())
                        }
                        _ => None,
                    });
                    aliased.unwrap_or_else(|| g.clone())
                }
                _ => g.clone(),
            };
            if !groups.iter().any(|k| k.to_string() == resolved.to_string()) {
                groups.push(resolved);
            }
        }
        let keys: Vec<String> = groups.iter().map(Expr::to_string).collect();
        let ngroups = groups.len();
        let mut col = AggCollector::default();
        let mut outputs = Vec::new();
        for item in &s.projection {
            let e = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => return full("* in an aggregate query"),
            };
            outputs.push(self.rewrite_over_state(e, &keys, &mut col)?.to_string());
        }
        let having = match &s.having {
            Some(h) => Some(UserExpr::new(self.rewrite_over_state(h, &keys, &mut col)?)),
            None => None,
        };
        let mut select: Vec<UserExpr> = groups.into_iter().map(UserExpr::new).collect();
        select.extend(col.args.iter().cloned().map(UserExpr::new));
        let mut names: Vec<String> = (1..=ngroups).map(|i| format!("_g{i}")).collect();
        names.extend((1..=col.args.len()).map(|i| format!("_a{i}")));
        let input = Block {
            items: from.items,
            select,
            names,
            filter: from.filter,
            exists: from.exists,
            guards: from.guards,
        };
        Ok(Aggregate {
            input,
            groups: ngroups,
            aggs: col.aggs.into_iter().map(|(_, f)| f).collect(),
            output: outputs,
            having,
            copies: Vec::new(),
        })
    }

    /// Rewrites a select-list or HAVING expression of an aggregate query over the storage
    /// columns: aggregate calls become their state expression, group keys become `_g<i>`.
    fn rewrite_over_state(&self, e: &Expr, groups: &[String], col: &mut AggCollector) -> R<Expr> {
        self.check_expr(e, true)?;
        let mut e = e.clone();
        let mut rw = StateRewriter {
            an: self,
            groups,
            col,
            reason: None,
        };
        let _ = VisitMut::visit(&mut e, &mut rw);
        if let Some(r) = rw.reason {
            return full(r);
        }
        // Every column reference left must be a storage column; anything else is an
        // expression over the grouped rows we cannot map onto the state.
        let mut stray = false;
        let _ = e.visit(&mut FnVisitor(|x: &Expr| match x {
            Expr::Identifier(i)
                if !(i.value.starts_with("_g") || hole_index(Hole::Aggregate, x).is_some()) =>
            {
                stray = true
            }
            Expr::CompoundIdentifier(_) => stray = true,
            _ => {}
        }));
        if stray {
            return full("an expression over grouped columns that is not a GROUP BY key");
        }
        // The placeholders become each aggregate's value over its state columns.
        let values: Vec<Expr> = col
            .aggs
            .iter()
            .map(|(_, f)| match agg::of(f).value(f.slot) {
                v @ ir::Expr::Col { .. } => v.to_ast(),
                v => Expr::Nested(Box::new(v.to_ast())),
            })
            .collect();
        fill_holes(&mut e, Hole::Aggregate, |i| values[i].clone());
        Ok(e)
    }
}

/// `"alias"."column"`: a column of a FROM item, by its quoted alias.
pub(super) fn column_of(alias: &str, column: &str) -> Expr {
    Expr::CompoundIdentifier(vec![
        Ident::with_quote('"', unquoted(alias)),
        Ident::with_quote('"', column),
    ])
}

/// Adds the casts and names of the user-visible columns to an aggregate's output expressions.
fn finish_output(a: &mut Aggregate, columns: &[String], types: &[String]) {
    a.output = a
        .output
        .iter()
        .zip(columns.iter().zip(types))
        .map(|(e, (n, t))| format!("CAST({e} AS {t}) AS {}", ident(n)))
        .collect();
}

/// Whether a GROUP BY key and an expression name the same column, one of them qualified
/// (`g` and `t.g`): DuckDB accepted the query, so the unqualified name is unambiguous.
fn same_column(group: &str, e: &Expr) -> bool {
    let last = |s: &str| {
        s.rsplit('.')
            .next()
            .unwrap_or("")
            .trim_matches('"')
            .to_lowercase()
    };
    let simple = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '"')
    };
    if !simple(group) {
        return false;
    }
    match e {
        Expr::Identifier(i) => group.contains('.') && last(group) == i.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => {
            !group.contains('.')
                && parts
                    .last()
                    .is_some_and(|p| last(group) == p.value.to_lowercase())
        }
        _ => false,
    }
}

fn plain_wildcard(o: &sqlparser::ast::WildcardAdditionalOptions) -> bool {
    o.opt_ilike.is_none()
        && o.opt_exclude.is_none()
        && o.opt_except.is_none()
        && o.opt_replace.is_none()
        && o.opt_rename.is_none()
}

fn fn_name(n: &ObjectName) -> String {
    name_parts(n)
        .last()
        .cloned()
        .unwrap_or_default()
        .to_lowercase()
}

/// Calls a closure on every expression (pre-order).
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
            if self.depth == 0 && f.over.is_none() && self.an.aggregates.contains(&fn_name(&f.name))
            {
                self.found = true;
            }
        }
        ControlFlow::Continue(())
    }
}

struct FnVisitor<F>(F);
impl<F: FnMut(&Expr)> Visitor for FnVisitor<F> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        (self.0)(e);
        ControlFlow::Continue(())
    }
}

/// Names in the space of the plan's own (`__mv_…`).
fn reserved(name: &str) -> bool {
    name.to_lowercase().starts_with("__mv_")
}

struct ExprCheck<'x, 'a> {
    an: &'x Analyzer<'a>,
    aggregates_ok: bool,
    reason: Option<String>,
}

impl Visitor for ExprCheck<'_, '_> {
    type Break = ();
    fn pre_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.reason = Some("a subquery in an expression".into());
        ControlFlow::Break(())
    }
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Exists { .. } | Expr::Subquery(_) => {
                self.reason = Some("a subquery in an expression".into());
                return ControlFlow::Break(());
            }
            // The plan's holes and placeholders are such names (see `user_expr::hole`).
            Expr::Identifier(i) if reserved(&i.value) => {
                self.reason = Some(format!("the name {i}, which duckmv reserves"));
                return ControlFlow::Break(());
            }
            Expr::CompoundIdentifier(parts) if parts.iter().any(|i| reserved(&i.value)) => {
                self.reason = Some(format!("the name {e}, which duckmv reserves"));
                return ControlFlow::Break(());
            }
            Expr::Function(f) => {
                let name = fn_name(&f.name);
                if f.over.is_some() {
                    self.reason = Some(format!("window function {name}()"));
                    return ControlFlow::Break(());
                }
                if self.an.volatile.contains(&name) {
                    self.reason = Some(format!("non-deterministic function {name}()"));
                    return ControlFlow::Break(());
                }
                if self.an.aggregates.contains(&name) && !self.aggregates_ok {
                    self.reason = Some(format!("aggregate {name}() here"));
                    return ControlFlow::Break(());
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

struct StateRewriter<'x, 'a> {
    an: &'x Analyzer<'a>,
    groups: &'x [String],
    col: &'x mut AggCollector,
    reason: Option<String>,
}

impl StateRewriter<'_, '_> {
    /// Classifies an aggregate call; returns its index (its hole) or a reason it is not
    /// maintainable.
    fn aggregate(&mut self, f: &sqlparser::ast::Function) -> Result<usize, String> {
        let name = fn_name(&f.name);
        let Some((kind, distinct_ok)) = agg::kind_of(&name) else {
            return Err(format!("aggregate {name}()"));
        };
        if !f.within_group.is_empty() || f.null_treatment.is_some() {
            return Err(format!("{name}() with WITHIN GROUP or IGNORE NULLS"));
        }
        let FunctionArguments::List(list) = &f.args else {
            return Err(format!("aggregate {name}()"));
        };
        let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
        if distinct && !distinct_ok {
            return Err(format!("{name}(DISTINCT ...)"));
        }
        if !list.clauses.is_empty() || list.args.len() != 1 {
            return Err(format!("{name}() with several arguments or ORDER BY"));
        }
        let (kind, arg) = match &list.args[0] {
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if kind == AggKind::Count => {
                (AggKind::CountStar, None)
            }
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                let mut nested = false;
                let _ = e.visit(&mut FnVisitor(|x: &Expr| {
                    if let Expr::Function(g) = x {
                        if self.an.aggregates.contains(&fn_name(&g.name)) {
                            nested = true;
                        }
                    }
                }));
                if nested {
                    return Err("a nested aggregate".into());
                }
                (kind, Some(e.clone()))
            }
            _ => return Err(format!("aggregate {name}()")),
        };
        let (kind, arg) = match &f.filter {
            None => (kind, arg),
            Some(cond) => filter::filtered(kind, arg, cond)
                .ok_or_else(|| format!("{name}() with a FILTER that tests a subquery"))?,
        };
        let text = arg.as_ref().map(Expr::to_string);
        let key = format!("{kind:?}:{distinct}:{}", text.clone().unwrap_or_default());
        if let Some(pos) = self.col.aggs.iter().position(|(k, _)| *k == key) {
            return Ok(pos);
        }
        let arg_col = arg.zip(text).map(|(a, text)| {
            let j = match self.col.args.iter().position(|x| x.to_string() == text) {
                Some(j) => j,
                None => {
                    self.col.args.push(a);
                    self.col.args.len() - 1
                }
            };
            format!("_a{}", j + 1)
        });
        // SUM and AVG of one argument keep the same state (the sum and the non-null count).
        let sum_like = |k: AggKind, d: bool| !d && matches!(k, AggKind::Sum | AggKind::Avg);
        let shared = self
            .col
            .aggs
            .iter()
            .find(|(_, f)| {
                sum_like(kind, distinct) && sum_like(f.kind, f.distinct) && f.arg == arg_col
            })
            .map(|(_, f)| f.slot);
        let slot = shared
            .unwrap_or_else(|| self.col.aggs.iter().map(|(_, f)| f.slot).max().unwrap_or(0) + 1);
        self.col.aggs.push((
            key,
            AggFn {
                kind,
                arg: arg_col,
                slot,
                distinct,
            },
        ));
        Ok(self.col.aggs.len() - 1)
    }
}

impl VisitorMut for StateRewriter<'_, '_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            if self.an.aggregates.contains(&fn_name(&f.name)) {
                match self.aggregate(f) {
                    Ok(i) => *e = hole(Hole::Aggregate, i),
                    Err(r) => {
                        self.reason = Some(r);
                        return ControlFlow::Break(());
                    }
                }
                return ControlFlow::Continue(());
            }
        }
        let text = e.to_string();
        if let Some(i) = self
            .groups
            .iter()
            .position(|g| *g == text || same_column(g, e))
        {
            *e = Expr::Identifier(Ident::new(format!("_g{}", i + 1)));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::DbError;

    /// Answers the catalog lookups the compiler makes: tables t(k, g, v) and u(k, w), no
    /// materialized views, a few aggregate and volatile functions.
    struct Fake;
    impl Sql for Fake {
        fn exec(&mut self, _sql: &str) -> Result<u64, DbError> {
            Ok(0)
        }
        fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
            let s = |v: &str| Some(v.to_string());
            if sql.contains("duckdb_functions()") {
                let f = [
                    ("sum", "true"),
                    ("count", "true"),
                    ("min", "true"),
                    ("max", "true"),
                    ("avg", "true"),
                ];
                let mut rows: Vec<_> = f.iter().map(|(a, b)| vec![s(a), s(b)]).collect();
                rows.push(vec![s("string_agg"), s("true")]);
                rows.push(vec![s("random"), s("false")]);
                return Ok(rows);
            }
            if sql == "SELECT current_database()" {
                return Ok(vec![vec![s("memory")]]);
            }
            if sql.contains("information_schema.columns") {
                let cols: &[&str] = if sql.contains("'u'") {
                    &["k", "w"]
                } else {
                    &["k", "g", "v"]
                };
                return Ok(cols.iter().map(|c| vec![s(c)]).collect());
            }
            if sql.contains("information_schema.tables") && sql.contains("BASE TABLE") {
                for t in ["t", "u"] {
                    if sql.contains(&format!("lower('{t}')")) {
                        return Ok(vec![vec![s("memory"), s("main"), s(t)]]);
                    }
                }
                return Ok(vec![]);
            }
            if sql.starts_with("DESCRIBE") {
                return Err(DbError {
                    message: "not in this fake".into(),
                    state: duckmv_sqlstate::SqlState::INTERNAL_ERROR,
                });
            }
            Ok(vec![])
        }
    }

    /// A definition over t(k, g, v) and u(k, w) compiled as view 9 with `ncols` INTEGER columns.
    pub(crate) fn compiled(q: &str, ncols: usize) -> Compiled {
        let cols: Vec<String> = (1..=ncols).map(|i| format!("col{i}")).collect();
        let types = vec!["INTEGER".to_string(); ncols];
        compile(&mut Fake, 9, q, cols, types).unwrap()
    }

    fn reason(q: &str, ncols: usize) -> Option<String> {
        compiled(q, ncols).full_reason
    }

    #[test]
    fn classifies_incremental_shapes() {
        for (q, n, strategy) in [
            (
                "SELECT k, v + 1 AS w FROM t WHERE v > 0",
                2,
                "incremental: projection over one table",
            ),
            (
                "SELECT * FROM t",
                3,
                "incremental: projection over one table",
            ),
            (
                "SELECT DISTINCT g FROM t",
                1,
                "incremental: distinct over one table",
            ),
            (
                "SELECT g, SUM(v), MAX(v) FROM t GROUP BY g",
                3,
                "incremental: aggregate(max,sum) over one table",
            ),
            (
                "SELECT COUNT(*) FROM t",
                1,
                "incremental: aggregate(count) over one table",
            ),
            (
                "SELECT t.g, u.w FROM t JOIN u ON t.k = u.k",
                2,
                "incremental: projection over inner join",
            ),
            (
                "SELECT t.g, u.w FROM t LEFT JOIN u ON t.k = u.k",
                2,
                "incremental: projection over left join",
            ),
            (
                "SELECT u.w, count(*) FROM t RIGHT JOIN u ON t.k = u.k GROUP BY u.w",
                2,
                "incremental: aggregate(count) over right join",
            ),
            (
                "SELECT t.k FROM t FULL JOIN u ON t.k = u.k",
                1,
                "incremental: projection over full join",
            ),
            (
                "SELECT k FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k > t.v) AND g > 1",
                1,
                "incremental: projection over NOT EXISTS",
            ),
            (
                "SELECT k FROM t WHERE k NOT IN (SELECT w FROM u)",
                1,
                "incremental: projection over NOT IN",
            ),
            (
                "SELECT t.k FROM t SEMI JOIN u ON t.k = u.k",
                1,
                "incremental: projection over semi join",
            ),
            (
                "SELECT k FROM t UNION ALL SELECT k FROM u",
                1,
                "incremental: projection over UNION ALL",
            ),
            (
                "WITH c AS (SELECT k, v FROM t) SELECT k, AVG(v) FROM c GROUP BY k",
                2,
                "incremental: aggregate(avg) over CTE, subquery",
            ),
        ] {
            let c = compiled(q, n);
            assert_eq!(c.full_reason, None, "{q}");
            assert_eq!(c.plan.strategy, strategy, "{q}");
        }
    }

    #[test]
    fn names_the_construct_it_cannot_maintain() {
        assert_eq!(
            reason(
                "SELECT t.k FROM t SEMI JOIN u ON t.k = u.k FULL JOIN t AS x ON x.k = t.k",
                1
            )
            .as_deref(),
            Some("a FULL JOIN after a SEMI or ANTI JOIN")
        );
        assert_eq!(
            reason(
                "SELECT t.k FROM t WHERE CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.k IN (SELECT x.k FROM t x)) THEN t.v > 1 END",
                1
            )
            .as_deref(),
            Some("a nested EXISTS/IN that refers to an outer query")
        );
        assert_eq!(
            reason(
                "SELECT t.k FROM t WHERE t.v > 1 OR NOT (t.k IN (SELECT max(u.k) FROM u))",
                1
            )
            .as_deref(),
            Some("MIN/MAX in an aggregate subquery")
        );
        assert_eq!(
            reason(
                "SELECT x.n FROM (SELECT g, count(DISTINCT v) AS n FROM t GROUP BY g) x",
                1
            )
            .as_deref(),
            Some("a DISTINCT aggregate in an aggregate subquery")
        );
        assert_eq!(
            reason(
                "SELECT t.k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k HAVING count(*) > 1)",
                1
            )
            .as_deref(),
            Some("a correlated aggregate subquery")
        );
        assert_eq!(
            reason(
                "SELECT t.k FROM t WHERE t.k IN (SELECT count(*) FROM u WHERE w > g)",
                1
            )
            .as_deref(),
            Some("a correlated aggregate subquery")
        );
        assert_eq!(
            reason(
                "SELECT s.k FROM (SELECT k, count(*) + 1 FROM u GROUP BY k) s",
                1
            )
            .as_deref(),
            Some("an aggregate subquery column without an alias")
        );
        assert_eq!(
            reason(
                "SELECT t.k IN (SELECT k FROM u), t.v IN (SELECT w FROM u), EXISTS (SELECT 1 FROM u), \
                 EXISTS (SELECT 1 FROM u WHERE u.k = t.k) FROM t",
                4
            )
            .as_deref(),
            Some("more than three EXISTS/IN tests in the select list")
        );
        assert_eq!(
            reason(
                "SELECT s.e FROM (SELECT EXISTS (SELECT 1 FROM u WHERE u.k = t.k) AS e FROM t) s",
                1
            )
            .as_deref(),
            Some("a subquery in an expression")
        );
        assert_eq!(
            reason("SELECT k, (SELECT max(w) FROM u) FROM t", 2).as_deref(),
            Some("a subquery in an expression")
        );
        assert_eq!(
            reason("SELECT k FROM t ORDER BY k", 1).as_deref(),
            Some("ORDER BY")
        );
        assert_eq!(
            reason("SELECT k FROM t LIMIT 3", 1).as_deref(),
            Some("LIMIT")
        );
        assert_eq!(
            reason("SELECT k, random() FROM t", 2).as_deref(),
            Some("non-deterministic function random()")
        );
        assert_eq!(
            reason("SELECT g, string_agg(g, ',') FROM t GROUP BY g", 2).as_deref(),
            Some("aggregate string_agg()")
        );
        assert_eq!(
            reason("SELECT g, sum(v ORDER BY v) FROM t GROUP BY g", 2).as_deref(),
            Some("sum() with several arguments or ORDER BY")
        );
        assert_eq!(
            reason(
                "SELECT g, COUNT(DISTINCT v), sum(DISTINCT v) FROM t GROUP BY g",
                3
            ),
            None
        );
        // Under OR an IN test is maintained (a guard); see the NOT case above.
        assert_eq!(
            reason("SELECT k FROM t WHERE k IN (SELECT k FROM u) OR k = 1", 1).as_deref(),
            None
        );
        assert_eq!(
            reason("SELECT 1", 1).as_deref(),
            Some("a query without FROM")
        );
        assert_eq!(
            reason(
                "SELECT k FROM t WHERE __mv_ex_0__ OR k IN (SELECT k FROM u)",
                1
            )
            .as_deref(),
            Some("the name __mv_ex_0__, which duckmv reserves")
        );
        assert_eq!(
            reason("SELECT k FROM nosuch", 1)
                .as_deref()
                .map(|r| r.starts_with("a reference to nosuch")),
            Some(true)
        );
        assert_eq!(
            reason("WITH RECURSIVE r AS (SELECT 1 AS n) SELECT n FROM r", 1).as_deref(),
            Some("WITH RECURSIVE")
        );
        // Full plans still record the tables they read, for DROP TABLE protection.
        let c = compiled(
            "SELECT t.k FROM t, u WHERE t.k = u.k OR CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.k IN (SELECT x.k FROM t x)) THEN TRUE END",
            1,
        );
        let names: Vec<&str> = c.plan.sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["t", "u"]);
        assert!(
            c.plan.strategy.starts_with("full: a nested EXISTS/IN"),
            "{}",
            c.plan.strategy
        );
    }

    fn aggregate(q: &str, ncols: usize) -> Aggregate {
        match compiled(q, ncols).plan.body {
            Body::Aggregate(a) => a,
            other => panic!("not an aggregate: {other:?}"),
        }
    }

    #[test]
    fn sum_and_avg_of_one_argument_share_their_state() {
        let a = aggregate(
            "SELECT g, SUM(v) AS s, AVG(v) AS a, AVG(k) AS b, COUNT(v) AS n FROM t GROUP BY g",
            5,
        );
        assert_eq!(a.aggs.len(), 4);
        let slots: Vec<usize> = a.state_fns().map(|f| f.slot).collect();
        assert_eq!(slots, [1, 2, 3], "SUM(v) and AVG(v) share slot 1");
        assert!(a.output[1].contains("s_1") && a.output[2].contains("s_1"));
        assert!(a.output[3].contains("s_2"));
    }

    #[test]
    fn aggregates_are_rewritten_over_state_columns() {
        let a = aggregate(
            "SELECT g, SUM(v) + COUNT(*) AS x, MIN(v) FROM t GROUP BY g HAVING SUM(v) > 2",
            3,
        );
        assert_eq!(a.groups, 1);
        let select: Vec<&Expr> = a.input.select.iter().map(UserExpr::ast).collect();
        assert!(
            matches!(select[..], [Expr::Identifier(g), Expr::Identifier(v)] if g.value == "g" && v.value == "v")
        );
        assert_eq!(
            a.aggs.len(),
            3,
            "SUM(v) in HAVING reuses the select list's slot"
        );
        assert_eq!(a.output[0], "CAST(_g1 AS INTEGER) AS \"col1\"");
        assert_eq!(
            a.output[1],
            r#"CAST((CASE WHEN "n_1" = 0 THEN NULL ELSE "s_1" END) + "_mv_count" AS INTEGER) AS "col2""#
        );
        assert_eq!(
            a.having.as_ref().map(UserExpr::to_string).as_deref(),
            Some(r#"(CASE WHEN "n_1" = 0 THEN NULL ELSE "s_1" END) > 2"#)
        );
    }

    #[test]
    fn star_expands_against_every_join_input() {
        let c = compiled("SELECT * FROM t JOIN u ON t.k = u.k", 5);
        let Body::Bag {
            rel: Rel::Block(b), ..
        } = &c.plan.body
        else {
            panic!("not a bag")
        };
        let columns: Vec<Vec<&str>> = b
            .select
            .iter()
            .map(|e| match e.ast() {
                Expr::CompoundIdentifier(parts) => parts.iter().map(|p| p.value.as_str()).collect(),
                other => panic!("not a column: {other}"),
            })
            .collect();
        let want = [["t", "k"], ["t", "g"], ["t", "v"], ["u", "k"], ["u", "w"]];
        assert_eq!(columns, want);
        let Some(Expr::Nested(on)) = b.filter.as_ref().map(UserExpr::ast) else {
            panic!("the ON predicate is the filter: {:?}", b.filter);
        };
        assert!(matches!(
            on.as_ref(),
            Expr::BinaryOp {
                op: sqlparser::ast::BinaryOperator::Eq,
                ..
            }
        ));
    }
}
