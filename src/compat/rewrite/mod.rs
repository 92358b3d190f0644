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

use crate::sql::lex::{tokenize, Tok, Token};

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
];

/// `information_schema` views duckmv replaces (as `duckmv.information_schema_<name>`).
pub(crate) const INFORMATION_SCHEMA: &[&str] = &[
    "tables",
    "columns",
    "schemata",
    "views",
    "table_constraints",
    "key_column_usage",
];

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
    "json_build_object",
    "::oid",
];

/// The statement to hand DuckDB instead of `sql`, or None to run it as is.
pub fn rewrite(sql: &str) -> Option<String> {
    if !might_need(sql) {
        return None;
    }
    let toks = tokenize(sql);
    let edits = plan(&toks);
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
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let next = toks.get(i + 1);
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
            if let Some(skip) = cast(toks, i, &mut edits) {
                i = skip;
                continue;
            }
        }
        // CAST(x AS regclass)
        if word_is(t, "cast") && next.is_some_and(|n| n.is_punct("(")) && !after_dot(toks, i) {
            cast_call(toks, i, &mut edits);
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
            if let Some(skip) = function(toks, i, &mut edits) {
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

/// The reg* type a cast names, with the duckmv function family.
fn reg_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "regclass" => "regclass",
        "regtype" => "regtype",
        "regnamespace" => "regnamespace",
        "regrole" => "regrole",
        "regproc" | "regprocedure" => "regproc",
        _ => return None,
    })
}

/// DuckDB's spelling of PostgreSQL-only types used in catalog queries.
fn plain_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "name" | "pg_node_tree" | "aclitem" | "regoper" | "regoperator" => "VARCHAR",
        "int2vector" => "SMALLINT[]",
        "oidvector" => "INTEGER[]",
        "xid" | "cid" | "xid8" => "BIGINT",
        // DuckDB's own `oid` is BIGINT; PostgreSQL's is unsigned 32-bit,
        // which the wire reports as oid (26), `oid[]` as _oid (1028).
        "oid" => "UINTEGER",
        _ => return None,
    })
}

/// A type name after `::` or `AS` at `j`: (first token, name token, is array).
fn type_at(toks: &[Token], j: usize) -> Option<(usize, usize, bool)> {
    let mut k = j;
    if toks.get(k).is_some_and(|t| word_is(t, "pg_catalog"))
        && toks.get(k + 1).is_some_and(|t| t.is_punct("."))
    {
        k += 2;
    }
    let t = toks.get(k)?;
    if !is_name(t) {
        return None;
    }
    let array = toks.get(k + 1).is_some_and(|t| t.is_punct("["));
    Some((j, k, array))
}

/// Rewrites the cast whose `::` is token `i`; returns where to continue.
fn cast(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let (first, name_tok, array) = type_at(toks, i + 1)?;
    let tname = name_of(&toks[name_tok]);
    if let (Some(family), false) = (reg_type(&tname), array) {
        let start = operand_start(toks, i)?;
        let dir = if is_name_input(&toks[start..i]) {
            "in"
        } else {
            "out"
        };
        edits.push(Edit {
            start: toks[start].start,
            end: toks[start].start,
            text: format!("duckmv.{family}_{dir}("),
        });
        edits.push(Edit {
            start: toks[i].start,
            end: toks[name_tok].end,
            text: ")".into(),
        });
        return Some(name_tok + 1);
    }
    if let Some(t) = plain_type(&tname) {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].end,
            text: t.into(),
        });
        return Some(name_tok + 1);
    }
    if first != name_tok {
        // `::pg_catalog.text` -> `::text`
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].start,
            text: String::new(),
        });
        return Some(name_tok + 1);
    }
    None
}

/// `CAST(x AS regclass)` starting at the CAST word.
fn cast_call(toks: &[Token], i: usize, edits: &mut Vec<Edit>) {
    let Some(close) = matching(toks, i + 1) else {
        return;
    };
    // The AS at depth 1 closest to the end.
    let mut depth = 0;
    let mut as_at = None;
    for (j, t) in toks.iter().enumerate().take(close).skip(i + 1) {
        if t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") {
            depth -= 1;
        } else if depth == 1 && word_is(t, "as") {
            as_at = Some(j);
        }
    }
    let Some(as_at) = as_at else { return };
    let Some((first, name_tok, array)) = type_at(toks, as_at + 1) else {
        return;
    };
    let tname = name_of(&toks[name_tok]);
    if let (Some(family), false) = (reg_type(&tname), array) {
        let dir = if is_name_input(&toks[i + 2..as_at]) {
            "in"
        } else {
            "out"
        };
        edits.push(Edit {
            start: toks[i].start,
            end: toks[i + 1].end,
            text: format!("duckmv.{family}_{dir}("),
        });
        edits.push(Edit {
            start: toks[as_at - 1].end,
            end: toks[close].start,
            text: String::new(),
        });
    } else if let Some(t) = plain_type(&tname) {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].end,
            text: t.into(),
        });
    } else if first != name_tok {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].start,
            text: String::new(),
        });
    }
}

/// A cast operand that is a name to look up (a string literal or a bind
/// parameter, possibly cast to text first) rather than an oid.
fn is_name_input(operand: &[Token]) -> bool {
    match operand.first() {
        Some(t) if t.kind == Tok::Str => true,
        Some(t) if t.kind == Tok::Punct && t.text.starts_with('$') => true,
        _ => false,
    }
}

/// Words that end an operand when scanning backwards from a `(`.
const NOT_A_FUNCTION: &[&str] = &[
    "SELECT",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "IN",
    "ON",
    "WHEN",
    "THEN",
    "ELSE",
    "BY",
    "FROM",
    "AS",
    "JOIN",
    "IS",
    "CASE",
    "VALUES",
    "HAVING",
    "USING",
    "LIKE",
    "ILIKE",
    "BETWEEN",
    "DISTINCT",
    "RETURNING",
    "SET",
    "LIMIT",
    "OFFSET",
    "ANY",
    "ALL",
    "SOME",
    "EXISTS",
    "WITH",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "INTO",
];

/// First token of the operand of the postfix cast whose `::` is token `i`.
fn operand_start(toks: &[Token], i: usize) -> Option<usize> {
    if i == 0 {
        return None;
    }
    let last = i - 1;
    let t = &toks[last];
    let mut start = if t.is_punct(")") || t.is_punct("]") {
        let open = matching_back(toks, last)?;
        if open > 0 {
            let w = &toks[open - 1];
            let callee = (w.kind == Tok::Word && !NOT_A_FUNCTION.contains(&w.text.as_str()))
                || w.kind == Tok::Ident;
            if callee {
                qualified_start(toks, open - 1)
            } else {
                open
            }
        } else {
            open
        }
    } else if word_is(t, "end") {
        case_start(toks, last)?
    } else if matches!(t.kind, Tok::Str | Tok::Number)
        || (t.kind == Tok::Punct && t.text.starts_with('$'))
    {
        last
    } else if is_name(t) {
        qualified_start(toks, last)
    } else {
        return None;
    };
    // A chain of casts: `x::int::regclass` casts `x::int`.
    while start > 1 && toks[start - 1].is_punct("::") {
        start = operand_start(toks, start - 1)?;
    }
    Some(start)
}

/// Start of a dotted name ending at `j` (`a.b.c`).
fn qualified_start(toks: &[Token], mut j: usize) -> usize {
    while j >= 2 && toks[j - 1].is_punct(".") && is_name(&toks[j - 2]) {
        j -= 2;
    }
    j
}

fn matching_back(toks: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        let t = &toks[j];
        if t.is_punct(")") || t.is_punct("]") {
            depth += 1;
        } else if t.is_punct("(") || t.is_punct("[") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// The CASE that an END at `end` closes.
fn case_start(toks: &[Token], end: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=end).rev() {
        if word_is(&toks[j], "end") {
            depth += 1;
        } else if word_is(&toks[j], "case") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// Function-like names PostgreSQL answers differently from DuckDB.
fn function(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let t = &toks[i];
    let call = toks.get(i + 1).is_some_and(|n| n.is_punct("("));
    let name = t.text.to_ascii_lowercase();
    match name.as_str() {
        "current_setting" if call => {
            let close = matching(toks, i + 1)?;
            let args = &toks[i + 2..close];
            if let Some(lit) = args
                .first()
                .filter(|a| a.kind == Tok::Str && args.len() == 1)
            {
                // DuckDB's own current_setting answers for DuckDB's settings.
                let pname = unquote(&lit.text).to_ascii_lowercase();
                if !super::settings_catalog::is_pg_setting(&pname) {
                    return Some(close + 1);
                }
            }
            edits.push(Edit {
                start: t.start,
                end: t.end,
                text: "duckmv.pg_current_setting".into(),
            });
            Some(i + 2)
        }
        "current_schema" => {
            let end = if call {
                matching(toks, i + 1).map(|c| toks[c].end)?
            } else {
                t.end
            };
            edits.push(Edit {
                start: t.start,
                end,
                text: "duckmv.pg_current_schema()".into(),
            });
            Some(i + 1)
        }
        // The database the client connected to, not the internal catalog name.
        "current_database" if call && toks.get(i + 2).is_some_and(|n| n.is_punct(")")) => {
            edits.push(Edit {
                start: t.start,
                end: toks[i + 2].end,
                text: "duckmv._client_db()".into(),
            });
            Some(i + 3)
        }
        "current_catalog" if !call => {
            edits.push(Edit {
                start: t.start,
                end: t.end,
                text: "duckmv._client_db()".into(),
            });
            Some(i + 1)
        }
        // DuckDB's json_object takes the same (key, value, ...) pairs.
        "json_build_object" if call => {
            edits.push(Edit {
                start: t.start,
                end: t.end,
                text: "json_object".into(),
            });
            Some(i + 2)
        }
        "current_schemas" if call => {
            edits.push(Edit {
                start: t.start,
                end: t.end,
                text: "duckmv.pg_current_schemas".into(),
            });
            Some(i + 2)
        }
        "version" if call && toks.get(i + 2).is_some_and(|n| n.is_punct(")")) => {
            if !after_catalog_dot(toks, i) {
                edits.push(Edit {
                    start: t.start,
                    end: t.start,
                    text: "duckmv.".into(),
                });
            }
            Some(i + 3)
        }
        _ => None,
    }
}

/// The text of a 'string' literal.
fn unquote(s: &str) -> String {
    let s = s.strip_prefix(['E', 'e']).unwrap_or(s);
    s.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(s)
        .replace("''", "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(sql: &str) -> String {
        rewrite(sql).unwrap_or_else(|| sql.to_string())
    }

    #[test]
    fn quick_check_is_case_insensitive() {
        assert!(might_need("SELECT * FROM PG_CATALOG.PG_CLASS"));
        assert!(might_need("select x::RegClass"));
        assert!(!might_need("INSERT INTO t VALUES (1, 'price', 'catalog')"));
    }

    #[test]
    fn leaves_ordinary_statements_alone() {
        assert_eq!(rewrite("SELECT a, b FROM t WHERE x = 'y'"), None);
        assert_eq!(rewrite("INSERT INTO t VALUES (1, 'a')"), None);
        // Mentions a trigger word but needs no change.
        assert_eq!(rewrite("SELECT relname FROM pg_class"), None);
        assert_eq!(rewrite("SELECT 'public' AS s"), None);
    }

    #[test]
    fn catalog_qualifier() {
        assert_eq!(
            rw("SELECT c.relname FROM pg_catalog.pg_class c WHERE pg_catalog.pg_table_is_visible(c.oid)"),
            "SELECT c.relname FROM duckmv.pg_class c WHERE duckmv.pg_table_is_visible(c.oid)"
        );
        // Not ours: DuckDB's built-in, found on the search path.
        assert_eq!(
            rw("SELECT pg_catalog.count(*), pg_catalog.unnest(x)"),
            "SELECT count(*), unnest(x)"
        );
        // Three-part column references follow their table.
        assert_eq!(
            rw("SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class"),
            "SELECT duckmv.pg_class.relname FROM duckmv.pg_class"
        );
        assert_eq!(rw("select pg_catalog.version()"), "select duckmv.version()");
        assert_eq!(rw("SELECT version()"), "SELECT duckmv.version()");
    }

    #[test]
    fn operators_and_collations() {
        assert_eq!(
            rw("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND x"),
            "WHERE c.relname  ~  '^(t)$'  AND x"
        );
        assert_eq!(
            rw("WHERE a OPERATOR(pg_catalog.!~) 'x'"),
            "WHERE a  !~  'x'"
        );
        assert_eq!(rw("SELECT a COLLATE \"C\" FROM t"), "SELECT a  FROM t");
    }

    #[test]
    fn regclass_casts() {
        assert_eq!(rw("SELECT 't'::regclass"), "SELECT duckmv.regclass_in('t')");
        assert_eq!(
            rw("SELECT 'public.t'::pg_catalog.regclass::oid"),
            "SELECT duckmv.regclass_in('public.t')::UINTEGER"
        );
        assert_eq!(
            rw("SELECT c.oid::pg_catalog.regclass::pg_catalog.text FROM x"),
            "SELECT duckmv.regclass_out(c.oid)::text FROM x"
        );
        assert_eq!(
            rw("SELECT CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END"),
            "SELECT CASE WHEN c.reloftype = 0 THEN '' ELSE duckmv.regtype_out(c.reloftype)::text END"
        );
        assert_eq!(
            rw("SELECT basetype::regtype::text"),
            "SELECT duckmv.regtype_out(basetype)::text"
        );
        assert_eq!(
            rw("WHERE t.oid = to_regtype($1)"),
            "WHERE t.oid = to_regtype($1)"
        );
        assert_eq!(rw("SELECT $1::regclass"), "SELECT duckmv.regclass_in($1)");
        assert_eq!(
            rw("SELECT f(x)::regtype"),
            "SELECT duckmv.regtype_out(f(x))"
        );
        assert_eq!(
            rw("SELECT (a + b)::regclass"),
            "SELECT duckmv.regclass_out((a + b))"
        );
        assert_eq!(
            rw("SELECT stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp"),
            "SELECT duckmv.regnamespace_out(stxnamespace)::text AS nsp"
        );
        assert_eq!(
            rw("WHERE d.classoid = CAST($3 AS REGCLASS) AND x"),
            "WHERE d.classoid = duckmv.regclass_in($3) AND x"
        );
        assert_eq!(
            rw("SELECT CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT)"),
            "SELECT CAST(duckmv.regclass_out(duckmv.pg_attribute.attrelid) AS TEXT)"
        );
        assert_eq!(
            rw("SELECT 'pg_catalog.array_in'::regproc"),
            "SELECT duckmv.regproc_in('pg_catalog.array_in')"
        );
    }

    #[test]
    fn other_types() {
        assert_eq!(
            rw("SELECT x::pg_catalog.int2[] FROM pg_class"),
            "SELECT x::int2[] FROM pg_class"
        );
        assert_eq!(
            rw("SELECT relname::name FROM pg_class"),
            "SELECT relname::VARCHAR FROM pg_class"
        );
        assert_eq!(
            rw("SELECT '16398'::pg_catalog.oid"),
            "SELECT '16398'::UINTEGER"
        );
        // asyncpg's type introspection binds `$1::oid[]`.
        assert_eq!(
            rw("SELECT 1 WHERE t.oid = any($1::oid[])"),
            "SELECT 1 WHERE t.oid = any($1::UINTEGER[])"
        );
    }

    #[test]
    fn information_schema_and_public() {
        assert_eq!(
            rw("SELECT * FROM information_schema.tables WHERE table_schema = 'public'"),
            "SELECT * FROM duckmv.information_schema_tables WHERE table_schema = 'public'"
        );
        assert_eq!(
            rw("SELECT * FROM INFORMATION_SCHEMA.COLUMNS"),
            "SELECT * FROM duckmv.information_schema_columns"
        );
        assert_eq!(
            rw("SELECT (information_schema._pg_expandarray(i.indkey)).n"),
            "SELECT (unnest(duckmv._pg_expandarray(i.indkey))).n"
        );
        assert_eq!(
            rw("SELECT * FROM public.t JOIN \"public\".u ON true"),
            "SELECT * FROM main.t JOIN main.u ON true"
        );
        // Other information_schema views are DuckDB's.
        assert_eq!(rewrite("SELECT * FROM information_schema.routines"), None);
    }

    #[test]
    fn settings_and_schemas() {
        assert_eq!(
            rw("SELECT current_setting('server_version_num')"),
            "SELECT duckmv.pg_current_setting('server_version_num')"
        );
        // DuckDB's own settings stay DuckDB's.
        assert_eq!(rewrite("SELECT current_setting('threads')"), None);
        assert_eq!(
            rw("SELECT current_setting($1::VARCHAR)"),
            "SELECT duckmv.pg_current_setting($1::VARCHAR)"
        );
        assert_eq!(
            rw("select current_schema()"),
            "select duckmv.pg_current_schema()"
        );
        assert_eq!(
            rw("select current_schema"),
            "select duckmv.pg_current_schema()"
        );
        assert_eq!(
            rw("SELECT (pg_catalog.current_schemas(true))[1]"),
            "SELECT (duckmv.pg_current_schemas(true))[1]"
        );
    }

    #[test]
    fn psql_describe_query() {
        let q = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(items)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
        let out = rw(q);
        assert!(!out.contains("pg_catalog"), "{out}");
        assert!(out.contains("c.relname  ~  '^(items)$'"), "{out}");
    }
}
