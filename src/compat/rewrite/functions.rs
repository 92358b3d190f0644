//! Functions and keywords PostgreSQL answers differently from DuckDB.

use super::{after_catalog_dot, matching, outermost, replace_token, Edit};
use crate::sql::lex::{Tok, Token};

/// Function-like names PostgreSQL answers differently from DuckDB.
pub(super) fn function(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let t = &toks[i];
    let call = toks.get(i + 1).is_some_and(|n| n.is_punct("("));
    let name = t.text.to_ascii_lowercase();
    match name.as_str() {
        "format" if call => super::format::format_call(toks, i, edits),
        "substring" if call => regex_substring(toks, i, edits),
        "string_to_array" | "regexp_split_to_array" if call => scalar_in_from(toks, i, edits),
        "generate_series" if call && !after_catalog_dot(toks, i) => rows_in_select(toks, i, edits),
        "extract" if call => super::extract::extract(toks, i, edits),
        "date_part" if call && !after_catalog_dot(toks, i) => {
            super::extract::date_part(toks, i, edits)
        }
        "current_setting" if call => {
            let close = matching(toks, i + 1)?;
            let args = &toks[i + 2..close];
            if let Some(lit) = args
                .first()
                .filter(|a| a.kind == Tok::Str && args.len() == 1)
            {
                // DuckDB's own current_setting answers for DuckDB's settings.
                let pname = unquote(&lit.text).to_ascii_lowercase();
                if !crate::compat::settings_catalog::is_pg_setting(&pname) {
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
        // The login role, not DuckDB's constant 'duckdb'.
        "current_user" | "session_user" | "current_role"
            if !call && !after_catalog_dot(toks, i) =>
        {
            replace_token(toks, i, "duckmv._session_role()", edits)
        }
        "any" | "some" | "all" if call => array_of_query(toks, i, edits),
        "similar" if toks.get(i + 1).is_some_and(|n| n.is_kw("TO")) => similar_to(toks, i, edits),
        "to_date" if call => parse_with_template(toks, i, "DATE", edits),
        "to_timestamp" if call => parse_with_template(toks, i, "TIMESTAMPTZ", edits),
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
        // jsonb is stored as DuckDB's JSON (its text, not PostgreSQL's binary form), and the
        // jsonb functions are the json ones; DuckDB's json_object and json_array take what
        // json_build_object and json_build_array take.
        "jsonb" if !call && !after_catalog_dot(toks, i) => replace_token(toks, i, "JSON", edits),
        // DuckDB's json_group_array is a macro, which takes no ORDER BY: the list it is built on.
        "json_agg" | "jsonb_agg" if call => {
            let close = matching(toks, i + 1)?;
            replace_token(toks, i, "to_json(list", edits)?;
            replace_token(toks, close, "))", edits)?;
            Some(i + 2)
        }
        _ if call && !after_catalog_dot(toks, i) && json_name(&name).is_some() => {
            replace_token(toks, i, json_name(&name)?, edits)
        }
        "current_schemas" if call => {
            edits.push(Edit {
                start: t.start,
                end: t.end,
                text: "duckmv.pg_current_schemas".into(),
            });
            Some(i + 2)
        }
        // PostgreSQL's merge_action() is DuckDB's bare merge_action.
        "merge_action" if call && toks.get(i + 2).is_some_and(|n| n.is_punct(")")) => {
            edits.push(Edit {
                start: t.start,
                end: toks[i + 2].end,
                text: "merge_action".into(),
            });
            Some(i + 3)
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

/// The function DuckDB (or duckmv's catalog) has for a PostgreSQL json or jsonb function.
fn json_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "json_build_object" | "jsonb_build_object" => "json_object",
        "json_build_array" | "jsonb_build_array" => "json_array",
        "to_jsonb" => "to_json",
        "jsonb_typeof" => "json_typeof",
        "jsonb_array_length" => "json_array_length",
        "jsonb_object_keys" => "json_object_keys",
        _ => return None,
    })
}

/// `x = ANY(ARRAY(SELECT …))`: PostgreSQL compares x with each row; DuckDB takes the ARRAY as
/// one list value and fails to cast x to a list (pgAdmin's role query). Written as `ANY(SELECT
/// …)`, which both read alike.
fn array_of_query(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let array = toks.get(i + 2).filter(|t| t.is_kw("ARRAY"))?;
    let open = i + 3;
    toks.get(open).filter(|t| t.is_punct("("))?;
    toks.get(open + 1)
        .filter(|t| t.is_kw("SELECT") || t.is_kw("WITH"))?;
    let close = matching(toks, open)?;
    edits.push(Edit {
        start: array.start,
        end: toks[open].end,
        text: String::new(),
    });
    replace_token(toks, close, "", edits)?;
    Some(open + 1)
}

/// `x SIMILAR TO 'a%'`: DuckDB reads the pattern as a regular expression (where `%` and `_` are
/// characters and `.` is any), PostgreSQL as SQL's: `%` any string, `_` any character, `.` and
/// the anchors themselves. A literal pattern is written as the regular expression it means; one
/// with an ESCAPE clause is left as it is.
fn similar_to(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let pattern = toks.get(i + 2).filter(|t| t.kind == Tok::Str)?;
    if toks.get(i + 3).is_some_and(|t| t.is_kw("ESCAPE")) || pattern.text.starts_with(['E', 'e']) {
        return None;
    }
    let mut regex = String::new();
    let text = unquote(&pattern.text);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => regex.push_str(".*"),
            '_' => regex.push('.'),
            '.' | '^' | '$' => {
                regex.push('\\');
                regex.push(c);
            }
            '\\' => {
                regex.push('\\');
                regex.push(chars.next()?);
            }
            c => regex.push(c),
        }
    }
    edits.push(Edit {
        start: pattern.start,
        end: pattern.end,
        text: format!("'{}'", regex.replace('\'', "''")),
    });
    Some(i + 3)
}

/// `to_date(s, 'DD/MM/YYYY')`, `to_timestamp(s, template)`: strptime of the template's patterns
/// as strftime's (`duckmv._pg_datetime_format`, which to_char uses), cast to `ty`. DuckDB has no
/// to_date, and its to_timestamp takes seconds only (kept for one argument). strptime wants a
/// constant format, which a macro's parameter is not, hence a rewrite.
fn parse_with_template(toks: &[Token], i: usize, ty: &str, edits: &mut Vec<Edit>) -> Option<usize> {
    let close = matching(toks, i + 1)?;
    let commas: Vec<usize> = outermost(toks, i + 2, close)?
        .into_iter()
        .filter(|j| toks[*j].is_punct(","))
        .collect();
    let [comma] = commas[..] else { return None };
    edits.push(Edit {
        start: toks[i].start,
        end: toks[i + 1].end,
        text: "CAST(strptime(".into(),
    });
    edits.push(Edit {
        start: toks[comma].end,
        end: toks[comma].end,
        text: " duckmv._pg_datetime_format(".into(),
    });
    replace_token(toks, close, &format!(")) AS {ty})"), edits)?;
    Some(i + 2)
}

/// `substring(s FROM 'pattern')`: PostgreSQL's regular-expression form
/// (pgAdmin reads reloptions with it), where DuckDB expects a position. It
/// gives the part matching the pattern's first parenthesized group, or the
/// whole match when it has none, or NULL.
fn regex_substring(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let close = matching(toks, i + 1)?;
    let from = outermost(toks, i + 2, close)?
        .into_iter()
        .rfind(|j| toks[*j].is_kw("FROM"))?;
    let pattern = toks.get(from + 1).filter(|p| p.kind == Tok::Str)?;
    if from + 2 != close {
        return None;
    }
    let macro_name = if unquote(&pattern.text).contains('(') {
        "duckmv._substring_group"
    } else {
        "duckmv._substring_match"
    };
    edits.push(Edit {
        start: toks[i].start,
        end: toks[i].end,
        text: macro_name.into(),
    });
    edits.push(Edit {
        start: toks[from].start,
        end: toks[from].end,
        text: ",".into(),
    });
    Some(i + 2)
}

/// A scalar function in a FROM list (Grafana: `FROM generate_series(…) i,
/// string_to_array(…) s`), which PostgreSQL reads as a one-row table whose
/// column is named like the table. DuckDB takes only table functions there,
/// so the call becomes a one-row subquery under the same name.
fn scalar_in_from(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    if i == 0 || !in_from_list(toks, i - 1) {
        return None;
    }
    let close = matching(toks, i + 1)?;
    let mut alias_at = close + 1;
    if toks.get(alias_at).is_some_and(|t| t.is_kw("AS")) {
        alias_at += 1;
    }
    let alias = toks.get(alias_at).and_then(|t| match t.kind {
        Tok::Ident => Some(t.text.clone()),
        Tok::Word if !crate::compat::ENDS_FROM_ITEM.contains(&t.text.as_str()) => {
            Some(t.text.to_lowercase())
        }
        _ => None,
    });
    let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let after = match &alias {
        // `f(…) s` -> `(SELECT f(…) AS "s") s`
        Some(a) => format!(" AS {})", quote(a)),
        // Unaliased, the table and its column take the function's name.
        None => {
            let n = quote(&toks[i].text.to_lowercase());
            format!(" AS {n}) {n}")
        }
    };
    wrap(toks, i, close, "(SELECT ", after, edits);
    Some(i + 2)
}

/// Puts `before` ahead of the call starting at `i` and `after` behind its `)` at `close`.
fn wrap(
    toks: &[Token],
    i: usize,
    close: usize,
    before: &str,
    after: String,
    edits: &mut Vec<Edit>,
) {
    edits.push(Edit {
        start: toks[i].start,
        end: toks[i].start,
        text: before.into(),
    });
    edits.push(Edit {
        start: toks[close].end,
        end: toks[close].end,
        text: after,
    });
}

/// `generate_series(…)` in a select list, where PostgreSQL returns one row per value; DuckDB's
/// scalar form returns one list, so the call is unnested. In a FROM list both read it as a
/// table function.
fn rows_in_select(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    if !in_select_list(toks, i) {
        return None;
    }
    let close = matching(toks, i + 1)?;
    wrap(toks, i, close, "unnest(", ")".into(), edits);
    Some(i + 2)
}

/// Whether token `i` is in a select list: the nearest clause keyword before it, skipping
/// parenthesised groups it is not inside, is SELECT.
fn in_select_list(toks: &[Token], i: usize) -> bool {
    let mut depth = 0usize;
    for t in toks[..i].iter().rev() {
        if t.is_punct(")") || t.is_punct("]") {
            depth += 1;
        } else if t.is_punct("(") || t.is_punct("[") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.kind == Tok::Word {
            match t.text.as_str() {
                "SELECT" | "DISTINCT" => return true,
                "FROM" | "JOIN" | "WHERE" | "ON" | "GROUP" | "ORDER" | "HAVING" | "VALUES"
                | "SET" | "RETURNING" | "USING" | "LATERAL" | "WINDOW" | "QUALIFY" | "LIMIT" => {
                    return false
                }
                _ => {}
            }
        }
    }
    false
}

/// Whether the token at `j` (a `,`, FROM or JOIN) opens an item of a FROM list.
fn in_from_list(toks: &[Token], j: usize) -> bool {
    let t = &toks[j];
    if t.is_kw("FROM") || t.is_kw("JOIN") {
        return true;
    }
    if !t.is_punct(",") {
        return false;
    }
    // The clause this comma belongs to: the nearest clause keyword at its depth.
    let mut depth = 0usize;
    for k in (0..j).rev() {
        let t = &toks[k];
        if t.is_punct(")") || t.is_punct("]") {
            depth += 1;
        } else if t.is_punct("(") || t.is_punct("[") {
            if depth == 0 {
                return false;
            }
            depth -= 1;
        } else if depth == 0 && t.kind == Tok::Word {
            match t.text.as_str() {
                "FROM" | "JOIN" => return true,
                "SELECT" | "WHERE" | "ON" | "GROUP" | "ORDER" | "HAVING" | "VALUES" | "SET"
                | "RETURNING" | "USING" => return false,
                _ => {}
            }
        }
    }
    false
}

/// The text of a 'string' literal.
fn unquote(s: &str) -> String {
    let s = s.strip_prefix(['E', 'e']).unwrap_or(s);
    s.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(s)
        .replace("''", "'")
}
