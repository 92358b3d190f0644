//! Which columns of its tables a definition reads, so the change logs carry only those (an
//! UPDATE of a column no view reads then logs rows that cancel, and every logged row is
//! narrower).
//!
//! Found by name, not by binding: a column is read when the definition names it anywhere
//! (qualified or not, in any subquery), whichever table it belongs to. That can only keep a
//! column too many. Every table's every column is read when the definition has a `*` (outside
//! `count(*)`), `COLUMNS(…)`, or a name that is a table's or alias's (DuckDB reads `t` as the
//! row of `t`).

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SelectItem, SetExpr, TableFactor,
    Visit, Visitor,
};

/// What a definition names.
#[derive(Default, Debug)]
pub(super) struct Names {
    /// Every identifier of an expression, lowercased.
    idents: HashSet<String>,
    /// Table names and aliases, lowercased.
    relations: HashSet<String>,
    /// A `*`, `COLUMNS(…)` or the like: every column may be read.
    everything: bool,
}

impl Names {
    pub(super) fn of(q: &Query) -> Names {
        let mut names = Names::default();
        let _ = q.visit(&mut names);
        names
    }

    fn reads_all(&self) -> bool {
        self.everything || self.idents.iter().any(|i| self.relations.contains(i))
    }

    /// `columns` (a table's, in order) cut to those the definition may read; at least one, so
    /// a log row still stands for its table row.
    pub(super) fn read(&self, columns: &[String]) -> Vec<String> {
        if self.reads_all() {
            return columns.to_vec();
        }
        let read: Vec<String> = columns
            .iter()
            .filter(|c| self.idents.contains(&c.to_lowercase()))
            .cloned()
            .collect();
        if read.is_empty() {
            columns.iter().take(1).cloned().collect()
        } else {
            read
        }
    }
}

fn star_in(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => s.projection.iter().any(|p| {
            matches!(
                p,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        }),
        SetExpr::SetOperation { left, right, .. } => star_in(left) || star_in(right),
        // Nested queries are visited on their own.
        _ => false,
    }
}

fn star_arg(args: &FunctionArguments) -> bool {
    let FunctionArguments::List(list) = args else {
        return false;
    };
    list.args.iter().any(|a| {
        let e = match a {
            FunctionArg::Unnamed(e) => e,
            FunctionArg::Named { arg, .. } | FunctionArg::ExprNamed { arg, .. } => arg,
        };
        !matches!(e, FunctionArgExpr::Expr(_))
    })
}

impl Visitor for Names {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        self.everything |= star_in(&q.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        let alias = match t {
            TableFactor::Table { name, alias, .. } => {
                if let Some(last) = name.0.last().and_then(|p| p.as_ident()) {
                    self.relations.insert(last.value.to_lowercase());
                }
                alias
            }
            TableFactor::Derived { alias, .. } => alias,
            _ => &None,
        };
        if let Some(a) = alias {
            self.relations.insert(a.name.value.to_lowercase());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => {
                self.idents.insert(i.value.to_lowercase());
            }
            Expr::CompoundIdentifier(parts) => {
                // Only the column part: `t.k` names the alias `t` as a qualifier, not as a row.
                if let Some(last) = parts.last() {
                    self.idents.insert(last.value.to_lowercase());
                }
            }
            Expr::Function(f) => {
                let name = f.name.to_string().to_lowercase();
                self.everything |= name == "columns" || (name != "count" && star_arg(&f.args));
            }
            Expr::Wildcard(_) | Expr::QualifiedWildcard(..) => self.everything = true,
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_query;

    fn read(sql: &str, columns: &[&str]) -> Vec<String> {
        let q = parse_query(sql).unwrap();
        let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        Names::of(&q).read(&cols)
    }

    const T: [&str; 5] = ["k", "g", "v", "s", "note"];

    #[test]
    fn only_named_columns_are_read() {
        assert_eq!(
            read("SELECT g, sum(v) FROM t WHERE K > 1 GROUP BY g", &T),
            ["k", "g", "v"]
        );
        assert_eq!(
            read(
                "SELECT t.k FROM t JOIN d ON t.g = d.g WHERE EXISTS (SELECT 1 FROM e WHERE e.x = t.\"S\")",
                &T
            ),
            ["k", "g", "s"]
        );
        assert_eq!(
            read(
                "SELECT g, rank() OVER (PARTITION BY s ORDER BY v) FROM t",
                &T
            ),
            ["g", "v", "s"]
        );
    }

    #[test]
    fn count_star_reads_one_column() {
        assert_eq!(read("SELECT count(*) FROM t", &T), ["k"]);
    }

    #[test]
    fn stars_and_row_references_read_everything() {
        for sql in [
            "SELECT * FROM t",
            "SELECT t.* FROM t JOIN d ON t.g = d.g",
            "SELECT g FROM t WHERE EXISTS (SELECT * FROM d)",
            "SELECT g FROM t UNION ALL SELECT * FROM t",
            "SELECT COLUMNS('v|g') FROM t",
            "SELECT hash(*) FROM t",
            "SELECT x FROM t AS x",
            "SELECT t FROM t",
            "SELECT count(r) FROM (SELECT k FROM t) AS r",
        ] {
            assert_eq!(read(sql, &T), T, "{sql}");
        }
    }
}
