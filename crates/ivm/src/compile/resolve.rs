//! Which relation a table name in a definition names: one of our materialized views, or a base
//! table in the server's database or in another attached one — looked up in the catalog it is
//! in, never by name alone (two databases may both hold a `main.t`).

use super::super::catalog;
use super::super::plan::{output_view, Source, SourceKind};
use super::super::text::{ident, lit, qualified};
use super::super::{IvmError, Sql};

/// The server's own database: where views, their state and the capture triggers live.
pub fn current_database(db: &mut dyn Sql) -> Result<String, IvmError> {
    let rows = db.query("SELECT current_database()")?;
    Ok(rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_default())
}

/// Looks a table name up as DuckDB binds it: `t` in the current database's `main`; `a.t` in
/// schema `a` of the current database, else in database `a`'s `main` (DuckDB refuses the name
/// when both exist, before the view is compiled); `c.s.t` exactly. Anything but our views and
/// base tables (plain views, table functions) is not a source we can capture.
pub fn resolve(db: &mut dyn Sql, parts: &[String]) -> Result<Option<Source>, IvmError> {
    let here = current_database(db)?;
    let main = "main".to_string();
    let candidates: Vec<(&String, &String, &String)> = match parts {
        [n] => vec![(&here, &main, n)],
        [a, n] => vec![(&here, a, n), (a, &main, n)],
        [c, s, n] => vec![(c, s, n)],
        _ => return Ok(None),
    };
    for (cat, schema, name) in candidates {
        let local = cat.eq_ignore_ascii_case(&here);
        if local {
            if let Some(v) = catalog::find_view(db, schema, name)? {
                return Ok(Some(Source {
                    catalog: None,
                    schema: v.schema.clone(),
                    name: v.name.clone(),
                    kind: SourceKind::View,
                    view_id: Some(v.id),
                    columns: v.plan.visible_columns().to_vec(),
                    relation: output_view(v.id),
                    delta: None,
                    log: None,
                }));
            }
        }
        if let Some(s) = base_table(db, cat, schema, name, local)? {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

/// The base table `cat.schema.name` (matched as DuckDB matches names: case-insensitively), with
/// its columns in order.
fn base_table(
    db: &mut dyn Sql,
    cat: &str,
    schema: &str,
    name: &str,
    local: bool,
) -> Result<Option<Source>, IvmError> {
    let rows = db.query(&format!(
        "SELECT table_catalog, table_schema, table_name FROM information_schema.tables \
         WHERE lower(table_catalog) = lower({}) AND lower(table_schema) = lower({}) \
         AND lower(table_name) = lower({}) AND table_type = 'BASE TABLE'",
        lit(cat),
        lit(schema),
        lit(name)
    ))?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let get = |i: usize| row[i].clone().unwrap_or_default();
    let (cat, schema, name) = (get(0), get(1), get(2));
    let cols = db.query(&format!(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = {} \
         AND table_schema = {} AND table_name = {} ORDER BY ordinal_position",
        lit(&cat),
        lit(&schema),
        lit(&name)
    ))?;
    // Tables of the server's database keep two-part names (as plans always had); others are
    // named with their database.
    let relation = if local {
        qualified(&schema, &name)
    } else {
        format!("{}.{}", ident(&cat), qualified(&schema, &name))
    };
    Ok(Some(Source {
        catalog: (!local).then_some(cat),
        relation,
        schema,
        name,
        kind: SourceKind::Table,
        view_id: None,
        columns: cols
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_default())
            .collect(),
        delta: None,
        log: None,
    }))
}
