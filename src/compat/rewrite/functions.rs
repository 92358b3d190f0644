//! Functions and keywords PostgreSQL answers differently from DuckDB.

use super::{after_catalog_dot, matching, Edit};
use crate::sql::lex::{Tok, Token};

/// Function-like names PostgreSQL answers differently from DuckDB.
pub(super) fn function(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let t = &toks[i];
    let call = toks.get(i + 1).is_some_and(|n| n.is_punct("("));
    let name = t.text.to_ascii_lowercase();
    match name.as_str() {
        "format" if call => super::format::format_call(toks, i, edits),
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
