//! Whether a bag view's rows are all different, by the keys its tables declare.
//!
//! A bag view keeps each distinct row once with its count, so computing its rows from scratch
//! (its first fill, a full refresh) groups them by every column: over a 1.5M-row LEFT JOIN that
//! grouping costs about as much as the join itself. It is not needed when no row can occur
//! twice, and that follows from the catalog: a select-project-join block whose select list
//! shows, as plain columns, a declared key of every table it joins gives each combination of
//! table rows at most once, and tells the combinations apart. Inner joins pair rows; a LEFT or
//! FULL join adds at most one padded row per unmatched row, whose padded keys are NULL where a
//! real row's never are; WHERE and existence tests only drop rows. A declared key is a PRIMARY
//! KEY, or a UNIQUE constraint on NOT NULL columns (UNIQUE lets NULLs repeat). DuckDB cannot
//! drop either while the table exists, and any ALTER that could change them on a table a view
//! reads compiles the view again (`alter`), so what is read here holds for the view's life.

use super::resolve::current_database;
use crate::plan::{Block, Body, Item, ItemFrom, Rel, Source, SourceKind};
use crate::text::lit;
use crate::user_expr::UserExpr;
use crate::{IvmError, Sql};
use sqlparser::ast::Expr;

/// What the strategy `duckmv.views` shows adds for such a view.
pub const NOTE: &str = "; rows unique by the tables' declared keys";

/// Whether `body` is a bag whose every row (over `sources`) occurs once.
pub fn of(db: &mut dyn Sql, sources: &[Source], body: &Body) -> Result<bool, IvmError> {
    let Body::Bag {
        rel: Rel::Block(block),
        ..
    } = body
    else {
        return Ok(false);
    };
    let Some(tables) = tables(sources, block) else {
        return Ok(false);
    };
    for (alias, source) in &tables {
        let keys = declared_keys(db, source)?;
        let shown = |c: &String| shows(&block.select, alias, c, source, &tables);
        if !keys.iter().any(|key| key.iter().all(shown)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Each FROM item of the block (outer join trees by their leaves) with its base table, or None
/// when one is not a base table (a view, a subquery, rows the view keeps).
fn tables<'p>(sources: &'p [Source], block: &'p Block) -> Option<Vec<(String, &'p Source)>> {
    let mut items: Vec<&Item> = Vec::new();
    for item in &block.items {
        match &item.from {
            ItemFrom::Tree(tree) => items.extend(tree.leaves()),
            _ => items.push(item),
        }
    }
    items
        .into_iter()
        .map(|item| match item.from {
            ItemFrom::Source(i) if sources[i].kind == SourceKind::Table => {
                Some((item.name(), &sources[i]))
            }
            _ => None,
        })
        .collect()
}

/// Whether some select expression is column `col` of the table under `alias`: `alias.col`, or
/// `col` alone when no other table of the block has a column of that name. Names compare as
/// DuckDB binds them, ignoring case.
fn shows(
    select: &[UserExpr],
    alias: &str,
    col: &str,
    source: &Source,
    tables: &[(String, &Source)],
) -> bool {
    let has = |s: &Source| s.columns.iter().any(|c| c.eq_ignore_ascii_case(col));
    let alone = tables.iter().filter(|(_, s)| has(s)).count().eq(&1) && has(source);
    select.iter().any(|e| match e.ast() {
        Expr::Identifier(id) => alone && id.value.eq_ignore_ascii_case(col),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            parts[0].value.eq_ignore_ascii_case(alias) && parts[1].value.eq_ignore_ascii_case(col)
        }
        _ => false,
    })
}

/// The column sets of `source`'s PRIMARY KEY and of its UNIQUE constraints over NOT NULL
/// columns.
fn declared_keys(db: &mut dyn Sql, source: &Source) -> Result<Vec<Vec<String>>, IvmError> {
    let catalog = match &source.catalog {
        Some(c) => c.clone(),
        None => current_database(db)?,
    };
    let rows = db.query(&format!(
        "SELECT constraint_index, constraint_type, unnest(constraint_column_names) \
         FROM duckdb_constraints() WHERE database_name = {} AND schema_name = {} \
         AND table_name = {} AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'NOT NULL')",
        lit(&catalog),
        lit(&source.schema),
        lit(&source.name)
    ))?;
    let rows: Vec<(String, String, String)> = rows
        .into_iter()
        .map(|r| {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (get(0), get(1), get(2))
        })
        .collect();
    Ok(keys_of(&rows))
}

/// The keys among constraint rows (index, type, column): PRIMARY KEYs, and UNIQUE constraints
/// whose columns all have a NOT NULL constraint.
fn keys_of(rows: &[(String, String, String)]) -> Vec<Vec<String>> {
    let not_null = |c: &str| rows.iter().any(|(_, t, n)| t == "NOT NULL" && n == c);
    let mut keys: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for (index, kind, col) in rows.iter().filter(|(_, t, _)| t != "NOT NULL") {
        match keys.iter_mut().find(|(i, _, _)| i == index) {
            Some((_, _, cols)) => cols.push(col.clone()),
            None => keys.push((index, kind, vec![col.clone()])),
        }
    }
    keys.into_iter()
        .filter(|(_, kind, cols)| *kind == "PRIMARY KEY" || cols.iter().all(|c| not_null(c)))
        .map(|(_, _, cols)| cols)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: &str, t: &str, c: &str) -> (String, String, String) {
        (i.into(), t.into(), c.into())
    }

    fn table(name: &str, columns: &[&str]) -> Source {
        Source {
            catalog: None,
            schema: "main".into(),
            name: name.into(),
            kind: SourceKind::Table,
            view_id: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            relation: name.into(),
            delta: None,
            log: None,
        }
    }

    fn select(exprs: &[&str]) -> Vec<UserExpr> {
        let parse = |e: &&str| UserExpr::new(crate::user_expr::parse(e).unwrap());
        exprs.iter().map(parse).collect()
    }

    /// A name two joined tables share shows neither table's column unless qualified.
    #[test]
    fn a_key_is_shown_by_its_qualified_name_or_a_name_no_other_table_has() {
        let (a, b) = (table("a", &["k", "v"]), table("b", &["k", "ak"]));
        let tables = [("a".to_string(), &a), ("x".to_string(), &b)];
        let shown = |sel: &[&str], alias: &str, col: &str, s: &Source| {
            shows(&select(sel), alias, col, s, &tables)
        };
        assert!(!shown(&["k", "v"], "a", "k", &a));
        assert!(shown(&["a.k", "v"], "a", "k", &a));
        assert!(shown(&["A.K"], "a", "k", &a));
        assert!(shown(&["x.k"], "x", "k", &b));
        assert!(!shown(&["b.k"], "x", "k", &b));
        assert!(shown(&["ak"], "x", "ak", &b));
        assert!(!shown(&["ak + 0"], "x", "ak", &b));
    }

    #[test]
    fn a_unique_constraint_is_a_key_only_over_not_null_columns() {
        let rows = [
            row("0", "PRIMARY KEY", "a"),
            row("0", "PRIMARY KEY", "b"),
            row("1", "UNIQUE", "c"),
            row("2", "UNIQUE", "d"),
            row("2", "UNIQUE", "e"),
            row("3", "NOT NULL", "d"),
            row("4", "NOT NULL", "e"),
        ];
        let keys = keys_of(&rows);
        assert_eq!(keys, vec![vec!["a", "b"], vec!["d", "e"]]);
    }
}
