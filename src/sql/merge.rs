//! `MERGE` into a table that materialized views read, run as plain statements.
//!
//! DuckDB refuses MERGE on a table with triggers, and the capture triggers must see every change,
//! so the server decides every row's fate first and then applies it with plain statements:
//! 1. the source is read once into a temporary table;
//! 2. every (target row, source row) pair the ON condition joins gets the number of the first
//!    `WHEN MATCHED` clause whose condition holds (0: none) — a target row that two source rows
//!    would change is an error (21000), as in PostgreSQL;
//! 3. every source row without a target row gets its `WHEN NOT MATCHED [BY TARGET]` clause, every
//!    target row without a source row its `WHEN NOT MATCHED BY SOURCE` clause;
//! 4. one UPDATE, DELETE or INSERT per clause applies it (`DO NOTHING` applies nothing).
//!
//! All decisions are made before the first change, so one clause's changes cannot move rows into
//! another's; each target row is touched by at most one clause, found again by its rowid.
//! `RETURNING` lists (over the target's columns and `merge_action()`, or DuckDB's bare
//! `merge_action`) are attached to each applying statement, and their rows are the MERGE's rows.

use crate::sqlstate::SqlState;
use sqlparser::ast::{
    Expr, Function, Ident, MergeAction, MergeClause, MergeClauseKind, MergeInsertKind,
    MergeUpdateKind, ObjectName, ObjectNamePart, OutputClause, SelectItem,
    SelectItemQualifiedWildcardKind, TableFactor, Value, VisitMut, VisitorMut,
};

use super::upsert::{last_part, Refusal, Rewrite, Step};

const SRC: &str = "_duckmv_merge_src";
const MATCHED: &str = "_duckmv_merge_m";
const NOT_MATCHED: &str = "_duckmv_merge_nm";
const BY_SOURCE: &str = "_duckmv_merge_nbs";
const RID: &str = "_duckmv_rid";
const CLAUSE: &str = "_duckmv_clause";

/// The parts of the MERGE every statement names.
struct Parts {
    /// The target as written, and the name its columns are qualified by.
    table: String,
    tgt: String,
    /// The source's alias (its own name for a table).
    src: String,
    on: String,
    returning: Option<Returning>,
}

/// A MERGE's RETURNING list, with `'{action}'` where `merge_action()` was.
struct Returning {
    /// For the UPDATE and DELETE statements, which name the target by its alias.
    list: String,
    /// For the INSERTs: DuckDB's INSERT … RETURNING does not see the target's alias, so the
    /// columns it qualifies are qualified by the table's name instead.
    for_insert: String,
}

pub fn rewrite(m: &sqlparser::ast::Merge) -> Result<Rewrite, Refusal> {
    let (table, table_ident, tgt) = match &m.table {
        TableFactor::Table { name, alias, .. } => {
            let Some(ObjectNamePart::Identifier(last)) = name.0.last() else {
                return Err("unsupported MERGE target".into());
            };
            // Unaliased, the target's columns are qualified by its last name part.
            let tgt = alias
                .as_ref()
                .map(|a| a.name.to_string())
                .unwrap_or_else(|| last.to_string());
            (name.to_string(), last.clone(), tgt)
        }
        _ => return Err("unsupported MERGE target".into()),
    };
    reachable(&m.clauses)?;
    let (source, src) = match &m.source {
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
    let parts = Parts {
        returning: returning(m.output.as_ref(), &src, &tgt, &table_ident)?,
        table,
        tgt,
        src,
        on: m.on.to_string(),
    };
    let by_kind = |kinds: &[MergeClauseKind]| -> Vec<&MergeClause> {
        m.clauses
            .iter()
            .filter(|c| kinds.contains(&c.clause_kind))
            .collect()
    };
    let matched = by_kind(&[MergeClauseKind::Matched]);
    let not_matched = by_kind(&[
        MergeClauseKind::NotMatched,
        MergeClauseKind::NotMatchedByTarget,
    ]);
    let by_source = by_kind(&[MergeClauseKind::NotMatchedBySource]);

    let p = &parts;
    let mut steps = vec![Step::run(format!(
        "CREATE TEMP TABLE {SRC} AS SELECT * FROM {source} AS {src}",
        src = p.src
    ))];
    steps.push(Step::run(format!(
        "CREATE TEMP TABLE {MATCHED} AS SELECT {tgt}.rowid AS {RID}, {src}.*, {case} AS {CLAUSE} \
         FROM {table} AS {tgt} JOIN {SRC} AS {src} ON ({on})",
        tgt = p.tgt,
        src = p.src,
        table = p.table,
        on = p.on,
        case = case(&matched)
    )));
    let changing: Vec<String> = changing_clauses(&matched);
    if !changing.is_empty() {
        steps.push(Step::MustBeEmpty {
            sql: format!(
                "SELECT {RID} FROM {MATCHED} WHERE {CLAUSE} IN ({}) GROUP BY {RID} HAVING count(*) > 1",
                changing.join(", ")
            ),
            code: SqlState::CARDINALITY_VIOLATION,
            message: "MERGE command cannot affect row a second time",
        });
    }
    steps.push(Step::run(format!(
        "CREATE TEMP TABLE {NOT_MATCHED} AS SELECT {src}.*, {case} AS {CLAUSE} FROM {SRC} AS {src} \
         WHERE NOT EXISTS (SELECT 1 FROM {table} AS {tgt} WHERE {on})",
        tgt = p.tgt,
        src = p.src,
        table = p.table,
        on = p.on,
        case = case(&not_matched)
    )));
    if !by_source.is_empty() {
        steps.push(Step::run(format!(
            "CREATE TEMP TABLE {BY_SOURCE} AS SELECT {tgt}.rowid AS {RID}, {case} AS {CLAUSE} \
             FROM {table} AS {tgt} WHERE NOT EXISTS (SELECT 1 FROM {SRC} AS {src} WHERE {on})",
            tgt = p.tgt,
            src = p.src,
            table = p.table,
            on = p.on,
            case = case(&by_source)
        )));
    }
    for (i, c) in matched.iter().enumerate() {
        steps.extend(change_target(p, &c.action, MATCHED, i + 1, true)?);
    }
    for (i, c) in by_source.iter().enumerate() {
        steps.extend(change_target(p, &c.action, BY_SOURCE, i + 1, false)?);
    }
    for (i, c) in not_matched.iter().enumerate() {
        steps.extend(insert(p, &c.action, i + 1)?);
    }
    for t in [SRC, MATCHED, NOT_MATCHED] {
        steps.push(Step::run(format!("DROP TABLE {t}")));
    }
    if !by_source.is_empty() {
        steps.push(Step::run(format!("DROP TABLE {BY_SOURCE}")));
    }
    Ok(Rewrite {
        table: last_part(&p.table),
        describe: p.returning.as_ref().map(|r| {
            format!(
                "SELECT {} FROM {} AS {} LIMIT 0",
                r.list.replace("'{action}'", "'INSERT'"),
                p.table,
                p.tgt
            )
        }),
        steps,
        tag: "MERGE",
    })
}

/// Refuses a clause that follows an unconditional clause of its kind, as DuckDB and PostgreSQL
/// do: it could never apply.
fn reachable(clauses: &[MergeClause]) -> Result<(), Refusal> {
    let group = |k: &MergeClauseKind| match k {
        MergeClauseKind::Matched => "MATCHED",
        MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => "NOT MATCHED",
        MergeClauseKind::NotMatchedBySource => "NOT MATCHED BY SOURCE",
    };
    let mut unconditional: Vec<&str> = Vec::new();
    for c in clauses {
        let g = group(&c.clause_kind);
        if unconditional.contains(&g) {
            return Err(Refusal {
                code: SqlState::SYNTAX_ERROR,
                message: format!(
                    "unreachable WHEN {g} clause: an unconditional WHEN {g} clause comes before it"
                ),
            });
        }
        if c.predicate.is_none() {
            unconditional.push(g);
        }
    }
    Ok(())
}

/// `CASE WHEN cond1 THEN 1 WHEN cond2 THEN 2 … ELSE 0 END`: the first clause whose condition
/// holds; `0` when there are no clauses.
fn case(clauses: &[&MergeClause]) -> String {
    if clauses.is_empty() {
        return "0".into();
    }
    let arms: String = clauses
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let cond = c
                .predicate
                .as_ref()
                .map(|p| format!("({p})"))
                .unwrap_or_else(|| "true".into());
            format!(" WHEN {cond} THEN {}", i + 1)
        })
        .collect();
    format!("CASE{arms} ELSE 0 END")
}

/// The numbers of the clauses that change their target row (not DO NOTHING).
fn changing_clauses(clauses: &[&MergeClause]) -> Vec<String> {
    clauses
        .iter()
        .enumerate()
        .filter(|(_, c)| !matches!(c.action, MergeAction::DoNothing { .. }))
        .map(|(i, _)| (i + 1).to_string())
        .collect()
}

/// The UPDATE or DELETE applying clause `n` to the target rows `decided` assigned to it.
/// `with_source`: the decided rows carry the source row (WHEN MATCHED), so SET may name it.
fn change_target(
    p: &Parts,
    action: &MergeAction,
    decided: &str,
    n: usize,
    with_source: bool,
) -> Result<Option<Step>, String> {
    let Parts {
        table, tgt, src, ..
    } = p;
    let rows = format!("(SELECT * FROM {decided} WHERE {CLAUSE} = {n})");
    // Rows of NOT MATCHED BY SOURCE have no source row: they are named by the target's alias.
    let alias = if with_source {
        src.as_str()
    } else {
        "_duckmv_d"
    };
    let sql = match action {
        MergeAction::Update(u) => {
            let MergeUpdateKind::Set(assignments) = &u.kind else {
                return Err(
                    "MERGE … UPDATE SET * is not supported on a table that materialized views read: name the columns (UPDATE SET col = …)"
                        .into(),
                );
            };
            let set: Vec<String> = assignments.iter().map(|a| a.to_string()).collect();
            format!(
                "UPDATE {table} AS {tgt} SET {} FROM {rows} AS {alias} WHERE {tgt}.rowid = {alias}.{RID}",
                set.join(", ")
            )
        }
        MergeAction::Delete { .. } => format!(
            "DELETE FROM {table} AS {tgt} USING {rows} AS {alias} WHERE {tgt}.rowid = {alias}.{RID}"
        ),
        MergeAction::DoNothing { .. } => return Ok(None),
        MergeAction::Insert(_) => return Err("INSERT is not allowed in WHEN MATCHED".into()),
    };
    let verb = if matches!(action, MergeAction::Delete { .. }) {
        "DELETE"
    } else {
        "UPDATE"
    };
    Ok(Some(applying(p, sql, verb)))
}

/// The INSERT applying WHEN NOT MATCHED clause `n`.
fn insert(p: &Parts, action: &MergeAction, n: usize) -> Result<Option<Step>, String> {
    let ins = match action {
        MergeAction::Insert(ins) => ins,
        MergeAction::DoNothing { .. } => return Ok(None),
        _ => return Err("only INSERT or DO NOTHING is allowed in WHEN NOT MATCHED".into()),
    };
    let cols = if ins.columns.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = ins.columns.iter().map(|c| c.to_string()).collect();
        format!(" ({})", names.join(", "))
    };
    let src = &p.src;
    let sql = match &ins.kind {
        MergeInsertKind::Values(v) if v.rows.len() == 1 => {
            let exprs: Vec<String> = v.rows[0].iter().map(|e| e.to_string()).collect();
            format!(
                "INSERT INTO {table}{cols} SELECT {} FROM {NOT_MATCHED} AS {src} WHERE {CLAUSE} = {n}",
                exprs.join(", "),
                table = p.table,
            )
        }
        MergeInsertKind::Values(_) => return Err("MERGE INSERT takes one row".into()),
        _ => format!(
            "INSERT INTO {table}{cols} SELECT {src}.* EXCLUDE ({CLAUSE}) FROM {NOT_MATCHED} AS {src} WHERE {CLAUSE} = {n}",
            table = p.table,
        ),
    };
    Ok(Some(applying(p, sql, "INSERT")))
}

/// A statement that changes rows: with RETURNING when the MERGE has it.
fn applying(p: &Parts, sql: String, verb: &str) -> Step {
    match &p.returning {
        Some(r) => {
            let list = if verb == "INSERT" {
                &r.for_insert
            } else {
                &r.list
            };
            Step::Returning {
                sql: format!(
                    "{sql} RETURNING {}",
                    list.replace("'{action}'", &format!("'{verb}'"))
                ),
            }
        }
        None => Step::Run { sql, counted: true },
    }
}

/// The RETURNING list, with `merge_action()` as a placeholder literal each statement fills with
/// its verb (the column keeps PostgreSQL's name, `merge_action`). Source columns cannot be
/// returned: the INSERT statements do not see the source row.
fn returning(
    output: Option<&OutputClause>,
    src: &str,
    tgt: &str,
    table: &Ident,
) -> Result<Option<Returning>, Refusal> {
    let items = match output {
        None => return Ok(None),
        Some(OutputClause::Returning { select_items, .. }) => select_items,
        Some(OutputClause::Output { .. }) => return Err("MERGE … OUTPUT is not supported".into()),
    };
    let mut items: Vec<SelectItem> = items
        .iter()
        .map(|i| match i {
            SelectItem::UnnamedExpr(e) if is_merge_action(e) => SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: Ident::new("merge_action"),
            },
            other => other.clone(),
        })
        .collect();
    let mut v = MergeAction_ {
        src: src.to_string(),
        names_source: false,
    };
    let _ = items.visit(&mut v);
    if v.names_source {
        return Err(format!(
            "RETURNING of the source's columns ({src}) in MERGE is not supported on a table that materialized views read"
        )
        .into());
    }
    let list = |items: &[SelectItem]| {
        items
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let plain = list(&items);
    let mut requalify = Requalify {
        from: tgt.to_string(),
        to: table.clone(),
    };
    let _ = items.visit(&mut requalify);
    for i in &mut items {
        if let SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) = i
        {
            if n.to_string().eq_ignore_ascii_case(tgt) {
                *n = ObjectName::from(vec![table.clone()]);
            }
        }
    }
    Ok(Some(Returning {
        list: plain,
        for_insert: list(&items),
    }))
}

/// `merge_action()` (PostgreSQL) or `merge_action` (DuckDB).
fn is_merge_action(e: &Expr) -> bool {
    match e {
        Expr::Function(Function { name, .. }) => {
            name.to_string().eq_ignore_ascii_case("merge_action")
        }
        Expr::Identifier(i) => i.value.eq_ignore_ascii_case("merge_action"),
        _ => false,
    }
}

/// Replaces `merge_action()` by the placeholder and notes references to the source alias.
#[allow(non_camel_case_types)]
struct MergeAction_ {
    src: String,
    names_source: bool,
}

impl VisitorMut for MergeAction_ {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
        match e {
            e if is_merge_action(e) => {
                *e = Expr::value(Value::SingleQuotedString("{action}".into()));
            }
            Expr::CompoundIdentifier(parts)
                if parts.len() >= 2 && parts[0].value.eq_ignore_ascii_case(&self.src) =>
            {
                self.names_source = true;
            }
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Qualifies by `to` the column references qualified by the alias `from`.
struct Requalify {
    from: String,
    to: Ident,
}

impl VisitorMut for Requalify {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 && parts[0].to_string().eq_ignore_ascii_case(&self.from) {
                parts[0] = self.to.clone();
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn plan(sql: &str) -> Result<Rewrite, Refusal> {
        let stmts = Parser::parse_sql(&GenericDialect {}, sql).unwrap();
        let sqlparser::ast::Statement::Merge(m) = &stmts[0] else {
            panic!("not a merge")
        };
        rewrite(m)
    }

    fn sqls(r: &Rewrite) -> Vec<String> {
        r.steps.iter().map(|s| s.sql().to_string()).collect()
    }

    #[test]
    fn a_single_clause_kind_needs_no_empty_case() {
        for sql in [
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
            "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
        ] {
            let r = plan(sql).unwrap();
            assert!(sqls(&r).iter().all(|s| !s.contains("CASE ELSE")), "{sql}");
        }
    }

    #[test]
    fn do_nothing_applies_nothing_and_is_no_second_change() {
        let r = plan(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v < 0 THEN DO NOTHING \
             WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN DO NOTHING",
        )
        .unwrap();
        let updates = sqls(&r).iter().filter(|s| s.starts_with("UPDATE")).count();
        assert_eq!(updates, 1);
        assert!(sqls(&r).iter().all(|s| !s.starts_with("INSERT")));
        let check = sqls(&r).into_iter().find(|s| s.contains("HAVING")).unwrap();
        assert!(check.contains("IN (2)"), "{check}");
    }

    #[test]
    fn returning_names_each_statements_action() {
        let r = plan(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v) RETURNING merge_action(), t.id",
        )
        .unwrap();
        let ret: Vec<&Step> = r
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Returning { .. }))
            .collect();
        assert_eq!(ret.len(), 2);
        assert!(ret[0]
            .sql()
            .contains("RETURNING 'DELETE' AS merge_action, t.id"));
        assert!(ret[1]
            .sql()
            .contains("RETURNING 'INSERT' AS merge_action, t.id"));
        assert!(r
            .describe
            .unwrap()
            .starts_with("SELECT 'INSERT' AS merge_action, t.id FROM t"));
        assert!(
            plan("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING s.v")
                .is_err()
        );
    }

    #[test]
    fn inserts_return_columns_qualified_by_the_table_not_the_alias() {
        let r = plan(
            "MERGE INTO sch.t AS x USING s ON x.id = s.id WHEN MATCHED THEN DELETE \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id) RETURNING merge_action, x.id, x.*",
        )
        .unwrap();
        let all = sqls(&r);
        let ins = all.iter().find(|s| s.starts_with("INSERT")).unwrap();
        assert!(ins.starts_with("INSERT INTO sch.t SELECT"), "{ins}");
        assert!(
            ins.ends_with("RETURNING 'INSERT' AS merge_action, t.id, t.*"),
            "{ins}"
        );
        let del = all.iter().find(|s| s.starts_with("DELETE")).unwrap();
        assert!(
            del.ends_with("RETURNING 'DELETE' AS merge_action, x.id, x.*"),
            "{del}"
        );
    }

    #[test]
    fn a_clause_after_an_unconditional_one_of_its_kind_is_refused() {
        let e = plan(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE \
             WHEN MATCHED AND s.v > 0 THEN UPDATE SET v = 1",
        )
        .err()
        .unwrap();
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        assert!(plan(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE \
             WHEN NOT MATCHED THEN DO NOTHING WHEN NOT MATCHED BY SOURCE THEN DELETE"
        )
        .is_ok());
    }
}
