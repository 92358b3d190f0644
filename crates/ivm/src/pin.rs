//! A definition with one table replaced by a derived table under the same name.
//!
//! PostgreSQL fixes a view's columns when it is created: `*` is expanded then, and a renamed
//! column keeps its old name inside the view. duckmv keeps definitions as text, so when a table a
//! view reads changes its columns, the view is created again from a definition in which every
//! reference to the table reads `(SELECT "new" AS "old", …) AS t` — the table as the view saw it.
//! A derived table of that shape from an earlier change is replaced as a whole, so each change
//! composes with the ones before (and a column the view never used can still be dropped).

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr, Statement,
    TableAlias, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::ir::{self, Name};

/// The table whose references are replaced, spelled as the catalog spells it.
pub struct TableRef<'a> {
    /// Its attached database when it is not the server's.
    pub catalog: Option<&'a str>,
    pub schema: &'a str,
    pub name: &'a str,
    /// The server's database (a three-part name may spell it).
    pub here: &'a str,
}

impl TableRef<'_> {
    /// Whether a name as written in a FROM clause names this table (as DuckDB binds names:
    /// case-insensitively, `t` in `main`, `a.t` in schema `a` or database `a`).
    fn named_by(&self, parts: &[String]) -> bool {
        let eq = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        let db = self.catalog.unwrap_or(self.here);
        let main = eq(self.schema, "main");
        match parts {
            [n] => self.catalog.is_none() && main && eq(n, self.name),
            [a, n] => {
                eq(n, self.name)
                    && (self.catalog.is_none() && eq(a, self.schema) || main && eq(a, db))
            }
            [c, s, n] => eq(n, self.name) && eq(s, self.schema) && eq(c, db),
            _ => false,
        }
    }
}

/// Stands for the table in the FROM clauses of the bodies [`pin`] is given (renamed to the table
/// at the end, so the new derived tables are not taken for references to it).
pub const TABLE: &str = "_duckmv_pinned_table";

/// The columns an earlier pin's derived table selects: (column of the table, name in the view).
pub type Selected = [(String, String)];

/// A body's FROM item for the table itself (see [`TABLE`]).
pub fn table() -> ir::From {
    ir::From::Table {
        name: Name(vec![TABLE.to_string()]),
        alias: None,
    }
}

/// `query` with every FROM reference to `table` replaced by `(body) AS <its alias or name>`,
/// where `body(None)` replaces a plain reference and `body(Some(columns))` a derived table an
/// earlier pin left; [`table()`] in a body becomes `relation` (a stored relation name). None
/// when the query cannot be read, or never names the table.
pub fn pin(
    query: &str,
    table: &TableRef,
    relation: &str,
    body: &dyn Fn(Option<&Selected>) -> ir::Select,
) -> Option<String> {
    let mut stmts = Parser::parse_sql(&GenericDialect {}, query).ok()?;
    let [Statement::Query(q)] = stmts.as_mut_slice() else {
        return None;
    };
    let mut ctes = Ctes(HashSet::new());
    let _ = Visit::visit(&**q, &mut ctes);
    let mut swap = Swap {
        table,
        body,
        ctes: ctes.0,
        replaced: 0,
    };
    let _ = q.visit(&mut swap);
    if swap.replaced == 0 {
        return None;
    }
    let mut rename = Rename {
        to: Name::of(relation).to_ast(),
    };
    let _ = q.visit(&mut rename);
    Some(q.to_string())
}

/// Names the table where a body said [`TABLE`].
struct Rename {
    to: ObjectName,
}

impl VisitorMut for Rename {
    type Break = ();
    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, .. } = tf {
            if matches!(parts(name).as_slice(), [n] if n == TABLE) {
                *name = self.to.clone();
            }
        }
        ControlFlow::Continue(())
    }
}

fn parts(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            ObjectNamePart::Function(f) => f.name.value.clone(),
        })
        .collect()
}

/// Lower-cased names of the query's CTEs: a one-part name that is one of them is not the table.
struct Ctes(HashSet<String>);

impl Visitor for Ctes {
    type Break = ();
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(w) = &q.with {
            for c in &w.cte_tables {
                self.0.insert(c.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}

struct Swap<'a> {
    table: &'a TableRef<'a>,
    body: &'a dyn Fn(Option<&Selected>) -> ir::Select,
    ctes: HashSet<String>,
    replaced: usize,
}

impl Swap<'_> {
    /// Whether `tf` names the table (and not a CTE of the same name).
    fn names_table(&self, tf: &TableFactor) -> bool {
        let TableFactor::Table {
            name, args: None, ..
        } = tf
        else {
            return false;
        };
        let p = parts(name);
        self.table.named_by(&p) && !(p.len() == 1 && self.ctes.contains(&p[0].to_lowercase()))
    }

    /// The columns of a derived table an earlier pin left: `(SELECT "c" AS "x", … FROM t)`.
    fn pinned_columns(&self, q: &Query) -> Option<Vec<(String, String)>> {
        if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() {
            return None;
        }
        let SetExpr::Select(s) = q.body.as_ref() else {
            return None;
        };
        let plain = s.selection.is_none()
            && s.having.is_none()
            && s.distinct.is_none()
            && matches!(&s.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        let [from] = s.from.as_slice() else {
            return None;
        };
        if !plain || !from.joins.is_empty() || !self.names_table(&from.relation) {
            return None;
        }
        s.projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias {
                    expr: Expr::Identifier(c),
                    alias,
                } => Some((c.value.clone(), alias.value.clone())),
                _ => None,
            })
            .collect()
    }
}

impl VisitorMut for Swap<'_> {
    type Break = ();
    // Before the children: the table inside a derived table an earlier pin left is part of it.
    // The new derived tables name the table as TABLE, which is no reference to it.
    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let found = match &*tf {
            TableFactor::Table { name, alias, .. } if self.names_table(tf) => {
                let alias = alias.clone().unwrap_or_else(|| TableAlias {
                    explicit: true,
                    name: last_ident(name),
                    columns: Vec::new(),
                    at: None,
                });
                Some((None, alias))
            }
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias: Some(alias),
                ..
            } => self
                .pinned_columns(subquery)
                .map(|cols| (Some(cols), alias.clone())),
            _ => None,
        };
        let Some((selected, alias)) = found else {
            return ControlFlow::Continue(());
        };
        let derived = ir::Query::select((self.body)(selected.as_deref())).to_ast();
        *tf = TableFactor::Derived {
            lateral: false,
            subquery: Box::new(derived),
            alias: Some(alias),
            sample: None,
        };
        self.replaced += 1;
        ControlFlow::Continue(())
    }
}

fn last_ident(n: &ObjectName) -> Ident {
    match n.0.last() {
        Some(ObjectNamePart::Identifier(i)) => i.clone(),
        _ => Ident::new(n.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TableRef = TableRef {
        catalog: None,
        schema: "main",
        name: "t",
        here: "memory",
    };
    const REL: &str = "\"main\".\"t\"";

    /// `SELECT "column" AS "name", … FROM` the table.
    fn select(cols: &[(&str, &str)]) -> ir::Select {
        ir::Select {
            items: cols
                .iter()
                .map(|(c, x)| ir::Item::named(ir::bare(*c), *x))
                .collect(),
            from: vec![table()],
            ..Default::default()
        }
    }

    /// Renames k to k2, keeping the view's name k.
    fn body(prior: Option<&Selected>) -> ir::Select {
        match prior {
            None => select(&[("k2", "k")]),
            Some(p) => {
                let renamed = |c: &str| if c == "k" { "k2" } else { c }.to_string();
                let cols: Vec<(String, String)> =
                    p.iter().map(|(c, x)| (renamed(c), x.clone())).collect();
                let cols: Vec<(&str, &str)> =
                    cols.iter().map(|(c, x)| (c.as_str(), x.as_str())).collect();
                select(&cols)
            }
        }
    }

    #[test]
    fn every_reference_reads_the_pinned_columns() {
        let q = pin(
            "SELECT * FROM t JOIN main.t AS y ON t.k = y.k WHERE EXISTS (SELECT 1 FROM memory.main.T)",
            &T,
            REL,
            &body,
        )
        .unwrap();
        assert_eq!(
            q.matches("\"k2\" AS \"k\" FROM \"main\".\"t\"").count(),
            3,
            "{q}"
        );
        assert!(q.contains(") AS t JOIN"), "{q}");
        assert!(q.contains(") AS y ON"), "{q}");
    }

    #[test]
    fn an_earlier_pin_is_composed_with() {
        let once = pin("SELECT k FROM t", &T, REL, &body).unwrap();
        let twice = pin(&once, &T, REL, &|p: Option<&Selected>| {
            let p = p.expect("the earlier derived table");
            assert_eq!(p, [("k2".to_string(), "k".to_string())]);
            select(&[("k3", "k")])
        })
        .unwrap();
        assert_eq!(
            twice,
            "SELECT k FROM (SELECT \"k3\" AS \"k\" FROM \"main\".\"t\") AS t"
        );
    }

    #[test]
    fn other_tables_and_ctes_of_that_name_stay() {
        assert_eq!(
            pin("SELECT * FROM u JOIN s.t ON true", &T, REL, &body),
            None
        );
        assert_eq!(
            pin("WITH t AS (SELECT 1 AS k) SELECT * FROM t", &T, REL, &body),
            None
        );
        let other = TableRef {
            catalog: Some("Other-Db"),
            ..T
        };
        assert!(pin("SELECT * FROM \"other-db\".main.t", &other, REL, &body).is_some());
        assert_eq!(pin("SELECT * FROM t", &other, REL, &body), None);
    }
}
