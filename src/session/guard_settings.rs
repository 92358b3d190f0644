//! DuckDB settings a client changes apply to its own session only.
//!
//! DuckDB's plain `SET x = v` (and `PRAGMA x = v`, `RESET x`) changes a setting for every
//! connection when the setting's default scope is global — one client turning `threads` or
//! `default_order` for all. An ordinary user's statement is therefore re-scoped to `SESSION`;
//! DuckDB then refuses the settings it can only hold server-wide, which the engine reports as
//! 42501, as PostgreSQL does for parameters a user may not set. `SET GLOBAL` and settings that
//! name files or directories need a superuser; superusers' statements run as written.

use super::reply::SqlError;
use crate::sql::lex::{Tok, Token};
use crate::sqlstate::SqlState;

/// Settings that point DuckDB at files, directories or extension sources.
fn names_files(setting: &str) -> bool {
    let s = setting.to_ascii_lowercase();
    s != "search_path"
        && [
            "directory",
            "directories",
            "path",
            "output",
            "repository",
            "file",
            "secret",
        ]
        .iter()
        .any(|w| s.contains(w))
        || matches!(
            s.as_str(),
            "enable_external_access"
                | "lock_configuration"
                | "allow_unsigned_extensions"
                | "allow_community_extensions"
                | "autoinstall_known_extensions"
                | "autoload_known_extensions"
                | "enable_logging"
                | "logging_storage"
        )
}

/// For a statement DuckDB classed as SET: None to run it as written, or the session-scoped
/// statement to run instead.
pub fn scope(
    sql: &str,
    toks: &[Token],
    first: &str,
    superuser: bool,
) -> Result<Option<String>, SqlError> {
    let mut i = toks.iter().position(|t| t.kind == Tok::Word).unwrap_or(0) + 1;
    let word = |i: usize| {
        toks.get(i)
            .map(|t| t.text.to_ascii_uppercase())
            .unwrap_or_default()
    };
    if first == "USE" {
        // USE names a catalog or schema (internal ones were refused already).
        return Ok(None);
    }
    let mut global = false;
    match word(i).as_str() {
        "GLOBAL" => {
            global = true;
            i += 1;
        }
        "SESSION" | "LOCAL" => i += 1,
        // Per-connection variables (SET VARIABLE) belong to the session already.
        "VARIABLE" => return Ok(None),
        _ => {}
    }
    let Some(name_tok) = toks
        .get(i)
        .filter(|t| matches!(t.kind, Tok::Word | Tok::Ident))
    else {
        return Ok(None);
    };
    let name = name_tok.text.to_ascii_lowercase();
    if matches!(name.as_str(), "schema" | "search_path") && names_internal_schema(sql, toks, i) {
        return Err(denied(
            &name,
            "it would point unqualified names at duckmv's internal objects",
        ));
    }
    if name == "integer_division" {
        // Views refresh in whichever session asks; they must all divide as PostgreSQL does.
        let mut e = SqlError::new(
            SqlState::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed"),
        );
        e.detail = Some("duckmv divides integers as PostgreSQL does in every session.".into());
        return Err(e);
    }
    if superuser {
        return Ok(None);
    }
    if global {
        return Err(denied(&name, "SET GLOBAL changes every session's setting"));
    }
    if names_files(&name) {
        return Err(denied(&name, "it names server files or extension sources"));
    }
    Ok(Some(match first {
        "RESET" => format!("RESET SESSION {}", quote(&name)),
        _ => {
            // SET/PRAGMA name {=|TO} value…: the value's text as written.
            let value_at = match toks.get(i + 1) {
                Some(t) if t.is_punct("=") || t.is_kw("TO") => i + 2,
                _ => i + 1,
            };
            if value_at >= toks.len() {
                return Ok(None);
            }
            let value = sql[toks[value_at].start..].trim().trim_end_matches(';');
            format!("SET SESSION {} = {value}", quote(&name))
        }
    }))
}

/// Whether the value after the setting name at `i` names `_duckmv`, or puts `duckmv` first.
fn names_internal_schema(sql: &str, toks: &[Token], i: usize) -> bool {
    let Some(start) = toks.get(i + 1).map(|t| t.start) else {
        return false;
    };
    let value = sql[start..].to_ascii_lowercase();
    let value = value.trim_start_matches(|c: char| c == '=' || c.is_whitespace());
    let value = value
        .strip_prefix("to")
        .map(str::trim_start)
        .unwrap_or(value);
    let first = value
        .trim_start_matches(['\'', '"'])
        .split([',', '\'', '"', ' '])
        .next()
        .unwrap_or("");
    value.contains("_duckmv") || first == "duckmv"
}

fn quote(name: &str) -> String {
    crate::sql::quote_ident(name)
}

fn denied(name: &str, why: &str) -> SqlError {
    let mut e = SqlError::new(
        SqlState::INSUFFICIENT_PRIVILEGE,
        format!("permission denied to set parameter \"{name}\""),
    );
    e.detail = Some(format!("Only a superuser may set it: {why}."));
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::lex::tokenize;

    fn scoped(sql: &str, su: bool) -> Result<Option<String>, SqlState> {
        let toks = tokenize(sql);
        let first = toks[0].text.clone();
        scope(sql, &toks, &first, su).map_err(|e| e.code)
    }

    #[test]
    fn ordinary_users_set_for_their_session_only() {
        assert_eq!(
            scoped("SET default_null_order = 'nulls_first'", false),
            Ok(Some(
                "SET SESSION \"default_null_order\" = 'nulls_first'".into()
            ))
        );
        assert_eq!(
            scoped("PRAGMA threads = 1", false),
            Ok(Some("SET SESSION \"threads\" = 1".into()))
        );
        assert_eq!(
            scoped("RESET memory_limit", false),
            Ok(Some("RESET SESSION \"memory_limit\"".into()))
        );
        assert_eq!(
            scoped("SET GLOBAL threads = 1", false),
            Err(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        assert_eq!(
            scoped("SET temp_directory = '/tmp/x'", false),
            Err(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        assert_eq!(
            scoped("SET lock_configuration = true", false),
            Err(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        assert_eq!(scoped("SET VARIABLE x = 1", false), Ok(None));
        assert_eq!(scoped("SET GLOBAL threads = 1", true), Ok(None));
        assert_eq!(
            scoped("SET schema = '_duckmv'", true),
            Err(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        assert_eq!(
            scoped("SET search_path = 'duckmv,main'", false),
            Err(SqlState::INSUFFICIENT_PRIVILEGE)
        );
        assert_eq!(
            scoped("SET search_path = 'main,duckmv'", false),
            Ok(Some("SET SESSION \"search_path\" = 'main,duckmv'".into()))
        );
    }
}
