//! Upgrades a database written by an older duckmv. Earlier versions kept one delta table per
//! (view, source), filled by that view's own triggers; now every view reads one change log per
//! source (`capture`). A view still on delta tables has its triggers and tables dropped, reads
//! the logs from their current end, and is recomputed from its sources when populated — the
//! changes its delta tables held are in the sources already, so nothing pending is lost. Views
//! go in id order, upstream before downstream (a view is created after the views it reads).

use std::collections::HashMap;

use super::catalog::{self, ViewRow};
use super::text::lit;
use super::{capture, refresh, IvmError, Sql};

/// Moves every view still on delta tables to the change logs; returns their names. Delta views
/// of an earlier layout are redefined first.
pub fn run(db: &mut dyn Sql) -> Result<Vec<String>, IvmError> {
    redefine_delta_views(db)?;
    let old = names(
        db,
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() \
         WHERE database_name = current_database() AND schema_name = '_duckmv' \
         AND table_name LIKE 'd\\_%' ESCAPE '\\'",
    )?;
    if old.is_empty() {
        return Ok(Vec::new());
    }
    let mut moved = Vec::new();
    for mut view in views_in_id_order(db)? {
        let on_tables = view
            .plan
            .sources
            .iter()
            .any(|s| s.delta.as_ref().is_some_and(|d| old.contains(d)));
        if on_tables {
            move_view(db, &mut view)?;
            moved.push(view.name.clone());
        }
    }
    Ok(moved)
}

/// Delta views of an earlier layout get the current one (see `capture::delta_view_sql`): those
/// that read their position through a scalar subquery, and those read as they are by a view
/// that now reads its changes consolidated (or the reverse). The changes they stand for do not
/// change.
fn redefine_delta_views(db: &mut dyn Sql) -> Result<(), IvmError> {
    let rows = db.query(
        "SELECT schema_name || '.' || view_name, contains(sql, '(SELECT consumed FROM'), \
         contains(sql, 'HAVING') FROM duckdb_views() \
         WHERE database_name = current_database() AND schema_name = '_duckmv'",
    )?;
    let layout: HashMap<String, (bool, bool)> = rows
        .into_iter()
        .filter_map(|r| {
            let flag = |i: usize| r[i].as_deref() == Some("true");
            Some((r[0].clone()?, (flag(1), flag(2))))
        })
        .collect();
    if layout.is_empty() {
        return Ok(());
    }
    for view in views_in_id_order(db)? {
        let consolidated = capture::consolidates(&view.plan);
        for s in &view.plan.sources {
            let stale = s
                .delta
                .as_ref()
                .and_then(|d| layout.get(d))
                .is_some_and(|&(scalar, having)| scalar || having != consolidated);
            if !stale {
                continue;
            }
            if let Some(sql) = capture::delta_view_sql(&view.plan, "CREATE OR REPLACE VIEW", s) {
                db.exec(&sql)?;
            }
        }
    }
    Ok(())
}

/// The first column of `sql`'s rows, NULLs left out.
pub(crate) fn names(db: &mut dyn Sql, sql: &str) -> Result<Vec<String>, IvmError> {
    Ok(db
        .query(sql)?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect())
}

/// Every view, upstream before downstream (a view is created after the views it reads).
pub(crate) fn views_in_id_order(db: &mut dyn Sql) -> Result<Vec<ViewRow>, IvmError> {
    let mut out = Vec::new();
    for id in names(db, "SELECT id FROM _duckmv.views ORDER BY id")? {
        if let Some(view) = id
            .parse()
            .ok()
            .and_then(|id| catalog::find_view_by_id(db, id).transpose())
        {
            out.push(view?);
        }
    }
    Ok(out)
}

fn move_view(db: &mut dyn Sql, view: &mut ViewRow) -> Result<(), IvmError> {
    let triggers = db.query(&format!(
        "SELECT trigger_name, schema_name, table_name FROM duckdb_triggers() \
         WHERE database_name = current_database() AND starts_with(trigger_name, {})",
        lit(&format!("_duckmv_{}_", view.id))
    ))?;
    for t in triggers {
        let get = |i: usize| t[i].clone().unwrap_or_default();
        db.exec(&format!(
            "DROP TRIGGER {} ON {}",
            super::text::ident(&get(0)),
            super::text::qualified(&get(1), &get(2))
        ))?;
    }
    for s in &view.plan.sources {
        if let (Some(d), false) = (&s.delta, s.kind.kept()) {
            db.exec(&format!("DROP TABLE IF EXISTS {d}"))?;
        }
    }
    capture::install(db, &mut view.plan)?;
    catalog::save_plan(db, view.id, &view.plan)?;
    if view.populated {
        refresh::recompute_now(db, view)?;
    }
    Ok(())
}
