//! The view compiler: parses a definition once, at CREATE, decides how each part is maintained
//! and produces a [`Plan`]. Shapes without an incremental rule get `Body::Full` and a reason that
//! the CREATE notice and the catalog show.
//!
//! By phase: `query` binds the shape of the definition (bodies, CTEs, UNIONs, subqueries),
//! `from` a select-project-join block against the catalog (`resolve`), `joins` the outer and
//! existence joins inside it, `aggregate` and `subagg` grouped queries, `window` window
//! functions; `support` is the check
//! of what has no incremental rule, whose refusals are the reasons users see. The rewrites
//! done on the user's syntax first (`column_lists`, `filter`, `select_tests`) have their own
//! files.

use reasons::Why;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, ObjectNamePart, Query, Visit, Visitor};

mod aggregate;
mod column_lists;
mod correlated;
mod existence;
mod filter;
mod from;
mod grouped_window;
mod grouping_sets;
mod joins;
mod kept_groups;
mod kept_window;
mod levels;
mod lift;
mod named_window;
mod probe;
mod query;
mod read_columns;
pub mod reasons;
mod recursive;
mod resolve;
mod scalar;
mod select_tests;
mod subagg;
mod support;
mod unique_rows;
mod whole_call;
mod window;
mod window_filter;
mod window_subquery;

use super::ops::{Exists, Guard};
use super::plan::{AggFn, Block, Body, Item, ItemFrom, Plan, Source};
use super::user_expr::UserExpr;
use super::{IvmError, Sql};
pub(super) use resolve::current_database;
use resolve::resolve;

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
            full_reason: Some(Why::SyntaxNotAnalysed.into()),
        });
    };
    let mut an = Analyzer::new(db, id)?;
    an.reads = read_columns::Names::of(&q);
    let shape = match support::reserved_name(&q) {
        Some(name) => full(Why::ReservedName.with(name)),
        None => an.top(&q, columns.len()),
    };
    match shape {
        Ok(body) => {
            let mut strategy = format!("incremental: {}", an.describe(&body));
            if an.recursion.is_some() {
                strategy.push_str(
                    "; the recursive query adds the rows inserts derive (semi-naive) and takes \
                     out those deletes leave without a derivation",
                );
            }
            let sources = an.sources;
            let row_key = matches!(body, Body::Bag { .. }) && super::plan::keyable(&types);
            let unique_rows = unique_rows::of(an.db, &sources, &body)?;
            if unique_rows {
                strategy.push_str(unique_rows::NOTE);
            }
            let plan = Plan {
                id,
                columns,
                types,
                sources,
                body,
                strategy,
                order_by: None,
                limit: None,
                set_op: None,
                recursion: an.recursion,
                windows: an.windows,
                row_key,
                unique_rows,
            };
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
        limit: None,
        set_op: None,
        recursion: None,
        windows: Vec::new(),
        row_key: false,
        unique_rows: false,
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

struct Analyzer<'a> {
    db: &'a mut dyn Sql,
    id: i64,
    sources: Vec<Source>,
    aggregates: HashSet<String>,
    volatile: HashSet<String>,
    features: BTreeSet<&'static str>,
    subquery_count: usize,
    /// The names the definition uses: base tables are seen with only the columns it reads.
    reads: read_columns::Names,
    /// The recursive CTE's name (lower case) and the source that reads its rows.
    recursive: Option<(String, usize)>,
    recursion: Option<super::plan::Recursion>,
    /// The window queries read as FROM items that the view keeps (`plan::sub_window`), and
    /// the source each query's text is read as (a CTE read twice is kept once).
    windows: Vec<super::plan::SubWindow>,
    window_sources: HashMap<String, usize>,
    /// How many FROM items read each kept window query's source so far.
    window_reads: HashMap<usize, usize>,
}

type Scope = Vec<(String, Query)>;

/// What one SELECT block reads and filters, before its select list is interpreted.
#[derive(Default)]
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

impl BlockFrom {
    /// The block reading this FROM and WHERE with the select list `select` named `names`.
    fn into_block(self, select: Vec<UserExpr>, names: Vec<String>) -> Block {
        Block {
            items: self.items,
            select,
            names,
            filter: self.filter,
            exists: self.exists,
            guards: self.guards,
        }
    }
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
            reads: read_columns::Names::default(),
            recursive: None,
            recursion: None,
            windows: Vec::new(),
            window_sources: HashMap::new(),
            window_reads: HashMap::new(),
        })
    }

    fn describe(&self, body: &Body) -> String {
        let kind = match body {
            Body::Full { .. } => "full".to_string(),
            Body::Bag { distinct: true, .. } => "distinct".to_string(),
            Body::Bag {
                distinct: false, ..
            } => "projection".to_string(),
            Body::Windowed(w) => {
                let distinct = if w.distinct { "distinct " } else { "" };
                format!("{distinct}window({})", w.functions.join(","))
            }
            Body::Aggregate(a) => {
                let names: BTreeSet<String> = a.aggs.iter().map(AggFn::label).collect();
                let names: Vec<String> = names.into_iter().collect();
                format!("aggregate({})", names.join(","))
            }
        };
        let mut over: Vec<&str> = self.features.iter().copied().collect();
        if over.is_empty() {
            over.push("one table");
        }
        format!("{kind} over {}", over.join(", "))
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

#[cfg(test)]
pub(crate) mod tests;
