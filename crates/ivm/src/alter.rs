//! ALTER TABLE on a table that materialized views read.
//!
//! DuckDB 2.0 runs ADD COLUMN and SET/DROP DEFAULT on a table with triggers, and the capture
//! triggers keep working (they name their columns). Every other change — RENAME COLUMN, DROP
//! COLUMN, ALTER TYPE, SET/DROP NOT NULL, constraints, RENAME TO — it refuses while the table
//! has triggers. So:
//! - an in-place ALTER runs as it is; a view whose definition would now give other columns (a
//!   recomputed view over `SELECT *`) is created again reading the table's old columns;
//! - any other ALTER drops the views that read the table (and the views reading those), runs, and
//!   creates each again from its definition with the table seen through its old column names
//!   (see `pin`): a renamed column keeps its name in the view, `*` keeps its columns, as in
//!   PostgreSQL. Each is recomputed from the altered table. A view that cannot keep its columns
//!   — it reads a dropped column, or its columns would change type — stops the ALTER (2BP01),
//!   or with CASCADE is dropped, with the views reading it;
//! - RENAME TO is refused while views read the table (they name it).

use super::catalog::{self, ViewRow};
use super::ir;
use super::pin::{self, TableRef};
use super::plan::{Body, Source, SourceKind};
use super::policy::{self, RefreshPolicy};
use super::text::{qualified, split_qualified};
use super::{
    compile, create_view, drop_views, refresh, set_refresh_policy, CreateView, IvmError, Outcome,
    Sql,
};

/// What an ALTER TABLE does to the table's columns.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnChange {
    /// ADD COLUMN, SET/DROP DEFAULT: DuckDB runs it on a table with triggers, and no column is
    /// renamed or removed.
    InPlace,
    /// RENAME TO.
    RenameTable,
    /// Anything else: the columns it renames (old, new) and drops; the others keep their names.
    Rebuild {
        renamed: Vec<(String, String)>,
        dropped: Vec<String>,
    },
}

/// The altered table, spelled as the catalog spells it.
struct Target {
    catalog: Option<String>,
    schema: String,
    name: String,
    here: String,
}

impl Target {
    fn table_ref(&self) -> TableRef<'_> {
        TableRef {
            catalog: self.catalog.as_deref(),
            schema: &self.schema,
            name: &self.name,
            here: &self.here,
        }
    }

    /// The view's source entry for this table, if it reads it directly.
    fn source_in<'a>(&self, v: &'a ViewRow) -> Option<&'a Source> {
        v.plan.sources.iter().find(|s| {
            s.kind == SourceKind::Table
                && s.catalog.as_deref().map(str::to_lowercase)
                    == self.catalog.as_deref().map(str::to_lowercase)
                && s.schema.eq_ignore_ascii_case(&self.schema)
                && s.name.eq_ignore_ascii_case(&self.name)
        })
    }
}

/// Runs `alter_sql`, an ALTER TABLE of `table`, keeping the views that read it correct.
pub fn alter_table(
    db: &mut dyn Sql,
    table: &str,
    alter_sql: &str,
    change: &ColumnChange,
    cascade: bool,
) -> Result<Outcome, IvmError> {
    let (cat, schema, name) = split_qualified(table);
    let here = compile::current_database(db)?;
    let cat = cat.filter(|c| !c.eq_ignore_ascii_case(&here));
    let readers = catalog::readers(db, cat.as_deref(), &schema, &name)?;
    if readers.is_empty() {
        db.exec(alter_sql)?;
        return Ok(Outcome::default());
    }
    if *change == ColumnChange::RenameTable {
        let names: Vec<String> = readers.iter().map(|(_, _, n)| n.clone()).collect();
        return Err(IvmError::Unsupported(format!(
            "cannot rename table {name} because materialized view {} reads it; drop the view, \
             rename the table and create the view again",
            names.join(", ")
        )));
    }
    let mut saved = affected(db, &readers)?;
    let mut target = Target {
        catalog: cat,
        schema,
        name,
        here,
    };
    // The catalog's spelling, for the derived tables.
    if let Some(s) = saved.iter().find_map(|v| target.source_in(v)) {
        (target.schema, target.name) = (s.schema.clone(), s.name.clone());
    }
    if let Some(d) = target.catalog.clone() {
        return alter_elsewhere(db, &target, &d, saved, alter_sql, change);
    }
    let (renamed, dropped) = match change {
        ColumnChange::Rebuild { renamed, dropped } => (renamed.as_slice(), dropped.as_slice()),
        _ => (&[][..], &[][..]),
    };
    // A rebuilt view keeps its refresh policy.
    let mut policies = std::collections::HashMap::new();
    for v in &saved {
        policies.insert(v.id, policy::stored(db, v.id)?);
    }
    if *change == ColumnChange::InPlace {
        db.exec(alter_sql)?;
        saved = broken(db, &target, saved)?;
        drop_all(db, &saved)?;
    } else {
        drop_all(db, &saved)?;
        db.exec(alter_sql)?;
    }
    let rebuilt = Rebuilt {
        renamed,
        dropped,
        policies: &policies,
        cascade,
    };
    recreate_all(db, &target, &saved, &rebuilt)
}

/// What an ALTER that rebuilds the views changed, and how they are put back.
struct Rebuilt<'a> {
    renamed: &'a [(String, String)],
    dropped: &'a [String],
    /// Each view's refresh policy before the ALTER.
    policies: &'a std::collections::HashMap<i64, RefreshPolicy>,
    cascade: bool,
}

/// Creates the views again, upstream first; one that cannot be fails the ALTER, or with
/// CASCADE is dropped with the views reading it.
fn recreate_all(
    db: &mut dyn Sql,
    target: &Target,
    saved: &[ViewRow],
    r: &Rebuilt,
) -> Result<Outcome, IvmError> {
    let mut outcome = Outcome::default();
    let mut gone: Vec<i64> = Vec::new();
    let types = column_types(db, target)?;
    for v in saved {
        let reads_gone = v
            .plan
            .sources
            .iter()
            .any(|src| src.view_id.is_some_and(|id| gone.contains(&id)));
        let result = if reads_gone {
            Err("it reads a materialized view this ALTER drops".to_string())
        } else {
            recreate(db, target, v, r.renamed, r.dropped, &types)?
        };
        if let (Ok(()), Some(&p)) = (&result, r.policies.get(&v.id)) {
            if p != RefreshPolicy::OnDemand {
                set_refresh_policy(db, &qualified(&v.schema, &v.name), p)?;
            }
        }
        if let Err(reason) = result {
            if !r.cascade {
                return Err(IvmError::AlterBlocked {
                    table: target.name.clone(),
                    view: v.name.clone(),
                    reason,
                });
            }
            outcome
                .notices
                .push(format!("drop cascades to materialized view {}", v.name));
            gone.push(v.id);
        }
    }
    Ok(outcome)
}

/// A table in another attached database: its views are recomputed (nothing is captured), so an
/// in-place ALTER only has to leave their definitions' columns as they were. Rebuilding a view
/// would write the server's database in the transaction that writes the other one, which
/// DuckDB refuses.
fn alter_elsewhere(
    db: &mut dyn Sql,
    target: &Target,
    db_name: &str,
    views: Vec<ViewRow>,
    alter_sql: &str,
    change: &ColumnChange,
) -> Result<Outcome, IvmError> {
    let refuse = |v: &[ViewRow]| {
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        IvmError::Unsupported(format!(
            "cannot alter table {} of attached database \"{db_name}\" while materialized view {} \
             reads it: its columns would change, and one transaction cannot write both databases; \
             drop the view first",
            target.name,
            names.join(", ")
        ))
    };
    if *change != ColumnChange::InPlace {
        return Err(refuse(&views));
    }
    db.exec(alter_sql)?;
    let stale = broken(db, target, views)?;
    if !stale.is_empty() {
        return Err(refuse(&stale));
    }
    Ok(Outcome::default())
}

/// The views reading any of `readers`' views, transitively, with them; oldest first, so a view
/// comes after every view it reads.
fn affected(db: &mut dyn Sql, readers: &[(i64, String, String)]) -> Result<Vec<ViewRow>, IvmError> {
    let mut ids: Vec<i64> = readers.iter().map(|r| r.0).collect();
    let mut views = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let v = catalog::find_view_by_id(db, ids[i])?
            .ok_or_else(|| IvmError::Internal(format!("view {} vanished", ids[i])))?;
        for (id, _, _) in catalog::readers(db, None, &v.schema, &v.name)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        views.push(v);
        i += 1;
    }
    views.sort_by_key(|v| v.id);
    Ok(views)
}

/// The types of a query's columns. A view keeps its column names whatever the query calls
/// them; its columns change when their number or types do.
pub(crate) fn column_types_of(db: &mut dyn Sql, query: &str) -> Result<Vec<String>, IvmError> {
    Ok(db
        .query(&format!("DESCRIBE {query}"))?
        .into_iter()
        .map(|r| r.get(1).cloned().flatten().unwrap_or_default())
        .collect())
}

/// After an in-place ALTER: the views to create again — a recomputed view whose definition now
/// gives other columns, and the views reading one. An incremental view's plan names its
/// columns; it only has to still bind.
fn broken(
    db: &mut dyn Sql,
    target: &Target,
    saved: Vec<ViewRow>,
) -> Result<Vec<ViewRow>, IvmError> {
    let mut out: Vec<ViewRow> = Vec::new();
    for v in saved {
        let upstream = v
            .plan
            .sources
            .iter()
            .any(|src| src.view_id.is_some_and(|id| out.iter().any(|o| o.id == id)));
        let stale = upstream
            || target.source_in(&v).is_some()
                && match &v.plan.body {
                    Body::Full { query } => column_types_of(db, query)? != v.plan.types,
                    _ => {
                        column_types_of(db, &refresh::state_sql(&v.plan)).map_err(|e| {
                            IvmError::AlterBlocked {
                                table: target.name.clone(),
                                view: v.name.clone(),
                                reason: e.to_string(),
                            }
                        })?;
                        false
                    }
                };
        if stale {
            out.push(v);
        }
    }
    Ok(out)
}

fn drop_all(db: &mut dyn Sql, saved: &[ViewRow]) -> Result<(), IvmError> {
    if saved.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = saved
        .iter()
        .map(|v| qualified(&v.schema, &v.name))
        .collect();
    drop_views(db, &names, false, false)?;
    Ok(())
}

/// The altered table's columns and their types now.
fn column_types(db: &mut dyn Sql, t: &Target) -> Result<Vec<(String, String)>, IvmError> {
    let db_name = t
        .catalog
        .as_deref()
        .map(super::text::lit)
        .unwrap_or_else(|| "current_database()".into());
    Ok(db
        .query(&format!(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = {db_name} \
             AND schema_name = {} AND table_name = {} ORDER BY column_index",
            super::text::lit(&t.schema),
            super::text::lit(&t.name)
        ))?
        .into_iter()
        .map(|r| {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (get(0), get(1))
        })
        .collect())
}

/// Creates a dropped view again, reading the altered table through its old column names.
/// `Ok(Err(reason))` when it cannot keep its columns.
fn recreate(
    db: &mut dyn Sql,
    target: &Target,
    v: &ViewRow,
    renamed: &[(String, String)],
    dropped: &[String],
    types: &[(String, String)],
) -> Result<Result<(), String>, IvmError> {
    let query = match target.source_in(v) {
        // It reads the table only through views that were created again with their columns.
        None => v.definition.clone(),
        Some(src) => {
            let seen = |prior: Option<&pin::Selected>| {
                let pairs: Vec<(String, String)> = match prior {
                    Some(p) => p.to_vec(),
                    None => src.columns.iter().map(|c| (c.clone(), c.clone())).collect(),
                };
                seen_columns(&pairs, renamed, dropped, types)
            };
            let pinned = |prior: Option<&pin::Selected>| ir::Select {
                items: seen(prior)
                    .into_iter()
                    .map(|(name, now, _)| ir::Item::named(ir::bare(now), name))
                    .collect(),
                from: vec![pin::table()],
                ..Default::default()
            };
            let tref = target.table_ref();
            let Some(query) = pin::pin(&v.definition, &tref, &src.relation, &pinned) else {
                return Err(IvmError::AlterBlocked {
                    table: target.name.clone(),
                    view: v.name.clone(),
                    reason: "duckmv cannot read its definition to keep its columns".into(),
                });
            };
            // Bound on a connection of its own against typed NULLs: a binder error in this
            // transaction would abort it.
            let nulls = |prior: Option<&pin::Selected>| ir::Select {
                items: seen(prior)
                    .into_iter()
                    .map(|(name, _, ty)| ir::Item::named(ir::Expr::Null.cast(&ty), name))
                    .collect(),
                limit: Some(0),
                ..Default::default()
            };
            let probe = pin::pin(&v.definition, &tref, &src.relation, &nulls);
            if !probe.is_some_and(|p| db.binds_alone(&p)) {
                return Ok(Err("it reads a column this ALTER drops".into()));
            }
            query
        }
    };
    if column_types_of(db, &query)? != v.plan.visible_types() {
        return Ok(Err("its columns would change".into()));
    }
    create_view(
        db,
        &CreateView {
            name: qualified(&v.schema, &v.name),
            columns: Some(v.plan.visible_columns().to_vec()),
            query,
            with_data: v.populated,
            if_not_exists: false,
        },
    )?;
    Ok(Ok(()))
}

/// The table's columns as the view sees them, from (column then, name in the view): (name in the
/// view, column now, its type now), without the dropped ones (and any the table no longer has).
fn seen_columns(
    pairs: &[(String, String)],
    renamed: &[(String, String)],
    dropped: &[String],
    types: &[(String, String)],
) -> Vec<(String, String, String)> {
    pairs
        .iter()
        .filter(|(c, _)| !dropped.iter().any(|d| d.eq_ignore_ascii_case(c)))
        .filter_map(|(c, name)| {
            let now = renamed
                .iter()
                .find(|(old, _)| old.eq_ignore_ascii_case(c))
                .map(|(_, new)| new.as_str())
                .unwrap_or(c);
            let (col, ty) = types.iter().find(|(n, _)| n.eq_ignore_ascii_case(now))?;
            Some((name.clone(), col.clone(), ty.clone()))
        })
        .collect()
}
