//! What an ALTER TABLE does to its table's columns, read before it runs: the server keeps the
//! materialized views that read the table correct across it (see `ivm::alter_table`).

use sqlparser::ast::{AlterColumnOperation, AlterTableOperation, Statement};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

/// The kinds of change that matter to views reading the table.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterOp {
    /// ADD COLUMN, SET DEFAULT, DROP DEFAULT: existing columns keep their names and values.
    InPlace,
    /// RENAME TO.
    RenameTable,
    /// Anything else (or a statement the parser cannot read): the columns renamed (old, new)
    /// and dropped, as far as it says.
    Other {
        renamed: Vec<(String, String)>,
        dropped: Vec<String>,
    },
}

pub fn alter_op(sql: &str) -> AlterOp {
    let other = || AlterOp::Other {
        renamed: Vec::new(),
        dropped: Vec::new(),
    };
    let Ok(stmts) = Parser::parse_sql(&GenericDialect {}, sql) else {
        return other();
    };
    let [Statement::AlterTable(a)] = stmts.as_slice() else {
        return other();
    };
    let in_place = a.operations.iter().all(|op| {
        matches!(
            op,
            AlterTableOperation::AddColumn { .. }
                | AlterTableOperation::AlterColumn {
                    op: AlterColumnOperation::SetDefault { .. } | AlterColumnOperation::DropDefault,
                    ..
                }
        )
    });
    if in_place && !a.operations.is_empty() {
        return AlterOp::InPlace;
    }
    let mut renamed = Vec::new();
    let mut dropped = Vec::new();
    for op in &a.operations {
        match op {
            AlterTableOperation::RenameTable { .. } => return AlterOp::RenameTable,
            AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => renamed.push((old_column_name.value.clone(), new_column_name.value.clone())),
            AlterTableOperation::DropColumn { column_names, .. } => {
                dropped.extend(column_names.iter().map(|c| c.value.clone()))
            }
            _ => {}
        }
    }
    AlterOp::Other { renamed, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_column_changes() {
        assert_eq!(alter_op("ALTER TABLE t ADD COLUMN w INT"), AlterOp::InPlace);
        assert_eq!(
            alter_op("alter table s.t alter column v set default 3"),
            AlterOp::InPlace
        );
        assert_eq!(alter_op("ALTER TABLE t RENAME TO u"), AlterOp::RenameTable);
        assert_eq!(
            alter_op("ALTER TABLE t RENAME COLUMN \"G\" TO gg"),
            AlterOp::Other {
                renamed: vec![("G".into(), "gg".into())],
                dropped: vec![]
            }
        );
        assert_eq!(
            alter_op("ALTER TABLE t DROP COLUMN IF EXISTS w CASCADE"),
            AlterOp::Other {
                renamed: vec![],
                dropped: vec!["w".into()]
            }
        );
        assert_eq!(
            alter_op("ALTER TABLE t ALTER COLUMN v TYPE BIGINT"),
            AlterOp::Other {
                renamed: vec![],
                dropped: vec![]
            }
        );
    }
}
