//! Materialized views maintained incrementally.
//!
//! The engine runs SQL on DuckDB through the tiny [`Sql`] trait, so it can be driven by the
//! server's session connection or, in tests, by a bare `duckdb::Connection`. Every function runs
//! inside a transaction the caller opened and never commits itself: a failure leaves the
//! rollback to the caller, so a failed statement changes nothing.
//!
//! Layout: `compile` turns a definition into a [`plan::Plan`] once, at CREATE; `plan` renders the
//! SQL a refresh runs; `capture` owns the change logs, their triggers and the views' positions in them; `refresh` applies deltas;
//! `catalog` keeps `_duckmv.views` / `_duckmv.view_sources` and the user-facing `duckmv.views`.

mod agg;
mod alter;
mod capture;
mod catalog;
mod compile;
mod define;
mod division;
mod error;
mod history;
mod hot;
pub mod ir;
mod mode;
mod ops;
mod order;
mod pin;
pub mod plan;
pub mod policy;
mod program;
mod refresh;
mod refresh_stats;
mod rekey;
mod set_ops;
mod strategy;
mod text;
mod upgrade;
mod user_expr;
mod view_cache;
mod views_view;

pub use alter::{alter_table, ColumnChange};
pub use compile::reasons;
pub use error::IvmError;
pub use mode::RefreshMode;
pub use policy::{RefreshPolicy, ViewPolicy};
pub use refresh_stats::RefreshStats;
pub use view_cache::ViewCache;

use catalog::ViewRow;
use text::{ident, split_name, split_qualified};

/// What the IVM engine needs from a DuckDB connection. The server implements it for its session
/// connection; tests implement it for `duckdb::Connection`.
pub trait Sql {
    /// Runs one statement; returns the number of rows changed (0 for DDL/queries).
    fn exec(&mut self, sql: &str) -> Result<u64, DbError>;
    /// Runs one query; every value rendered as text by DuckDB (`CAST(x AS VARCHAR)` semantics),
    /// NULL as None.
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError>;
    /// [`Sql::exec`] for a statement a refresh runs again and again with the same text. The
    /// server keeps these prepared, which saves parsing them (DuckDB 2.0 still binds and
    /// optimizes them at every execution, since they read tables). `params` fill `$1`, `$2`, …
    /// as VARCHAR values (write `CAST($1::VARCHAR AS T)`); the default substitutes them as
    /// literals.
    fn exec_hot(&mut self, sql: &str, params: &[String]) -> Result<u64, DbError> {
        self.exec(&hot::substitute(sql, params))
    }
    /// Whether `sql` binds on its own, outside this transaction (tables it creates are not
    /// seen). Used to tell a self-contained subquery from one that refers to an outer query;
    /// false when unknown, which keeps the conservative answer.
    fn binds_alone(&mut self, _sql: &str) -> bool {
        false
    }
    /// [`Sql::query`] for a repeated query; see [`Sql::exec_hot`].
    fn query_hot(
        &mut self,
        sql: &str,
        params: &[String],
    ) -> Result<Vec<Vec<Option<String>>>, DbError> {
        self.query(&hot::substitute(sql, params))
    }
}

/// An error of the database under the engine: its message, and the SQLSTATE the layer that
/// talks to DuckDB gave it (that layer alone maps DuckDB's messages to codes).
#[derive(Debug, Clone)]
pub struct DbError {
    pub message: String,
    pub state: duckmv_sqlstate::SqlState,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DbError {}

/// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name [(columns)] AS query [WITH [NO] DATA]`.
#[derive(Debug, Clone)]
pub struct CreateView {
    pub name: String,
    pub columns: Option<Vec<String>>,
    pub query: String,
    pub with_data: bool,
    pub if_not_exists: bool,
}

/// Notices for the client and the number of rows the statement changed.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub notices: Vec<String>,
    pub rows: u64,
    /// Whether the refresh wrote changes for views that read this one.
    pub downstream: bool,
    /// What a refresh did, for `duckmv.views`; the caller records it ([`record_refreshes`]).
    pub stats: Option<RefreshStats>,
}

/// Creates the internal schema and catalog tables if absent (idempotent; called at server start).
pub fn bootstrap(db: &mut dyn Sql) -> Result<(), IvmError> {
    catalog::bootstrap(db)?;
    refresh_stats::bootstrap(db)?;
    capture::bootstrap(db)?;
    views_view::ensure_current(db)
}

/// Brings a database written by an older duckmv up to date (called once, at server start):
/// views that still have per-view delta tables move to the shared change logs, stored row
/// keys follow DuckDB's hash (see `rekey`), and views that divide are recomputed with
/// PostgreSQL's integer division (see `division`). Returns the names of the views it changed.
pub fn upgrade(db: &mut dyn Sql) -> Result<Vec<String>, IvmError> {
    let mut changed = upgrade::run(db)?;
    changed.extend(rekey::run(db)?);
    changed.extend(division::run(db)?);
    Ok(changed)
}

/// Deletes change-log rows every view has consumed (run in the background, autocommit);
/// `done` carries what earlier calls deleted.
pub fn vacuum_logs(
    db: &mut dyn Sql,
    done: &mut std::collections::HashMap<String, i64>,
) -> Result<u64, IvmError> {
    capture::vacuum(db, done)
}

/// `CREATE MATERIALIZED VIEW`.
/// The query's own column names, the view's (the user's list first), and their types.
type ViewColumns = (Vec<String>, Vec<String>, Vec<String>);

fn view_columns(
    db: &mut dyn Sql,
    query: &str,
    user: Option<&[String]>,
) -> Result<ViewColumns, IvmError> {
    let described = db.query(&format!("DESCRIBE {query}"))?;
    let field = |i: usize| -> Vec<String> {
        described
            .iter()
            .map(|r| r[i].clone().unwrap_or_default())
            .collect()
    };
    let (query_names, types) = (field(0), field(1));
    let mut columns = query_names.clone();
    if let Some(user) = user {
        if user.len() > columns.len() {
            return Err(IvmError::Syntax(
                "too many column names were specified".into(),
            ));
        }
        columns.splice(..user.len(), user.iter().cloned());
    }
    Ok((query_names, columns, types))
}

pub fn create_view(db: &mut dyn Sql, v: &CreateView) -> Result<Outcome, IvmError> {
    bootstrap(db)?;
    let (db_name, schema, name) = split_qualified(&v.name);
    if let Some(d) = db_name {
        if !d.eq_ignore_ascii_case(&compile::current_database(db)?) {
            return Err(IvmError::Unsupported(format!(
                "materialized views are created in the server's database, not in attached database \"{d}\""
            )));
        }
    }
    if catalog::find_view(db, &schema, &name)?.is_some()
        || catalog::relation_exists(db, &schema, &name)?
    {
        if v.if_not_exists {
            return Ok(Outcome {
                notices: vec![format!("relation \"{name}\" already exists, skipping")],
                ..Outcome::default()
            });
        }
        return Err(IvmError::AlreadyExists(name));
    }
    let query = v.query.trim().trim_end_matches(';').trim().to_string();
    let (query_names, columns, types) = view_columns(db, &query, v.columns.as_deref())?;
    let id = catalog::next_id(db)?;
    let defined = define::define(db, id, &query, &query_names, columns, types)?;
    let compiled = defined.compiled;
    let mut plan = compiled.plan;
    for s in &plan.sources {
        if let Some(up) = s.view_id {
            if let Some(row) = catalog::find_view_by_id(db, up)? {
                if !row.populated && v.with_data {
                    return Err(IvmError::NotPopulated(row.name));
                }
            }
        }
    }
    capture::install(db, &mut plan)?;
    create_storage(db, &plan)?;
    db.exec(&format!(
        "CREATE VIEW {} AS {}",
        plan::output_view(id),
        plan::output_view_sql(&plan)
    ))?;
    let row = ViewRow {
        id,
        schema: schema.clone(),
        name: name.clone(),
        definition: query,
        populated: false,
        plan,
        programs: Default::default(),
    };
    catalog::insert_view(db, &row)?;
    let mut outcome = Outcome::default();
    if v.with_data {
        outcome.rows = refresh::refresh(db, &row, true)?.rows;
    } else {
        catalog::create_user_view(db, &schema, &name, &plan::unpopulated_sql(&row.plan, &name))?;
    }
    views_view::regenerate(db)?;
    if let Some(why) = &defined.order_dropped {
        outcome.notices.push(format!(
            "the rows of materialized view \"{name}\" are not kept in the order of its ORDER BY: {why}"
        ));
    }
    if let Some(reason) = compiled.full_reason {
        outcome.notices.push(format!(
            "materialized view \"{name}\" will be refreshed by full recompute: {reason} is not maintained incrementally yet"
        ));
    }
    Ok(outcome)
}

/// The storage table (typed by DuckDB from the state query itself) and the refresh work table.
fn create_storage(db: &mut dyn Sql, plan: &plan::Plan) -> Result<(), IvmError> {
    let storage = plan::storage(plan.id);
    let work = plan::work(plan.id);
    if let Some(r) = &plan.recursion {
        // Before the storage, whose shape is described from a query reading them.
        let rec = plan::rec_table(plan.id);
        empty_table(db, &rec, &r.query)?;
        let change = format!("SELECT *, CAST(1 AS BIGINT) AS _mv_mult FROM {rec}");
        empty_table(db, &plan::rec_change(plan.id), &change)?;
    }
    for w in &plan.windows {
        let win = plan::win_table(plan, w);
        empty_table(db, win, &plan::window_rows_sql(plan, w).to_string())?;
        let change = format!("SELECT *, CAST(1 AS BIGINT) AS _mv_mult FROM {win}");
        empty_table(db, plan::win_change(plan, w), &change)?;
    }
    match &plan.body {
        plan::Body::Full { .. } => empty_table(db, &storage, &refresh::state_sql(plan))?,
        plan::Body::Bag { .. } => {
            empty_table(db, &storage, &refresh::state_sql(plan))?;
            db.exec(&format!(
                "CREATE TABLE {work} AS SELECT * FROM {storage} LIMIT 0"
            ))?;
        }
        plan::Body::Windowed(w) => {
            empty_table(db, &storage, &refresh::state_sql(plan))?;
            empty_table(
                db,
                &work,
                &plan::windowed_work_shape_sql(plan, w).to_string(),
            )?;
        }
        plan::Body::Aggregate(a) => {
            empty_table(db, &storage, &refresh::state_sql(plan))?;
            // Before the work table, whose shape is described from a query reading them.
            for v in plan::values_of(a) {
                let values = plan::values_state_sql(plan, a, v.first).to_string();
                empty_table(db, &plan::values_table(plan.id, v.first.slot), &values)?;
            }
            if let Some(change) = plan::change_shape_sql(plan, a) {
                empty_table(db, &plan::change_table(plan.id), &change.to_string())?;
            }
            if let Some(shape) = plan::agg_work_shape_sql(plan, a) {
                db.exec(&format!("CREATE TABLE {work} AS {shape}"))?;
            }
        }
    }
    Ok(())
}

/// Creates an empty table shaped like `query` with explicit column types. Not `CREATE TABLE AS
/// … LIMIT 0`: in DuckDB 2.0 a large parallel INSERT into a table created that way in the same
/// transaction (CREATE MATERIALIZED VIEW populating its storage) commits no rows at all
/// (reproduced with 833k rows from a join; fine with one thread or explicit columns).
fn empty_table(db: &mut dyn Sql, name: &str, query: &str) -> Result<(), IvmError> {
    let cols: Vec<String> = db
        .query(&format!("DESCRIBE {query}"))?
        .into_iter()
        .map(|r| {
            format!(
                "{} {}",
                ident(r[0].as_deref().unwrap_or_default()),
                r[1].as_deref().unwrap_or_default()
            )
        })
        .collect();
    db.exec(&format!("CREATE TABLE {name} ({})", cols.join(", ")))?;
    Ok(())
}

fn lookup(db: &mut dyn Sql, name: &str) -> Result<ViewRow, IvmError> {
    let (schema, n) = split_name(name);
    catalog::find_view_unchecked(db, &schema, &n)?.ok_or(IvmError::NoSuchView(n))
}

/// `REFRESH MATERIALIZED VIEW name [WITH [NO] DATA]`, always incremental when the view can be
/// (reads the catalog every time; the server uses [`refresh_view_cached`]).
pub fn refresh_view(db: &mut dyn Sql, name: &str, with_data: bool) -> Result<Outcome, IvmError> {
    let out = refresh::refresh_named(db, None, name, with_data, RefreshMode::Incremental)?;
    record_refreshes(db, out.stats.as_slice())?;
    Ok(out)
}

/// `REFRESH MATERIALIZED VIEW` as the server runs it: the plan from `cache`, and `mode` from the
/// session's `duckmv.refresh_mode`. What the refresh did is left in the outcome's `stats` for the
/// server to record once the transaction commits.
pub fn refresh_view_cached(
    db: &mut dyn Sql,
    cache: &ViewCache,
    name: &str,
    with_data: bool,
    mode: RefreshMode,
) -> Result<Outcome, IvmError> {
    refresh::refresh_named(db, Some(cache), name, with_data, mode)
}

/// Records what refreshes did, for `duckmv.views` (the last one of each view wins). The server
/// calls this in a transaction of its own; see `refresh_stats`.
pub fn record_refreshes(db: &mut dyn Sql, stats: &[RefreshStats]) -> Result<(), IvmError> {
    refresh_stats::record(db, stats)
}

/// Forgets the recorded refreshes of dropped views.
pub fn prune_refreshes(db: &mut dyn Sql) -> Result<u64, IvmError> {
    refresh_stats::prune(db)
}

/// `EXPLAIN REFRESH MATERIALIZED VIEW name`: the statements a refresh in this transaction
/// would run under `mode`, one line of text each (with what each does); changes nothing.
pub fn explain_refresh(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    name: &str,
    mode: RefreshMode,
) -> Result<Vec<String>, IvmError> {
    refresh::explain_named(db, cache, name, mode)
}

/// `DROP MATERIALIZED VIEW [IF EXISTS] name, ... [CASCADE]`. Views reading a dropped view are
/// dropped with CASCADE, otherwise the drop fails with 2BP01.
pub fn drop_views(
    db: &mut dyn Sql,
    names: &[String],
    if_exists: bool,
    cascade: bool,
) -> Result<Outcome, IvmError> {
    let mut outcome = Outcome::default();
    let mut doomed: Vec<ViewRow> = Vec::new();
    for n in names {
        let (schema, name) = split_name(n);
        match catalog::find_view(db, &schema, &name)? {
            Some(v) if !doomed.iter().any(|d| d.id == v.id) => doomed.push(v),
            Some(_) => {}
            None if if_exists => outcome.notices.push(format!(
                "materialized view \"{name}\" does not exist, skipping"
            )),
            None => return Err(IvmError::NoSuchView(name)),
        }
    }
    let mut i = 0;
    while i < doomed.len() {
        let (schema, name) = (doomed[i].schema.clone(), doomed[i].name.clone());
        for (id, _, reader) in catalog::readers(db, None, &schema, &name)? {
            if doomed.iter().any(|d| d.id == id) {
                continue;
            }
            if !cascade {
                return Err(IvmError::Dependents {
                    object: format!("materialized view {name}"),
                    dependents: format!(
                        "materialized view {reader} depends on materialized view {name}"
                    ),
                });
            }
            outcome
                .notices
                .push(format!("drop cascades to materialized view {reader}"));
            if let Some(v) = catalog::find_view_by_id(db, id)? {
                doomed.push(v);
            }
        }
        i += 1;
    }
    for v in &doomed {
        capture::uninstall(db, &v.plan)?;
        db.exec(&format!(
            "DROP VIEW IF EXISTS {}.{}",
            ident(&v.schema),
            ident(&v.name)
        ))?;
        db.exec(&format!("DROP VIEW IF EXISTS {}", plan::output_view(v.id)))?;
        db.exec(&format!("DROP TABLE IF EXISTS {}", plan::storage(v.id)))?;
        db.exec(&format!("DROP TABLE IF EXISTS {}", plan::work(v.id)))?;
        if let plan::Body::Aggregate(a) = &v.plan.body {
            for values in plan::values_of(a) {
                let values = plan::values_table(v.id, values.first.slot);
                db.exec(&format!("DROP TABLE IF EXISTS {values}"))?;
            }
            let change = plan::change_table(v.id);
            db.exec(&format!("DROP TABLE IF EXISTS {change}"))?;
        }
        if v.plan.recursion.is_some() {
            db.exec(&format!("DROP TABLE IF EXISTS {}", plan::rec_table(v.id)))?;
            db.exec(&format!("DROP TABLE IF EXISTS {}", plan::rec_change(v.id)))?;
        }
        for w in &v.plan.windows {
            let (win, change) = (plan::win_table(&v.plan, w), plan::win_change(&v.plan, w));
            db.exec(&format!("DROP TABLE IF EXISTS {win}"))?;
            db.exec(&format!("DROP TABLE IF EXISTS {change}"))?;
        }
        catalog::delete_view(db, v.id)?;
    }
    if !doomed.is_empty() {
        views_view::regenerate(db)?;
    }
    Ok(outcome)
}

/// `ALTER MATERIALIZED VIEW name RENAME TO new_name`. Internal objects are named by id, so only
/// the catalog and the user-facing view change.
pub fn rename_view(db: &mut dyn Sql, name: &str, new_name: &str) -> Result<Outcome, IvmError> {
    let view = lookup(db, name)?;
    let (_, new_name) = split_name(new_name);
    if catalog::relation_exists(db, &view.schema, &new_name)? {
        return Err(IvmError::AlreadyExists(new_name));
    }
    db.exec(&format!(
        "DROP VIEW {}.{}",
        ident(&view.schema),
        ident(&view.name)
    ))?;
    let body = if view.populated {
        plan::user_view_sql(&view.plan)
    } else {
        plan::unpopulated_sql(&view.plan, &new_name)
    };
    catalog::create_user_view(db, &view.schema, &new_name, &body)?;
    catalog::rename(db, view.id, &new_name)?;
    views_view::regenerate(db)?;
    Ok(Outcome::default())
}

/// Names of materialized views that read `table` (a base table or another view; `db.s.t` for a
/// table in another attached database); the server refuses DROP of such a table with SQLSTATE
/// 2BP01 unless CASCADE, and on CASCADE calls [`drop_views`].
pub fn dependents(db: &mut dyn Sql, table: &str) -> Result<Vec<String>, IvmError> {
    let (db_name, schema, name) = split_qualified(table);
    Ok(catalog::readers(db, db_name.as_deref(), &schema, &name)?
        .into_iter()
        .map(|(_, s, n)| if s == "main" { n } else { format!("{s}.{n}") })
        .collect())
}

/// `ALTER MATERIALIZED VIEW name SET (refresh = …)` / `RESET (refresh)` (`OnDemand`).
pub fn set_refresh_policy(
    db: &mut dyn Sql,
    name: &str,
    policy: RefreshPolicy,
) -> Result<Outcome, IvmError> {
    let view = lookup(db, name)?;
    policy::store(db, view.id, policy)?;
    Ok(Outcome::default())
}

/// Every materialized view with its refresh policy and sources, in id order.
pub fn view_policies(db: &mut dyn Sql) -> Result<Vec<ViewPolicy>, IvmError> {
    if !catalog::exists(db)? {
        return Ok(Vec::new());
    }
    policy::all(db)
}

/// Records what the background refresher says about view `id` (None clears it).
pub fn record_refresher_status(
    db: &mut dyn Sql,
    id: i64,
    status: Option<&str>,
) -> Result<(), IvmError> {
    policy::record_status(db, id, status)
}

/// Whether any table or view (ours or not) is called `name`.
pub fn relation_exists(db: &mut dyn Sql, name: &str) -> Result<bool, IvmError> {
    let (schema, n) = split_name(name);
    catalog::relation_exists(db, &schema, &n)
}

/// Whether `name` is one of our materialized views.
pub fn is_materialized_view(db: &mut dyn Sql, name: &str) -> Result<bool, IvmError> {
    let (schema, n) = split_name(name);
    Ok(catalog::find_view(db, &schema, &n)?.is_some())
}
