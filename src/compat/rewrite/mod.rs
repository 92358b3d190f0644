//! Rewriting what PostgreSQL clients send into SQL DuckDB understands
//! (catalog names, casts and operators DuckDB lacks).
//!
//! The rewriter works on tokens, not on a parse tree: clients' catalog
//! queries use syntax no single parser reads (PostgreSQL's `OPERATOR(...)`
//! next to DuckDB-only functions), and only a few spots need to change.
//! Everything between those spots is copied byte for byte.
//!
//! What changes:
//! - `pg_catalog.x` becomes `duckmv.x` for the objects duckmv provides
//!   (DuckDB would resolve `pg_catalog.` to its own, thinner catalog) and
//!   plain `x` for the rest (DuckDB's built-ins, found on the search path);
//! - `information_schema.tables` / `columns` / ... become duckmv's views,
//!   which show `main` as `public` and hide the internal schemas;
//! - `public.x` becomes `main.x`;
//! - `OPERATOR(pg_catalog.~)` becomes `~`, `COLLATE pg_catalog.default` goes;
//! - casts to `regclass`, `regtype`, `regnamespace`, `regrole`, `regproc`
//!   become calls: a name (a string literal or a parameter) resolves to an
//!   oid (`duckmv.regclass_in('t')`), anything else is an oid shown as a
//!   name (`duckmv.regclass_out(c.oid)`);
//! - `current_setting('x')` for PostgreSQL's parameters, `current_schema`,
//!   `current_schemas(...)`, `current_database()` and `version()` answer as PostgreSQL would.

use crate::sql::lex::{Tok, Token};
use crate::sql::Lexed;

mod casts;
mod extract;
mod format;
mod functions;
mod system_columns;

/// Objects in schema `duckmv` that stand in for `pg_catalog`'s (see
/// catalog.sql). A `pg_catalog.` qualifier on any other name is dropped.
pub(crate) const PROVIDED: &[&str] = &[
    "pg_type",
    "pg_enum",
    "pg_range",
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_attrdef",
    "pg_index",
    "pg_constraint",
    "pg_description",
    "pg_shdescription",
    "pg_database",
    "pg_roles",
    "pg_authid",
    "pg_user",
    "pg_auth_members",
    "pg_am",
    "pg_tablespace",
    "pg_collation",
    "pg_extension",
    "pg_proc",
    "pg_language",
    "pg_inherits",
    "pg_trigger",
    "pg_rewrite",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_partitioned_table",
    "pg_sequence",
    "pg_opclass",
    "pg_foreign_table",
    "pg_foreign_server",
    "pg_event_trigger",
    "pg_settings",
    "pg_stat_activity",
    "pg_tables",
    "pg_views",
    "pg_matviews",
    "pg_indexes",
    "format_type",
    "version",
    "set_config",
    "pg_backend_pid",
    "pg_get_userbyid",
    "pg_encoding_to_char",
    "pg_char_to_encoding",
    "getdatabaseencoding",
    "pg_client_encoding",
    "pg_table_is_visible",
    "pg_type_is_visible",
    "pg_function_is_visible",
    "pg_collation_is_visible",
    "has_table_privilege",
    "has_schema_privilege",
    "has_database_privilege",
    "has_column_privilege",
    "has_any_column_privilege",
    "has_function_privilege",
    "has_sequence_privilege",
    "pg_has_role",
    "pg_relation_is_publishable",
    "pg_get_statisticsobjdef_columns",
    "pg_get_ruledef",
    "pg_get_triggerdef",
    "pg_get_functiondef",
    "pg_get_function_arguments",
    "pg_get_function_result",
    "pg_get_serial_sequence",
    "pg_get_partkeydef",
    "pg_get_expr",
    "pg_get_constraintdef",
    "pg_get_indexdef",
    "pg_get_viewdef",
    "obj_description",
    "shobj_description",
    "col_description",
    "pg_total_relation_size",
    "pg_relation_size",
    "pg_table_size",
    "pg_indexes_size",
    "pg_database_size",
    "array_upper",
    "array_lower",
    "txid_current",
    "pg_is_in_recovery",
    "to_regclass",
    "to_regtype",
    "to_regnamespace",
    "pg_depend",
];

/// `information_schema` views duckmv replaces (as `duckmv.information_schema_<name>`).
pub(crate) const INFORMATION_SCHEMA: &[&str] = &[
    "tables",
    "columns",
    "schemata",
    "views",
    "table_constraints",
    "key_column_usage",
    "table_privileges",
    "role_table_grants",
];

/// The token at `i` replaced by `to`.
fn replace_token(toks: &[Token], i: usize, to: &str, edits: &mut Vec<Edit>) -> Option<usize> {
    edits.push(Edit {
        start: toks[i].start,
        end: toks[i].end,
        text: to.into(),
    });
    Some(i + 1)
}

/// The positions in `from..to` outside any parentheses or brackets opened there (the separators
/// of a call's arguments); None when they do not balance.
fn outermost(toks: &[Token], from: usize, to: usize) -> Option<Vec<usize>> {
    let mut depth = 0usize;
    let mut out = Vec::new();
    for (j, t) in toks.iter().enumerate().take(to).skip(from) {
        if t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") {
            depth = depth.checked_sub(1)?;
        } else if depth == 0 {
            out.push(j);
        }
    }
    Some(out)
}

/// Lower-case fragments of everything this module rewrites. A statement
/// containing none of them is returned untouched without tokenizing.
const TRIGGERS: &[&str] = &[
    "pg_",
    "information_schema",
    "public",
    "operator",
    "collate",
    "regclass",
    "regtype",
    "regnamespace",
    "regproc",
    "regrole",
    "current_setting",
    "current_schema",
    "current_database",
    "current_catalog",
    "version",
    "json",
    "merge_action",
    "::oid",
    "format",
    "substring",
    "string_to_array",
    "regexp_split_to_array",
    "tableoid",
    "xmin",
    "bytea",
    "generate_series",
    "'{",
    "extract",
    "date_part",
    "current_user",
    "session_user",
    "current_role",
    "array",
    "to_date",
    "to_timestamp",
    "similar",
];

/// The statement to hand DuckDB instead of `sql`, or None to run it as is.
pub fn rewrite(s: &Lexed) -> Option<String> {
    let sql = s.text();
    if !might_need(sql) && !has_empty_select(sql) {
        return None;
    }
    let edits = plan(s.tokens());
    if edits.is_empty() {
        return None;
    }
    Some(apply(sql, edits))
}

/// Bytes (lower-case) that start a trigger fragment.
const TRIGGER_STARTS: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < TRIGGERS.len() {
        table[TRIGGERS[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    table
};

/// Case-insensitive search for any trigger fragment, in one pass and
/// without allocating: this runs on every statement, including bulk loads.
fn might_need(sql: &str) -> bool {
    let b = sql.as_bytes();
    (0..b.len()).any(|i| {
        TRIGGER_STARTS[b[i].to_ascii_lowercase() as usize] && {
            let rest = &b[i..];
            TRIGGERS.iter().any(|t| {
                rest.len() >= t.len() && rest[..t.len()].eq_ignore_ascii_case(t.as_bytes())
            })
        }
    })
}

/// Whether `SELECT` is followed directly by FROM or WHERE somewhere (an
/// empty select list, which PostgreSQL allows and DuckDB does not).
fn has_empty_select(sql: &str) -> bool {
    let b = sql.as_bytes();
    let word_at = |i: usize, w: &str| {
        b.len() >= i + w.len()
            && b[i..i + w.len()].eq_ignore_ascii_case(w.as_bytes())
            && b.get(i + w.len())
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
    };
    (0..b.len()).any(|i| {
        (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && word_at(i, "select")
            && {
                let mut j = i + 6;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                j > i + 6 && (word_at(j, "from") || word_at(j, "where"))
            }
    })
}

/// One change: replace `start..end` of the statement with `text`
/// (an insertion when start == end).
#[derive(Debug)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

fn apply(sql: &str, mut edits: Vec<Edit>) -> String {
    // Insertions at the same offset keep their order of creation; wrapping
    // edits are created outermost last, so a stable sort puts them right.
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(sql.len() + 64);
    let mut pos = 0;
    for e in edits {
        if e.start < pos {
            // Overlapping edits would corrupt the statement: keep the first.
            continue;
        }
        out.push_str(&sql[pos..e.start]);
        out.push_str(&e.text);
        pos = e.end;
    }
    out.push_str(&sql[pos..]);
    out
}

fn word_is(t: &Token, lower: &str) -> bool {
    matches!(t.kind, Tok::Word | Tok::Ident) && t.text.eq_ignore_ascii_case(lower)
}

fn is_name(t: &Token) -> bool {
    matches!(t.kind, Tok::Word | Tok::Ident)
}

/// Lower-case name of a word or quoted identifier.
fn name_of(t: &Token) -> String {
    match t.kind {
        Tok::Word => t.text.to_ascii_lowercase(),
        _ => t.text.clone(),
    }
}

fn plan(toks: &[Token]) -> Vec<Edit> {
    let mut edits = Vec::new();
    system_columns::plan(toks, &mut edits);
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let next = toks.get(i + 1);
        // `SELECT FROM t`: PostgreSQL allows an empty select list (EXISTS
        // (SELECT FROM …)); DuckDB needs something to select.
        if t.is_kw("SELECT") && next.is_some_and(|n| n.is_kw("FROM") || n.is_kw("WHERE")) {
            // At the top the client gets rows without columns, as from PostgreSQL:
            // the session drops the column so named.
            let text = if i == 0 {
                format!(" NULL AS {}", super::NO_COLUMNS)
            } else {
                " NULL".to_string()
            };
            edits.push(Edit {
                start: t.end,
                end: t.end,
                text,
            });
        }
        let qualified =
            next.is_some_and(|n| n.is_punct(".")) && toks.get(i + 2).is_some_and(is_name);
        // `OPERATOR(pg_catalog.~)` -> `~`
        if word_is(t, "operator") && next.is_some_and(|n| n.is_punct("(")) {
            if let Some((op, close)) = operator_call(toks, i + 1) {
                edits.push(Edit {
                    start: t.start,
                    end: toks[close].end,
                    text: format!(" {op} "),
                });
                i = close + 1;
                continue;
            }
        }
        // `COLLATE pg_catalog.default` / `COLLATE "C"`: DuckDB has neither.
        if word_is(t, "collate") {
            if let Some(last) = default_collation(toks, i + 1) {
                edits.push(Edit {
                    start: t.start,
                    end: toks[last].end,
                    text: String::new(),
                });
                i = last + 1;
                continue;
            }
        }
        // `::regclass` and friends, `::pg_catalog.text`, `::name`.
        if t.is_punct("::") {
            if let Some(skip) = casts::cast(toks, i, &mut edits) {
                i = skip;
                continue;
            }
        }
        // CAST(x AS regclass)
        if word_is(t, "cast") && next.is_some_and(|n| n.is_punct("(")) && !after_dot(toks, i) {
            casts::cast_call(toks, i, &mut edits);
        }
        if qualified && !after_dot(toks, i) {
            let object = &toks[i + 2];
            let oname = name_of(object);
            if word_is(t, "pg_catalog") {
                let text = if PROVIDED.contains(&oname.as_str()) {
                    "duckmv"
                } else {
                    ""
                };
                let end = if text.is_empty() {
                    toks[i + 1].end
                } else {
                    t.end
                };
                edits.push(Edit {
                    start: t.start,
                    end,
                    text: text.to_string(),
                });
                // The object name itself may need a rewrite too (current_setting…).
                i += 2;
                continue;
            }
            if word_is(t, "information_schema") {
                if oname == "_pg_expandarray" && toks.get(i + 3).is_some_and(|n| n.is_punct("(")) {
                    if let Some(close) = matching(toks, i + 3) {
                        edits.push(Edit {
                            start: t.start,
                            end: toks[i + 3].end,
                            text: "unnest(duckmv._pg_expandarray(".into(),
                        });
                        edits.push(Edit {
                            start: toks[close].start,
                            end: toks[close].start,
                            text: ")".into(),
                        });
                        i += 4;
                        continue;
                    }
                }
                if INFORMATION_SCHEMA.contains(&oname.as_str()) {
                    edits.push(Edit {
                        start: t.start,
                        end: object.end,
                        text: format!("duckmv.information_schema_{oname}"),
                    });
                    i += 3;
                    continue;
                }
            }
            if word_is(t, "public") {
                edits.push(Edit {
                    start: t.start,
                    end: t.end,
                    text: "main".into(),
                });
                i += 2;
                continue;
            }
        }
        if t.kind == Tok::Word && !after_dot(toks, i) || after_catalog_dot(toks, i) {
            if let Some(skip) = functions::function(toks, i, &mut edits) {
                i = skip;
                continue;
            }
        }
        i += 1;
    }
    edits
}

/// True when token `i` follows a `.` (it is the second part of a name).
fn after_dot(toks: &[Token], i: usize) -> bool {
    i > 0 && toks[i - 1].is_punct(".")
}

/// True when token `i` is the name in `pg_catalog.name`.
fn after_catalog_dot(toks: &[Token], i: usize) -> bool {
    i > 1 && toks[i - 1].is_punct(".") && word_is(&toks[i - 2], "pg_catalog")
}

/// Index of the `)` matching the `(` at `open`.
fn matching(toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// `OPERATOR(schema.op)` starting at the `(`: the operator and the `)`.
fn operator_call(toks: &[Token], open: usize) -> Option<(String, usize)> {
    let mut j = open + 1;
    if toks.get(j).is_some_and(is_name) && toks.get(j + 1).is_some_and(|t| t.is_punct(".")) {
        j += 2;
    }
    let mut op = String::new();
    while let Some(t) = toks.get(j) {
        if t.is_punct(")") {
            return (!op.is_empty()).then_some((op, j));
        }
        if t.kind != Tok::Punct {
            return None;
        }
        op.push_str(&t.text);
        j += 1;
    }
    None
}

/// After COLLATE: `[pg_catalog.]default|"C"|"POSIX"`; the last token.
fn default_collation(toks: &[Token], mut j: usize) -> Option<usize> {
    if toks.get(j).is_some_and(|t| word_is(t, "pg_catalog"))
        && toks.get(j + 1).is_some_and(|t| t.is_punct("."))
    {
        j += 2;
    }
    let t = toks.get(j)?;
    let n = t.text.to_ascii_lowercase();
    (is_name(t) && matches!(n.as_str(), "default" | "c" | "posix" | "ucs_basic")).then_some(j)
}

#[cfg(test)]
mod tests;
