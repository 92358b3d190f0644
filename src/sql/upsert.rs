//! `INSERT … ON CONFLICT DO UPDATE` and `MERGE` rewritten as plain
//! UPDATE/DELETE/INSERT statements.
//!
//! DuckDB refuses both on a table that has capture triggers with transition
//! tables; the plain statements fire those triggers, so a table that a
//! materialized view reads still has every change captured. The rewrite
//! runs inside the caller's transaction, so it is atomic.

use sqlparser::ast::{
    ConflictTarget, MergeAction, MergeClauseKind, MergeInsertKind, MergeUpdateKind,
    OnConflictAction, OnInsert, Statement, TableFactor, TableObject,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::classify::quote_ident;

/// The plain statements that replace one upsert or merge.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The table written (unquoted last name part).
    pub table: String,
    /// Statements to run in order; `counted[i]` tells whether statement i's
    /// changed-row count adds to the command tag.
    pub statements: Vec<String>,
    pub counted: Vec<bool>,
    /// `INSERT` or `MERGE` (with the row count), or a tag sent as is
    /// (`DROP TABLE`, `TRUNCATE TABLE`: see multi.rs).
    pub tag: &'static str,
}

/// Parses `sql`; Some when it is an ON CONFLICT DO UPDATE or a MERGE.
/// `columns` gives a table's column names in order.
pub fn rewrite(
    sql: &str,
    columns: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
) -> Option<Result<Rewrite, String>> {
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
            Some(rewrite_upsert(
                ins,
                oc.conflict_target.as_ref(),
                &du.assignments,
                du.selection.as_ref(),
                columns,
            ))
        }
        Statement::Merge(m) => Some(rewrite_merge(m)),
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
    if ins.returning.is_some() {
        return Err("RETURNING with ON CONFLICT DO UPDATE is not supported on a table that materialized views read".into());
    }
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
    Ok(Rewrite {
        table,
        statements: vec![
            format!("CREATE TEMP TABLE {tmp} AS SELECT * FROM ({source}) AS _s({col_list})"),
            // `excluded` is a struct column, so unqualified names in SET
            // resolve to the target table, as in PostgreSQL.
            format!(
                "UPDATE {update_target} SET {set} FROM (SELECT struct_pack({packed}) AS excluded FROM {tmp}) AS _x WHERE {on_excluded}{filter}"
            ),
            format!(
                "INSERT INTO {table_sql} ({col_list}) SELECT {col_list} FROM {tmp} AS _i WHERE NOT EXISTS (SELECT 1 FROM {table_sql} AS _t WHERE {on_new})"
            ),
            format!("DROP TABLE {tmp}"),
        ],
        counted: vec![false, true, true, false],
        tag: "INSERT",
    })
}

fn rewrite_merge(m: &sqlparser::ast::Merge) -> Result<Rewrite, String> {
    if m.output.is_some() {
        return Err(
            "MERGE with RETURNING/OUTPUT is not supported on a table that materialized views read"
                .into(),
        );
    }
    let (table_sql, tgt) = match &m.table {
        TableFactor::Table { name, alias, .. } => (
            name.to_string(),
            alias
                .as_ref()
                .map(|a| a.name.to_string())
                .unwrap_or_else(|| name.to_string()),
        ),
        _ => return Err("unsupported MERGE target".into()),
    };
    let (src_sql, src) = match &m.source {
        TableFactor::Table { name, alias, .. } => (
            name.to_string(),
            alias
                .as_ref()
                .map(|a| a.name.to_string())
                .unwrap_or_else(|| last_part(&name.to_string())),
        ),
        TableFactor::Derived {
            subquery,
            alias: Some(alias),
            ..
        } => (format!("({subquery})"), alias.name.to_string()),
        _ => return Err("unsupported MERGE source".into()),
    };
    let on = &m.on;
    let mut matched = Vec::new();
    let mut not_matched = Vec::new();
    for c in &m.clauses {
        match c.clause_kind {
            MergeClauseKind::Matched => matched.push(c),
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => not_matched.push(c),
            MergeClauseKind::NotMatchedBySource => return Err("WHEN NOT MATCHED BY SOURCE is not supported on a table that materialized views read".into()),
        }
    }
    let case = |clauses: &[&sqlparser::ast::MergeClause]| {
        let arms: String = clauses
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    " WHEN {} THEN {}",
                    c.predicate
                        .as_ref()
                        .map(|p| format!("({p})"))
                        .unwrap_or_else(|| "true".into()),
                    i + 1
                )
            })
            .collect();
        format!("CASE{arms} ELSE 0 END")
    };
    let mut statements = vec![
        format!("CREATE TEMP TABLE _duckmv_src AS SELECT * FROM {src_sql} AS {src}"),
        format!(
            "CREATE TEMP TABLE _duckmv_m AS SELECT {tgt}.rowid AS _rid, {} AS _c FROM {table_sql} AS {tgt} JOIN _duckmv_src AS {src} ON ({on})",
            case(&matched)
        ),
        format!(
            "CREATE TEMP TABLE _duckmv_nm AS SELECT {src}.*, {} AS _duckmv_c FROM _duckmv_src AS {src} WHERE NOT EXISTS (SELECT 1 FROM {table_sql} AS {tgt} WHERE {on})",
            case(&not_matched)
        ),
    ];
    let mut counted = vec![false, false, false];
    for (i, c) in matched.iter().enumerate() {
        let rows = format!(
            "{tgt}.rowid IN (SELECT _rid FROM _duckmv_m WHERE _c = {})",
            i + 1
        );
        let s = match &c.action {
            MergeAction::Update(u) => match &u.kind {
                MergeUpdateKind::Set(a) => {
                    let set = a
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!("UPDATE {table_sql} AS {tgt} SET {set} FROM _duckmv_src AS {src} WHERE ({on}) AND {rows}")
                }
                #[allow(unreachable_patterns)]
                _ => return Err("unsupported MERGE UPDATE form".into()),
            },
            MergeAction::Delete { .. } => format!("DELETE FROM {table_sql} AS {tgt} WHERE {rows}"),
            _ => return Err("unsupported WHEN MATCHED action".into()),
        };
        statements.push(s);
        counted.push(true);
    }
    for (i, c) in not_matched.iter().enumerate() {
        let MergeAction::Insert(ins) = &c.action else {
            return Err("unsupported WHEN NOT MATCHED action".into());
        };
        let cols = if ins.columns.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                ins.columns
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let exprs = match &ins.kind {
            MergeInsertKind::Values(v) if v.rows.len() == 1 => v.rows[0]
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            MergeInsertKind::Values(_) => return Err("MERGE INSERT takes one row".into()),
            _ => format!("{src}.*"),
        };
        statements.push(format!(
            "INSERT INTO {table_sql}{cols} SELECT {exprs} FROM _duckmv_nm AS {src} WHERE _duckmv_c = {}",
            i + 1
        ));
        counted.push(true);
    }
    for t in ["_duckmv_src", "_duckmv_m", "_duckmv_nm"] {
        statements.push(format!("DROP TABLE {t}"));
        counted.push(false);
    }
    Ok(Rewrite {
        table: last_part(&table_sql),
        statements,
        counted,
        tag: "MERGE",
    })
}

fn last_part(name: &str) -> String {
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
        assert_eq!(r.statements.len(), 4);
        assert!(
            r.statements[1].starts_with("UPDATE t SET v = excluded.v FROM"),
            "{}",
            r.statements[1]
        );
        assert!(r.statements[2].contains("NOT EXISTS"));
        assert_eq!(r.counted, vec![false, true, true, false]);
    }

    #[test]
    fn plain_statements_are_left_alone() {
        let mut cols = |_: &str| Ok(vec![]);
        assert!(rewrite("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", &mut cols).is_none());
        assert!(rewrite("SELECT 1", &mut cols).is_none());
    }

    #[test]
    fn merge_clauses_in_order() {
        let mut cols = |_: &str| Ok(vec![]);
        let r = rewrite(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
            &mut cols,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.tag, "MERGE");
        assert!(
            r.statements[1].contains("CASE WHEN (s.v < 0) THEN 1 WHEN true THEN 2 ELSE 0 END"),
            "{}",
            r.statements[1]
        );
        assert!(r
            .statements
            .iter()
            .any(|s| s.starts_with("DELETE FROM t AS t WHERE t.rowid IN")));
    }
}
