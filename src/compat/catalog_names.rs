//! Three-part names through the database a client connected to.
//!
//! PostgreSQL accepts `db.schema.object` when `db` is the current database, and tools that
//! qualify everything (dbt writes `"db"."schema"."t"`) depend on it. DuckDB knows the user's
//! database under an internal catalog name (`engine::CATALOG`), so the connected name is
//! dropped from such names before anything reads the statement: `"db"."s"."t"` becomes
//! `"s"."t"`, which resolves in the session's default catalog. Everything else is copied byte
//! for byte.

use crate::sql::lex::{Tok, Token};
use crate::sql::Lexed;

/// `sql` with the catalog part removed from names qualified by `database`, or None when no
/// name is.
pub fn strip_connected_catalog(s: &Lexed, database: &str) -> Option<String> {
    let (sql, toks) = (s.text(), s.tokens());
    if database.is_empty() || !contains_ignore_case(sql, database) {
        return None;
    }
    let mut cuts = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let names_db = match t.kind {
            Tok::Word => t.text.eq_ignore_ascii_case(database),
            Tok::Ident => t.text == database,
            _ => false,
        };
        if names_db && !after_dot(toks, i) && is_three_part(toks, i) {
            // Remove `db.` (the name and its dot).
            cuts.push((t.start, toks[i + 1].end));
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len());
    let mut pos = 0;
    for (start, end) in cuts {
        out.push_str(&sql[pos..start]);
        pos = end;
    }
    out.push_str(&sql[pos..]);
    Some(out)
}

fn is_name(t: &Token) -> bool {
    matches!(t.kind, Tok::Word | Tok::Ident)
}

fn after_dot(toks: &[Token], i: usize) -> bool {
    i > 0 && toks[i - 1].is_punct(".")
}

/// Whether token `i` starts `name . name . name` (a catalog-qualified name).
fn is_three_part(toks: &[Token], i: usize) -> bool {
    let at = |k: usize| toks.get(i + k);
    at(1).is_some_and(|t| t.is_punct("."))
        && at(2).is_some_and(is_name)
        && at(3).is_some_and(|t| t.is_punct("."))
        && at(4).is_some_and(|t| is_name(t) || t.is_punct("*"))
}

fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_connected_catalog(sql: &str, database: &str) -> Option<String> {
        super::strip_connected_catalog(&Lexed::new(sql), database)
    }

    #[test]
    fn the_connected_database_is_dropped_from_three_part_names() {
        let s = strip_connected_catalog(
            r#"create table "bar"."dbt_eval"."t" as select * from bar.public.src, "bar".INFORMATION_SCHEMA.columns"#,
            "bar",
        );
        assert_eq!(
            s.as_deref(),
            Some(
                r#"create table "dbt_eval"."t" as select * from public.src, INFORMATION_SCHEMA.columns"#
            )
        );
    }

    #[test]
    fn other_names_stay() {
        // Two-part names, other catalogs, strings, and the name as a column are untouched.
        for sql in [
            "select bar.x from bar",
            "select * from other.s.t",
            "select 'bar.s.t'",
            "select s.bar.t from s.bar",
            "select \"Bar\".s.t",
        ] {
            assert_eq!(strip_connected_catalog(sql, "bar"), None, "{sql}");
        }
    }
}
