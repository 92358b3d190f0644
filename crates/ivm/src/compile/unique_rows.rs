//! Whether a bag view's rows are all different, by the keys its tables declare.
//!
//! A bag view keeps each distinct row once with its count, so computing its rows from scratch
//! (its first fill, a full refresh) groups them by every column: over a 1.5M-row LEFT JOIN that
//! grouping costs about as much as the join itself. It is not needed when no row can occur
//! twice, and that follows from the catalog: a select-project-join block whose select list
//! shows, as plain columns, a declared key of every table it joins gives each combination of
//! table rows at most once, and tells the combinations apart. Inner joins pair rows; a LEFT or
//! FULL join adds at most one padded row per unmatched row, whose padded keys are NULL where a
//! real row's never are; WHERE and existence tests only drop rows. A table need not show its
//! key when the key equals columns of tables the row fixes already (`o.cust = c.id` in WHERE or
//! an inner join, or a LEFT join's condition towards its padded side): their row gives it at
//! most one match. A declared key is a PRIMARY KEY, or a UNIQUE constraint on NOT NULL columns
//! (UNIQUE lets NULLs repeat). DuckDB cannot drop either while the table exists, and any ALTER
//! that could change them on a table a view reads compiles the view again (`alter`), so what
//! is read here holds for the view's life. Set operations are kept as grouped counts (an
//! aggregate body), never as a bag, so this never applies to them.

use super::resolve::current_database;
use crate::ops::{Kind, Tree};
use crate::plan::{Block, Body, Item, ItemFrom, Rel, Source, SourceKind};
use crate::text::lit;
use crate::user_expr::{conjuncts, equality};
use crate::{IvmError, Sql};
use sqlparser::ast::Expr;

/// What the strategy `duckmv.views` shows adds for such a view.
pub const NOTE: &str = "; rows unique by the tables' declared keys";

/// Whether `body` is a bag whose every row (over `sources`) occurs once: every table it joins
/// is fixed by the row, through a declared key the select list shows, or through a key whose
/// columns equal columns of tables already fixed (see [`equalities`]).
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
    let here = current_database(db)?;
    let mut keys = Vec::with_capacity(tables.len());
    for (_, source) in &tables {
        let catalog = source.catalog.as_ref().unwrap_or(&here);
        keys.push(declared_keys(db, catalog, source)?);
    }
    // A table without a key is fixed by nothing.
    if keys.iter().any(|k| k.is_empty()) {
        return Ok(false);
    }
    let mut types = Vec::with_capacity(tables.len());
    for (_, source) in &tables {
        let catalog = source.catalog.as_ref().unwrap_or(&here);
        types.push(column_types(db, catalog, source)?);
    }
    let edges = equalities(block, &tables, &types);
    let shown = |t: usize, c: &str| {
        let place = Some((t, c.to_lowercase()));
        block
            .select
            .iter()
            .any(|e| column_of(e.ast(), &tables) == place)
    };
    let mut fixed: Vec<bool> = (0..tables.len())
        .map(|t| keys[t].iter().any(|key| key.iter().all(|c| shown(t, c))))
        .collect();
    // Each pass fixes the tables whose key the fixed ones give; at most one pass per table.
    for _ in 0..tables.len() {
        let given = |t: usize, c: &String| {
            let c = c.to_lowercase();
            edges
                .iter()
                .any(|(from, to, col)| fixed[*from] && *to == t && *col == c)
        };
        let now: Vec<bool> = (0..tables.len())
            .map(|t| fixed[t] || keys[t].iter().any(|key| key.iter().all(|c| given(t, c))))
            .collect();
        fixed = now;
    }
    Ok(fixed.into_iter().all(|f| f))
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

/// The table (index into `tables`) and lowercased name of the column `e` is: `alias.col`, or
/// `col` alone when exactly one table has a column of that name. Names compare as DuckDB
/// binds them, ignoring case.
fn column_of(e: &Expr, tables: &[(String, &Source)]) -> Option<(usize, String)> {
    let has = |s: &Source, col: &str| s.columns.iter().any(|c| c.eq_ignore_ascii_case(col));
    let (found, col) = match e {
        Expr::Identifier(id) => {
            let mut owners = (0..tables.len()).filter(|&t| has(tables[t].1, &id.value));
            match (owners.next(), owners.next()) {
                (Some(t), None) => (t, &id.value),
                _ => return None,
            }
        }
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            let alias = &parts[0].value;
            let t = tables
                .iter()
                .position(|(a, _)| a.eq_ignore_ascii_case(alias))?;
            (t, &parts[1].value)
        }
        Expr::Nested(inner) => return column_of(inner, tables),
        _ => return None,
    };
    has(tables[found].1, col).then(|| (found, col.to_lowercase()))
}

/// Column equalities that hold in every row where their tables' rows are real, as edges
/// (from, to, to's column): the table `from`'s row fixes column `col` of `to`. WHERE and inner
/// join conditions go both ways. A LEFT join's condition only from the preserved side to the
/// padded one: a preserved row without a match still appears, whatever the condition says.
/// A FULL join's condition fixes nothing (either side appears alone).
fn equalities(block: &Block, tables: &[(String, &Source)], types: &[Types]) -> Vec<Edge> {
    let mut found = Vec::new();
    if let Some(filter) = &block.filter {
        add_equalities(filter.ast(), tables, None, &mut found);
    }
    for item in &block.items {
        if let ItemFrom::Tree(tree) = &item.from {
            tree_equalities(tree, tables, &mut found);
        }
    }
    // Only between columns of one type that compares by value: `'01' = 1` holds as `'1' = 1`
    // does, so a VARCHAR equal to an INTEGER key fixes the key, not the VARCHAR.
    let ty = |t: usize, c: &str| types[t].iter().find(|(n, _)| n == c).map(|(_, ty)| ty);
    found
        .into_iter()
        .filter(|((f, fc), (t, tc))| {
            let (a, b) = (ty(*f, fc), ty(*t, tc));
            a == b && a.is_some_and(|a| EXACT.contains(&a.as_str()))
        })
        .map(|((f, _), (t, tc))| (f, t, tc))
        .collect()
}

/// An equality between two tables' columns, as (table, column) pairs: the first fixes the
/// second.
type Found = ((usize, String), (usize, String));
/// (from, to, to's column).
type Edge = (usize, usize, String);
/// A table's columns, lowercased, with their types.
type Types = Vec<(String, String)>;

/// Types whose equality is equality of value, so that a key column equal to a column of a
/// fixed row is fixed: integers, UUIDs and dates.
const EXACT: &[&str] = &[
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "UUID",
    "DATE",
];

fn tree_equalities(tree: &Tree, tables: &[(String, &Source)], edges: &mut Vec<Found>) {
    let Tree::Join {
        kind,
        left,
        right,
        on,
    } = tree
    else {
        return;
    };
    tree_equalities(left, tables, edges);
    tree_equalities(right, tables, edges);
    let padded: Vec<String> = right.leaves().iter().map(|i| i.name()).collect();
    match kind {
        Kind::Inner => add_equalities(on.ast(), tables, None, edges),
        Kind::Left => add_equalities(on.ast(), tables, Some(&padded), edges),
        Kind::Full => {}
    }
}

/// The edges of `e`'s conjuncts `a = b` between two tables; with `into`, only those towards a
/// table under one of these aliases from a table under none.
fn add_equalities(
    e: &Expr,
    tables: &[(String, &Source)],
    into: Option<&[String]>,
    edges: &mut Vec<Found>,
) {
    let inside =
        |t: usize| into.is_none_or(|a| a.iter().any(|n| n.eq_ignore_ascii_case(&tables[t].0)));
    for c in conjuncts(e) {
        let Some((left, right)) = equality(c) else {
            continue;
        };
        let (Some(l), Some(r)) = (column_of(left, tables), column_of(right, tables)) else {
            continue;
        };
        for (from, to) in [(l.clone(), r.clone()), (r, l)] {
            let crosses = into.is_none() || (!inside(from.0) && inside(to.0));
            if from.0 != to.0 && crosses {
                edges.push((from, to));
            }
        }
    }
}

/// `source`'s columns (lowercased) and their types.
fn column_types(db: &mut dyn Sql, catalog: &str, source: &Source) -> Result<Types, IvmError> {
    let rows = db.query(&format!(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_catalog = {} \
         AND table_schema = {} AND table_name = {}",
        lit(catalog),
        lit(&source.schema),
        lit(&source.name)
    ))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (get(0).to_lowercase(), get(1))
        })
        .collect())
}

/// The column sets of `source`'s PRIMARY KEY and of its UNIQUE constraints over NOT NULL
/// columns.
fn declared_keys(
    db: &mut dyn Sql,
    catalog: &str,
    source: &Source,
) -> Result<Vec<Vec<String>>, IvmError> {
    let rows = db.query(&format!(
        "SELECT constraint_index, constraint_type, unnest(constraint_column_names) \
         FROM duckdb_constraints() WHERE database_name = {} AND schema_name = {} \
         AND table_name = {} AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'NOT NULL')",
        lit(catalog),
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
    use crate::plan::tests::source;

    fn row(i: &str, t: &str, c: &str) -> (String, String, String) {
        (i.into(), t.into(), c.into())
    }

    /// A name two joined tables share is neither table's column unless qualified.
    #[test]
    fn a_column_is_placed_by_its_alias_or_a_name_no_other_table_has() {
        let (a, b) = (source("a", &["k", "v"]), source("b", &["k", "ak"]));
        let tables = [("a".to_string(), &a), ("x".to_string(), &b)];
        let place = |e: &str| column_of(&crate::user_expr::parse(e).unwrap(), &tables);
        assert_eq!(place("k"), None);
        assert_eq!(place("a.k"), Some((0, "k".into())));
        assert_eq!(place("A.K"), Some((0, "k".into())));
        assert_eq!(place("x.k"), Some((1, "k".into())));
        assert_eq!(place("b.k"), None);
        assert_eq!(place("ak"), Some((1, "ak".into())));
        assert_eq!(place("a.ak"), None);
        assert_eq!(place("ak + 0"), None);
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
