//! Delta capture: one delta table per (view, source) and, for base tables, statement-level
//! AFTER triggers with transition tables that copy every change into it as signed rows inside
//! the writing transaction (so a rollback leaves no delta). Deltas of an upstream materialized
//! view are written by that view's refresh instead: no triggers on internal tables (DuckDB
//! refuses MERGE on tables with triggers, and the refresh uses MERGE).

use super::plan::{Plan, SourceKind};
use super::text::{ident, lit};
use super::{IvmError, Sql};

const OPS: [&str; 3] = ["ins", "del", "upd"];

fn trigger_name(view_id: i64, source: usize, op: &str) -> String {
    format!("_duckmv_{view_id}_{source}_{op}")
}

/// Creates the delta tables and capture triggers of a view.
pub fn install(db: &mut dyn Sql, plan: &Plan) -> Result<(), IvmError> {
    for (k, s) in plan.sources.iter().enumerate() {
        let Some(delta) = &s.delta else { continue };
        let cols: Vec<String> = s.columns.iter().map(|c| ident(c)).collect();
        let cols = cols.join(", ");
        db.exec(&format!(
            "CREATE TABLE {delta} AS SELECT {cols}, CAST(0 AS BIGINT) AS _mv_mult FROM {} LIMIT 0",
            s.relation
        ))?;
        if s.kind != SourceKind::Table {
            continue;
        }
        let t = &s.relation;
        db.exec(&format!(
            "CREATE TRIGGER {} AFTER INSERT ON {t} REFERENCING NEW TABLE AS _mv_new FOR EACH STATEMENT \
             INSERT INTO {delta} SELECT {cols}, 1 FROM _mv_new",
            trigger_name(plan.id, k, "ins")
        ))?;
        db.exec(&format!(
            "CREATE TRIGGER {} AFTER DELETE ON {t} REFERENCING OLD TABLE AS _mv_old FOR EACH STATEMENT \
             INSERT INTO {delta} SELECT {cols}, -1 FROM _mv_old",
            trigger_name(plan.id, k, "del")
        ))?;
        db.exec(&format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {t} REFERENCING OLD TABLE AS _mv_old NEW TABLE AS _mv_new \
             FOR EACH STATEMENT INSERT INTO {delta} SELECT {cols}, -1 FROM _mv_old UNION ALL SELECT {cols}, 1 FROM _mv_new",
            trigger_name(plan.id, k, "upd")
        ))?;
    }
    Ok(())
}

/// Drops a view's triggers and delta tables. A source table that is already gone took its
/// triggers with it.
pub fn uninstall(db: &mut dyn Sql, plan: &Plan) -> Result<(), IvmError> {
    for (k, s) in plan.sources.iter().enumerate() {
        let Some(delta) = &s.delta else { continue };
        if s.kind == SourceKind::Table {
            let present = db.query(&format!(
                "SELECT trigger_name FROM duckdb_triggers() WHERE database_name = current_database() \
                 AND schema_name = {} AND table_name = {}",
                lit(&s.schema),
                lit(&s.name)
            ))?;
            for op in OPS {
                let name = trigger_name(plan.id, k, op);
                if present
                    .iter()
                    .any(|r| r[0].as_deref() == Some(name.as_str()))
                {
                    db.exec(&format!("DROP TRIGGER {name} ON {}", s.relation))?;
                }
            }
        }
        db.exec(&format!("DROP TABLE IF EXISTS {delta}"))?;
    }
    Ok(())
}

/// Empties a view's delta tables (after a full refresh has made them moot).
pub fn clear(db: &mut dyn Sql, plan: &Plan) -> Result<(), IvmError> {
    for s in &plan.sources {
        if let Some(delta) = &s.delta {
            db.exec(&format!("DELETE FROM {delta}"))?;
        }
    }
    Ok(())
}
