//! `INSERT … ON CONFLICT DO UPDATE` and `MERGE` rewritten as plain
//! UPDATE/DELETE/INSERT statements.
//!
//! DuckDB refuses both on a table that has capture triggers with transition
//! tables; the plain statements fire those triggers, so a table that a
//! materialized view reads still has every change captured. The rewrite
//! runs inside the caller's transaction, so it is atomic.

use crate::sqlstate::SqlState;
use sqlparser::ast::{ConflictTarget, OnConflictAction, OnInsert, Statement, TableObject};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::classify::quote_ident;

/// The plain statements that replace one upsert, merge or multi-object DROP, run in order in
/// one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The table written (unquoted last name part).
    pub table: String,
    pub steps: Vec<Step>,
    /// `INSERT` or `MERGE` (with the row count), or a tag sent as is
    /// (`DROP TABLE`, `TRUNCATE TABLE`: see multi.rs).
    pub tag: &'static str,
    /// With RETURNING: a query with the rows' columns (run with LIMIT 0 to describe them).
    pub describe: Option<String>,
}

/// Why a statement cannot run as plain statements: the SQLSTATE and message the client gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: SqlState,
    pub message: String,
}

/// What the rewrite does not support (0A000).
impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Refusal {
            code: SqlState::FEATURE_NOT_SUPPORTED,
            message,
        }
    }
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

/// One statement of a [`Rewrite`].
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run it; `counted`: its changed-row count adds to the command tag.
    Run { sql: String, counted: bool },
    /// A query that must return no rows; a row is the error `code: message`.
    MustBeEmpty {
        sql: String,
        code: SqlState,
        message: &'static str,
    },
    /// A changing statement with RETURNING: its rows are the statement's rows (and count).
    Returning { sql: String },
}

impl Step {
    /// A statement whose row count is not part of the tag.
    pub fn run(sql: String) -> Step {
        Step::Run {
            sql,
            counted: false,
        }
    }

    pub fn sql(&self) -> &str {
        match self {
            Step::Run { sql, .. } | Step::MustBeEmpty { sql, .. } | Step::Returning { sql } => sql,
        }
    }
}

/// Parses `sql`; Some when it is an ON CONFLICT DO UPDATE or a MERGE.
/// `columns` gives a table's column names in order.
pub fn rewrite(
    sql: &str,
    columns: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
) -> Option<Result<Rewrite, Refusal>> {
    let stmts = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    let [stmt] = stmts.as_slice() else {
        return None;
    };
    match stmt {
        Statement::Insert(ins) => {
            let Some(OnInsert::OnConflict(oc)) = &ins.on else {
                return None;
            };
            let OnConflictAction::DoUpdate(du) = &oc.action else {
                return None;
            };
            Some(
                rewrite_upsert(
                    ins,
                    oc.conflict_target.as_ref(),
                    &du.assignments,
                    du.selection.as_ref(),
                    columns,
                )
                .map_err(Refusal::from),
            )
        }
        Statement::Merge(m) => Some(super::merge::rewrite(m)),
        _ => None,
    }
}

fn rewrite_upsert(
    ins: &sqlparser::ast::Insert,
    target: Option<&ConflictTarget>,
    assignments: &[sqlparser::ast::Assignment],
    selection: Option<&sqlparser::ast::Expr>,
    columns: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
) -> Result<Rewrite, String> {
    let returning = ins.returning.as_ref().map(|items| {
        items
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    });
    let TableObject::TableName(name) = &ins.table else {
        return Err("unsupported INSERT target".into());
    };
    let table_sql = name.to_string();
    let table = last_part(&table_sql);
    let keys: Vec<String> = match target {
        Some(ConflictTarget::Columns { columns, .. }) if !columns.is_empty() => columns.iter().map(|c| c.value.clone()).collect(),
        _ => return Err("ON CONFLICT DO UPDATE needs a list of conflict columns here (ON CONSTRAINT is not supported)".into()),
    };
    let source = ins.source.as_ref().ok_or("INSERT without a source")?;
    let cols: Vec<String> = if ins.columns.is_empty() {
        columns(&table)?
    } else {
        ins.columns
            .iter()
            .map(|c| unquote(&c.to_string()))
            .collect()
    };
    let col_list = cols
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let alias = ins.table_alias.as_ref().map(|a| a.alias.to_string());
    let tgt = alias.clone().unwrap_or_else(|| table_sql.clone());
    let tmp = "_duckmv_excluded";
    let set = assignments
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let packed = cols
        .iter()
        .map(|c| format!("{} := {}", quote_ident(c), quote_ident(c)))
        .collect::<Vec<_>>()
        .join(", ");
    let on_excluded = keys
        .iter()
        .map(|k| format!("{tgt}.{q} = excluded.{q}", q = quote_ident(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let on_new = keys
        .iter()
        .map(|k| format!("_t.{q} = _i.{q}", q = quote_ident(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let filter = selection.map(|s| format!(" AND ({s})")).unwrap_or_default();
    let update_target = match &alias {
        Some(a) => format!("{table_sql} AS {a}"),
        None => table_sql.clone(),
    };
    // Both changing statements return the RETURNING rows, when there are any.
    let changing = |sql: String| match &returning {
        Some(r) => Step::Returning {
            sql: format!("{sql} RETURNING {r}"),
        },
        None => Step::Run { sql, counted: true },
    };
    Ok(Rewrite {
        describe: returning
            .as_ref()
            .map(|r| format!("SELECT {r} FROM {update_target} LIMIT 0")),
        table,
        steps: vec![
            Step::run(format!(
                "CREATE TEMP TABLE {tmp} AS SELECT * FROM ({source}) AS _s({col_list})"
            )),
            // `excluded` is a struct column, so unqualified names in SET
            // resolve to the target table, as in PostgreSQL.
            changing(format!(
                "UPDATE {update_target} SET {set} FROM (SELECT struct_pack({packed}) AS excluded FROM {tmp}) AS _x WHERE {on_excluded}{filter}"
            )),
            changing(format!(
                "INSERT INTO {table_sql} ({col_list}) SELECT {col_list} FROM {tmp} AS _i WHERE NOT EXISTS (SELECT 1 FROM {table_sql} AS _t WHERE {on_new})"
            )),
            Step::run(format!("DROP TABLE {tmp}")),
        ],
        tag: "INSERT",
    })
}

pub(super) fn last_part(name: &str) -> String {
    unquote(name.rsplit('.').next().unwrap_or(name))
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        s[1..s.len() - 1].replace("\"\"", "\"")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upsert_becomes_update_then_insert() {
        let mut cols = |_: &str| Ok(vec!["id".to_string(), "v".to_string()]);
        let r = rewrite(
            "INSERT INTO t VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
            &mut cols,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.table, "t");
        assert_eq!(r.steps.len(), 4);
        assert!(
            r.steps[1]
                .sql()
                .starts_with("UPDATE t SET v = excluded.v FROM"),
            "{}",
            r.steps[1].sql()
        );
        assert!(r.steps[2].sql().contains("NOT EXISTS"));
        let counted: Vec<bool> = r
            .steps
            .iter()
            .map(|s| matches!(s, Step::Run { counted: true, .. }))
            .collect();
        assert_eq!(counted, vec![false, true, true, false]);
    }

    #[test]
    fn plain_statements_are_left_alone() {
        let mut cols = |_: &str| Ok(vec![]);
        assert!(rewrite("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", &mut cols).is_none());
        assert!(rewrite("SELECT 1", &mut cols).is_none());
    }
}
