//! System columns of catalog tables: every PostgreSQL table has `tableoid`
//! (the oid of the catalog a row lives in) and `xmin`, which `*` does not
//! list. pgAdmin joins on `cls.tableoid` and reads `c.xmin`. duckmv's
//! catalog views have no such columns, so `alias.tableoid` of a catalog
//! table becomes that catalog's oid and `alias.xmin` a transaction id of 0.

use std::collections::HashMap;

use super::{is_name, name_of, word_is, Edit};
use crate::sql::lex::{Tok, Token};

/// Catalog tables and their PostgreSQL oids.
const CATALOG_OIDS: &[(&str, u32)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_database", 1262),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_namespace", 2615),
    ("pg_rewrite", 2618),
    ("pg_trigger", 2620),
    ("pg_extension", 3079),
    ("pg_collation", 3456),
    ("pg_depend", 2608),
    ("pg_sequence", 2224),
];

/// Edits for the system columns the statement reads.
pub(super) fn plan(toks: &[Token], edits: &mut Vec<Edit>) {
    let names = catalog_names(toks);
    if names.is_empty() {
        return;
    }
    for i in 0..toks.len().saturating_sub(2) {
        let (t, dot, col) = (&toks[i], &toks[i + 1], &toks[i + 2]);
        if !is_name(t) || !dot.is_punct(".") || (i > 0 && toks[i - 1].is_punct(".")) {
            continue;
        }
        let Some(oid) = names.get(&name_of(t)) else {
            continue;
        };
        let text = if word_is(col, "tableoid") {
            format!("{oid}::UINTEGER")
        } else if word_is(col, "xmin") {
            "0::BIGINT".to_string()
        } else {
            continue;
        };
        edits.push(Edit {
            start: t.start,
            end: col.end,
            text,
        });
    }
}

/// The names (aliases, or the tables' own) under which catalog tables are read.
fn catalog_names(toks: &[Token]) -> HashMap<String, u32> {
    let mut names = HashMap::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(&(table, oid)) = CATALOG_OIDS.iter().find(|(n, _)| word_is(t, n)) else {
            continue;
        };
        let mut j = i;
        if i >= 2 && toks[i - 1].is_punct(".") && word_is(&toks[i - 2], "pg_catalog") {
            j = i - 2;
        }
        let in_from = j > 0
            && (toks[j - 1].is_kw("FROM")
                || toks[j - 1].is_kw("JOIN")
                || toks[j - 1].is_punct(","));
        if !in_from || toks.get(i + 1).is_some_and(|n| n.is_punct(".")) {
            continue;
        }
        names.insert(table.to_string(), oid);
        let mut k = i + 1;
        if toks.get(k).is_some_and(|n| n.is_kw("AS")) {
            k += 1;
        }
        if let Some(alias) = toks.get(k).filter(|n| {
            n.kind == Tok::Ident
                || (n.kind == Tok::Word
                    && !crate::compat::ENDS_FROM_ITEM.contains(&n.text.as_str()))
        }) {
            names.insert(name_of(alias), oid);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::super::tests::rewrite;

    #[test]
    fn tableoid_and_xmin_of_catalog_aliases() {
        assert_eq!(
            rewrite("SELECT c.xmin FROM pg_catalog.pg_class c JOIN pg_catalog.pg_constraint AS con ON con.tableoid = c.tableoid").as_deref(),
            Some("SELECT 0::BIGINT FROM duckmv.pg_class c JOIN duckmv.pg_constraint AS con ON 2606::UINTEGER = 1259::UINTEGER")
        );
        // A user table's columns of those names are its own.
        assert_eq!(rewrite("SELECT t.tableoid FROM mytable t"), None);
    }
}
