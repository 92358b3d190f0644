//! Typed statements: the INSERTs, DELETEs, UPDATEs and MERGEs a refresh runs. Each prints its
//! keywords around parts that print themselves through the `sqlparser` AST (names, FROM
//! items, expressions, queries), so quoting and parentheses are still decided in one place.

use std::fmt;

use super::{all, quoted, Expr, From, Name, Query};

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `INSERT INTO into [(columns)] query`.
    Insert {
        into: Name,
        columns: Vec<String>,
        query: Query,
    },
    /// `DELETE FROM from [AS alias] [WHERE filter…]`.
    Delete {
        from: Name,
        alias: Option<String>,
        filter: Vec<Expr>,
    },
    /// `UPDATE table AS alias SET column = value, … FROM from`.
    Update {
        table: Name,
        alias: String,
        set: Vec<(String, Expr)>,
        from: From,
    },
    /// `MERGE INTO into AS alias USING using ON on WHEN …`.
    Merge {
        into: Name,
        alias: String,
        using: From,
        on: Expr,
        whens: Vec<When>,
    },
    /// `CREATE TABLE name AS query`, the query as text (a full view's is the user's own).
    CreateAs { name: Name, query: String },
    /// `DROP TABLE name`.
    DropTable(Name),
    /// `ALTER TABLE from RENAME TO to`: `to` is a bare name, in `from`'s schema.
    Rename { from: Name, to: String },
}

/// One `WHEN [NOT] MATCHED [AND cond] THEN action` clause of a MERGE.
#[derive(Clone, Debug, PartialEq)]
pub struct When {
    pub matched: bool,
    pub cond: Option<Expr>,
    pub action: Action,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Delete,
    Update(Vec<(String, Expr)>),
    Insert(Vec<Expr>),
}

impl Stmt {
    /// `DELETE FROM from` every row.
    pub fn delete_all(from: Name) -> Stmt {
        Stmt::Delete {
            from,
            alias: None,
            filter: Vec::new(),
        }
    }

    /// `INSERT INTO into query`.
    pub fn insert(into: Name, query: Query) -> Stmt {
        Stmt::Insert {
            into,
            columns: Vec::new(),
            query,
        }
    }
}

/// `c1 = e1, c2 = e2`.
fn assignments(f: &mut fmt::Formatter<'_>, set: &[(String, Expr)]) -> fmt::Result {
    for (i, (c, e)) in set.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(f, "{sep}{} = {e}", quoted(c))?;
    }
    Ok(())
}

fn comma<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(f, "{sep}{x}")?;
    }
    Ok(())
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = if self.matched { "" } else { "NOT " };
        write!(f, "WHEN {not}MATCHED")?;
        if let Some(c) = &self.cond {
            write!(f, " AND {}", super::paren(c.to_ast()))?;
        }
        match &self.action {
            Action::Delete => write!(f, " THEN DELETE"),
            Action::Update(set) => {
                write!(f, " THEN UPDATE SET ")?;
                assignments(f, set)
            }
            Action::Insert(values) => {
                write!(f, " THEN INSERT VALUES (")?;
                comma(f, values)?;
                write!(f, ")")
            }
        }
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stmt::Insert {
                into,
                columns,
                query,
            } => {
                write!(f, "INSERT INTO {into} ")?;
                if !columns.is_empty() {
                    let cols: Vec<_> = columns.iter().map(|c| quoted(c)).collect();
                    write!(f, "(")?;
                    comma(f, &cols)?;
                    write!(f, ") ")?;
                }
                write!(f, "{query}")
            }
            Stmt::Delete {
                from,
                alias,
                filter,
            } => {
                write!(f, "DELETE FROM {from}")?;
                if let Some(a) = alias {
                    write!(f, " AS {}", quoted(a))?;
                }
                if !filter.is_empty() {
                    write!(f, " WHERE {}", all(filter.iter().cloned()))?;
                }
                Ok(())
            }
            Stmt::Update {
                table,
                alias,
                set,
                from,
            } => {
                write!(f, "UPDATE {table} AS {} SET ", quoted(alias))?;
                assignments(f, set)?;
                write!(f, " FROM {}", from.hoisted())
            }
            Stmt::Merge {
                into,
                alias,
                using,
                on,
                whens,
            } => {
                write!(
                    f,
                    "MERGE INTO {into} AS {} USING {} ON {on}",
                    quoted(alias),
                    using.hoisted()
                )?;
                for w in whens {
                    write!(f, " {w}")?;
                }
                Ok(())
            }
            Stmt::CreateAs { name, query } => write!(f, "CREATE TABLE {name} AS {query}"),
            Stmt::DropTable(name) => write!(f, "DROP TABLE {name}"),
            Stmt::Rename { from, to } => {
                write!(f, "ALTER TABLE {from} RENAME TO {}", quoted(to))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{col, Op};

    #[test]
    fn a_merge_prints_its_clauses_in_order() {
        let count = |r: &'static str| col(r, "_mv_count");
        let m = Stmt::Merge {
            into: Name::of("_duckmv.mv_1"),
            alias: "_mv_s".into(),
            using: From::table(Name::of("_duckmv.w_1"), "_mv_d"),
            on: col("_mv_s", "c1").bin(Op::Same, col("_mv_d", "c1")),
            whens: vec![
                When {
                    matched: true,
                    cond: Some((count("_mv_s") + count("_mv_d")).bin(Op::LtEq, Expr::Int(0))),
                    action: Action::Delete,
                },
                When {
                    matched: false,
                    cond: None,
                    action: Action::Insert(vec![col("_mv_d", "c1"), count("_mv_d")]),
                },
            ],
        };
        assert_eq!(
            m.to_string(),
            r#"MERGE INTO "_duckmv"."mv_1" AS "_mv_s" USING "_duckmv"."w_1" AS "_mv_d" ON "_mv_s"."c1" IS NOT DISTINCT FROM "_mv_d"."c1" WHEN MATCHED AND (("_mv_s"."_mv_count" + "_mv_d"."_mv_count") <= 0) THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES ("_mv_d"."c1", "_mv_d"."_mv_count")"#
        );
    }
}
