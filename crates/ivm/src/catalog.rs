//! The internal catalog (`_duckmv.views`, `_duckmv.view_sources`); the user-facing
//! `duckmv.views` view over it is `views_view`. `pg_matviews` is built by others from the plain columns of
//! `_duckmv.views` (name, schema, definition, populated).

use super::plan::{Plan, SourceKind};
use super::program::Programs;
use super::text::{ident, lit};
use super::{IvmError, Sql};

/// One row of `_duckmv.views`.
#[derive(Debug, Clone)]
pub struct ViewRow {
    pub id: i64,
    pub schema: String,
    pub name: String,
    pub definition: String,
    pub populated: bool,
    pub plan: Plan,
    /// The refresh programs built for this plan so far (kept while the row is cached).
    pub programs: Programs,
}

/// Creates the schemas, sequence and catalog tables if absent.
pub fn bootstrap(db: &mut dyn Sql) -> Result<(), IvmError> {
    for sql in [
        "CREATE SCHEMA IF NOT EXISTS _duckmv",
        "CREATE SCHEMA IF NOT EXISTS duckmv",
        "CREATE SEQUENCE IF NOT EXISTS _duckmv.view_ids",
        "CREATE TABLE IF NOT EXISTS _duckmv.views (id BIGINT, name VARCHAR, schema VARCHAR, definition VARCHAR, \
         columns VARCHAR, plan VARCHAR, populated BOOLEAN, strategy VARCHAR, created_at TIMESTAMP, \
         last_refresh TIMESTAMP, duration_ms DOUBLE, rows_changed BIGINT)",
        "CREATE TABLE IF NOT EXISTS _duckmv.view_sources (view_id BIGINT, source_schema VARCHAR, \
         source_name VARCHAR, kind VARCHAR, source_view_id BIGINT, delta_table VARCHAR)",
    ] {
        db.exec(sql)?;
    }
    // Added after the first release: which mode the last refresh used, and the attached
    // database of a source outside the server's own (NULL: the server's).
    db.exec("ALTER TABLE _duckmv.views ADD COLUMN IF NOT EXISTS last_refresh_mode VARCHAR")?;
    db.exec("ALTER TABLE _duckmv.view_sources ADD COLUMN IF NOT EXISTS source_catalog VARCHAR")?;
    // Added with refresh policies: the policy (NULL: on demand), and what the background
    // refresher last said about a scheduled view (written only by the refresher).
    db.exec("ALTER TABLE _duckmv.views ADD COLUMN IF NOT EXISTS refresh_policy VARCHAR")?;
    // Added with `auto` from measured timings: why the last refresh ran as it did.
    db.exec("ALTER TABLE _duckmv.views ADD COLUMN IF NOT EXISTS last_refresh_reason VARCHAR")?;
    db.exec(
        "CREATE TABLE IF NOT EXISTS _duckmv.refresher_status (view_id BIGINT, status VARCHAR, \
         noted_at TIMESTAMP)",
    )?;
    // Facts about the database as a whole, by name (the hash fingerprint of `rekey`).
    db.exec("CREATE TABLE IF NOT EXISTS _duckmv.settings (name VARCHAR, value VARCHAR)")?;
    Ok(())
}

const VIEW_COLS: &str = "id, schema, name, definition, populated, plan";

fn row_from(r: Vec<Option<String>>) -> Result<ViewRow, IvmError> {
    let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
    let plan: Plan =
        serde_json::from_str(&get(5)).map_err(|e| IvmError::Internal(format!("bad plan: {e}")))?;
    Ok(ViewRow {
        id: get(0)
            .parse()
            .map_err(|_| IvmError::Internal("bad view id".into()))?,
        schema: get(1),
        name: get(2),
        definition: get(3),
        populated: get(4) == "true",
        plan,
        programs: Programs::default(),
    })
}

/// The materialized view with this name, if any (names match case-insensitively, like DuckDB's).
pub fn find_view(db: &mut dyn Sql, schema: &str, name: &str) -> Result<Option<ViewRow>, IvmError> {
    if !catalog_exists(db)? {
        return Ok(None);
    }
    find_view_unchecked(db, schema, name)
}

/// [`find_view`] for callers that know the catalog exists (REFRESH: one query, so a refresh with
/// nothing pending costs this lookup and the probes only).
pub fn find_view_unchecked(
    db: &mut dyn Sql,
    schema: &str,
    name: &str,
) -> Result<Option<ViewRow>, IvmError> {
    let rows = db.query(&format!(
        "SELECT {VIEW_COLS} FROM _duckmv.views WHERE lower(schema) = lower({}) AND lower(name) = lower({})",
        lit(schema),
        lit(name)
    ))?;
    rows.into_iter().next().map(row_from).transpose()
}

/// Whether the catalog tables exist (a database no view was ever created in has none).
pub fn exists(db: &mut dyn Sql) -> Result<bool, IvmError> {
    catalog_exists(db)
}

fn catalog_exists(db: &mut dyn Sql) -> Result<bool, IvmError> {
    Ok(!db
        .query("SELECT 1 FROM information_schema.tables WHERE table_schema = '_duckmv' AND table_name = 'views'")?
        .is_empty())
}

pub fn find_view_by_id(db: &mut dyn Sql, id: i64) -> Result<Option<ViewRow>, IvmError> {
    let rows = db.query(&format!(
        "SELECT {VIEW_COLS} FROM _duckmv.views WHERE id = {id}"
    ))?;
    rows.into_iter().next().map(row_from).transpose()
}

/// Whether any relation (table or view, ours or not) has this name in the server's database.
pub fn relation_exists(db: &mut dyn Sql, schema: &str, name: &str) -> Result<bool, IvmError> {
    Ok(!db
        .query(&format!(
            "SELECT 1 FROM information_schema.tables WHERE table_catalog = current_database() \
             AND lower(table_schema) = lower({}) AND lower(table_name) = lower({})",
            lit(schema),
            lit(name)
        ))?
        .is_empty())
}

pub fn next_id(db: &mut dyn Sql) -> Result<i64, IvmError> {
    let rows = db.query("SELECT nextval('_duckmv.view_ids')")?;
    rows.first()
        .and_then(|r| r[0].as_deref())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| IvmError::Internal("no view id".into()))
}

/// Records a new view and the sources it reads.
pub fn insert_view(db: &mut dyn Sql, row: &ViewRow) -> Result<(), IvmError> {
    let plan = serde_json::to_string(&row.plan).map_err(|e| IvmError::Internal(e.to_string()))?;
    let columns = serde_json::to_string(row.plan.visible_columns())
        .map_err(|e| IvmError::Internal(e.to_string()))?;
    db.exec(&format!(
        "INSERT INTO _duckmv.views (id, name, schema, definition, columns, plan, populated, strategy, created_at) \
         VALUES ({}, {}, {}, {}, {}, {}, {}, {}, now())",
        row.id,
        lit(&row.name),
        lit(&row.schema),
        lit(&row.definition),
        lit(&columns),
        lit(&plan),
        row.populated,
        lit(&row.plan.strategy)
    ))?;
    for s in &row.plan.sources {
        let kind = match s.kind {
            SourceKind::Table => "table",
            SourceKind::View => "view",
            // The view's own rows: it depends on no relation through them.
            SourceKind::Recursive | SourceKind::Window => continue,
        };
        let null = || "NULL".to_string();
        db.exec(&format!(
            "INSERT INTO _duckmv.view_sources (view_id, source_schema, source_name, kind, \
             source_view_id, delta_table, source_catalog) VALUES ({}, {}, {}, {}, {}, {}, {})",
            row.id,
            lit(&s.schema),
            lit(&s.name),
            lit(kind),
            s.view_id.map(|v| v.to_string()).unwrap_or_else(null),
            s.delta.as_deref().map(lit).unwrap_or_else(null),
            s.catalog.as_deref().map(lit).unwrap_or_else(null)
        ))?;
    }
    Ok(())
}

/// Stores a view's plan again (after its capture changed).
pub fn save_plan(db: &mut dyn Sql, id: i64, plan: &Plan) -> Result<(), IvmError> {
    let plan = serde_json::to_string(plan).map_err(|e| IvmError::Internal(e.to_string()))?;
    db.exec(&format!(
        "UPDATE _duckmv.views SET plan = {} WHERE id = {id}",
        lit(&plan)
    ))?;
    Ok(())
}

pub fn set_populated(db: &mut dyn Sql, id: i64, populated: bool) -> Result<(), IvmError> {
    db.exec(&format!(
        "UPDATE _duckmv.views SET populated = {populated} WHERE id = {id}"
    ))?;
    Ok(())
}

pub fn delete_view(db: &mut dyn Sql, id: i64) -> Result<(), IvmError> {
    db.exec(&format!(
        "DELETE FROM _duckmv.view_sources WHERE view_id = {id}"
    ))?;
    db.exec(&format!("DELETE FROM _duckmv.views WHERE id = {id}"))?;
    Ok(())
}

pub fn rename(db: &mut dyn Sql, id: i64, new_name: &str) -> Result<(), IvmError> {
    db.exec(&format!(
        "UPDATE _duckmv.views SET name = {} WHERE id = {id}",
        lit(new_name)
    ))?;
    db.exec(&format!(
        "UPDATE _duckmv.view_sources SET source_name = {} WHERE source_view_id = {id}",
        lit(new_name)
    ))?;
    Ok(())
}

/// (id, schema, name) of the views that read the relation `schema.name` of attached database
/// `db_name` (None: the server's own).
pub fn readers(
    db: &mut dyn Sql,
    db_name: Option<&str>,
    schema: &str,
    name: &str,
) -> Result<Vec<(i64, String, String)>, IvmError> {
    if !catalog_exists(db)? {
        return Ok(Vec::new());
    }
    let here = "lower(current_database())";
    let wanted = db_name
        .map(|c| format!("lower({})", lit(c)))
        .unwrap_or_else(|| here.to_string());
    let rows = db.query(&format!(
        "SELECT DISTINCT v.id, v.schema, v.name FROM _duckmv.view_sources s JOIN _duckmv.views v ON v.id = s.view_id \
         WHERE coalesce(lower(s.source_catalog), {here}) = {wanted} \
         AND lower(s.source_schema) = lower({}) AND lower(s.source_name) = lower({}) ORDER BY v.id",
        lit(schema),
        lit(name)
    ))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r[0].as_deref().and_then(|v| v.parse().ok()).unwrap_or(0),
                r[1].clone().unwrap_or_default(),
                r[2].clone().unwrap_or_default(),
            )
        })
        .collect())
}

/// The user-facing view `schema.name` reading `body`.
pub fn create_user_view(
    db: &mut dyn Sql,
    schema: &str,
    name: &str,
    body: &str,
) -> Result<(), IvmError> {
    db.exec(&format!(
        "CREATE OR REPLACE VIEW {}.{} AS {body}",
        ident(schema),
        ident(name)
    ))?;
    Ok(())
}
