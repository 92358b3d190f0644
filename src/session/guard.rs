//! What a client may run, checked on the statement DuckDB prepared (its statement kind), not on
//! its first words. PostgreSQL's rules are the model:
//!
//! - **duckmv's own objects** — schema `_duckmv` (catalog, storage, change tables), the capture
//!   triggers (`_duckmv_…`), the compatibility schema `duckmv` — cannot be changed by clients:
//!   any statement other than a query that names one is refused (42501), however it is reached
//!   (`PREPARE … AS INSERT INTO _duckmv.…`, a data-modifying CTE, `DROP TRIGGER`), and the search
//!   path or default schema cannot be pointed at them (`USE _duckmv`).
//! - **Settings** a session changes apply to that session only: `SET`, `RESET` and `PRAGMA x = …`
//!   run in DuckDB's session scope; a setting DuckDB can only hold server-wide (`threads`,
//!   `memory_limit`, `lock_configuration`, …), `SET GLOBAL`, and settings naming files or
//!   directories need a superuser.
//! - **Server-wide operations** — ATTACH/DETACH, INSTALL/LOAD, CHECKPOINT, EXPORT/IMPORT — need a
//!   superuser.
//! - **Server files**: off for everyone unless the server runs with `--allow-file-access`
//!   (DuckDB's `enable_external_access` is database-wide); then only superusers may name file
//!   readers and writers (`read_csv`, `COPY … FROM 'file'`, `FROM 'file.csv'`, …).

use super::reply::SqlError;
use crate::engine::StatementKind;
use crate::sql::lex::{Tok, Token};
use crate::sql::Lexed;
use crate::sqlstate::SqlState;

/// What the server allows, from its flags.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// `--allow-file-access`: DuckDB may touch server files (superusers only).
    pub file_access: bool,
    /// `--superuser NAME`: users with superuser rights.
    pub superusers: std::collections::HashSet<String>,
}

fn denied(what: impl std::fmt::Display) -> SqlError {
    SqlError::new(
        SqlState::INSUFFICIENT_PRIVILEGE,
        format!("permission denied: {what}"),
    )
}

fn internal() -> SqlError {
    let mut e = denied("duckmv's internal objects (schemas _duckmv and duckmv, _duckmv_ triggers) cannot be changed");
    e.hint = Some("Use CREATE/REFRESH/DROP MATERIALIZED VIEW; read duckmv.views.".into());
    e
}

/// Whether a name token names one of duckmv's objects.
fn is_internal(toks: &[Token], i: usize) -> bool {
    let t = &toks[i];
    if !matches!(t.kind, Tok::Word | Tok::Ident) {
        return false;
    }
    let n = t.text.to_ascii_lowercase();
    let qualifier = toks.get(i + 1).is_some_and(|d| d.is_punct("."));
    n == "_duckmv" || n.starts_with("_duckmv_") || (n == "duckmv" && qualifier)
}

/// Words that start statements only a superuser may run.
const SUPERUSER_STATEMENTS: &[&str] = &[
    "ATTACH",
    "DETACH",
    "INSTALL",
    "LOAD",
    "FORCE",
    "CHECKPOINT",
    "EXPORT",
    "IMPORT",
    "UPDATE_EXTENSIONS",
];

/// File readers and writers DuckDB has (table functions and COPY targets).
const FILE_FUNCTIONS: &[&str] = &[
    "read_csv",
    "read_csv_auto",
    "read_json",
    "read_json_auto",
    "read_json_objects",
    "read_json_objects_auto",
    "read_ndjson",
    "read_ndjson_auto",
    "read_ndjson_objects",
    "read_parquet",
    "parquet_scan",
    "parquet_metadata",
    "parquet_schema",
    "parquet_file_metadata",
    "parquet_kv_metadata",
    "read_text",
    "read_blob",
    "glob",
    "sniff_csv",
    "read_xlsx",
    "read_duckdb",
    "iceberg_scan",
    "delta_scan",
];

/// Checks a client's statement once DuckDB has prepared it (`kind`). `superuser`: the session's
/// user is one. Returns the statement to run instead, when a setting must be scoped to the
/// session.
pub fn check(
    s: &Lexed,
    kind: StatementKind,
    superuser: bool,
    policy: &Policy,
) -> Result<Option<String>, SqlError> {
    let (sql, toks) = (s.text(), s.tokens());
    let first = toks
        .iter()
        .find(|t| t.kind == Tok::Word)
        .map(|t| t.text.as_str())
        .unwrap_or("");
    let reads_only = matches!(kind, StatementKind::Select | StatementKind::Explain)
        && !toks.iter().any(|t| {
            t.is_kw("INSERT") || t.is_kw("UPDATE") || t.is_kw("DELETE") || t.is_kw("MERGE")
        });
    if !reads_only && (0..toks.len()).any(|i| is_internal(toks, i)) {
        return Err(internal());
    }
    // U&"…" names could spell an internal name in escapes.
    if !reads_only
        && sql.contains("&\"")
        && toks
            .windows(2)
            .any(|w| w[0].is_kw("U") && w[1].is_punct("&"))
    {
        return Err(denied(
            "Unicode-escaped identifiers in statements that change data or objects",
        ));
    }
    if !superuser && SUPERUSER_STATEMENTS.contains(&first) {
        return Err(denied(format!(
            "{first} is a server-wide operation that needs a superuser"
        )));
    }
    if !superuser && policy.file_access && names_files(toks, kind) {
        return Err(denied("access to server files needs a superuser"));
    }
    if kind == StatementKind::Set {
        return super::guard_settings::scope(sql, toks, first, superuser);
    }
    Ok(None)
}

/// Whether a statement reads or writes server files: a file function, `COPY … FROM/TO 'path'`,
/// or a string where a table belongs (`FROM 'data.csv'`).
fn names_files(toks: &[Token], kind: StatementKind) -> bool {
    if kind == StatementKind::Copy {
        return true;
    }
    toks.iter().enumerate().any(|(i, t)| {
        let called = toks.get(i + 1).is_some_and(|n| n.is_punct("("));
        (t.kind == Tok::Word
            && called
            && FILE_FUNCTIONS.contains(&t.text.to_ascii_lowercase().as_str()))
            || (t.kind == Tok::Str
                && i > 0
                && (toks[i - 1].is_kw("FROM")
                    || toks[i - 1].is_kw("JOIN")
                    || toks[i - 1].is_punct(",")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        sql: &str,
        kind: StatementKind,
        su: bool,
        files: bool,
    ) -> Result<Option<String>, SqlState> {
        let policy = Policy {
            file_access: files,
            ..Default::default()
        };
        check(&Lexed::new(sql), kind, su, &policy).map_err(|e| e.code)
    }

    #[test]
    fn internal_objects_cannot_be_changed_however_named() {
        use StatementKind::*;
        for (sql, kind) in [
            ("INSERT INTO _duckmv.d_1_src VALUES (1)", Insert),
            ("PREPARE p AS INSERT INTO _duckmv.d_1_src VALUES (1)", Other),
            ("DROP TRIGGER _duckmv_3_0_ins ON src", Drop),
            ("DROP SCHEMA \"_DUCKMV\" CASCADE", Drop),
            ("CREATE OR REPLACE VIEW duckmv.views AS SELECT 1", Create),
            (
                "WITH x AS (DELETE FROM _duckmv.views RETURNING *) SELECT * FROM x",
                Select,
            ),
            ("USE _duckmv", Set),
        ] {
            assert_eq!(
                run(sql, kind, true, false),
                Err(SqlState::INSUFFICIENT_PRIVILEGE),
                "{sql}"
            );
        }
        assert_eq!(
            run(
                "SELECT * FROM duckmv.views",
                StatementKind::Select,
                false,
                false
            ),
            Ok(None)
        );
        assert_eq!(
            run(
                "SELECT * FROM _duckmv.views",
                StatementKind::Select,
                false,
                false
            ),
            Ok(None)
        );
    }

    #[test]
    fn server_wide_operations_need_a_superuser() {
        for sql in [
            "ATTACH '/tmp/x.duckdb'",
            "CHECKPOINT",
            "LOAD httpfs",
            "EXPORT DATABASE '/tmp/x'",
        ] {
            assert_eq!(
                run(sql, StatementKind::Other, false, false),
                Err(SqlState::INSUFFICIENT_PRIVILEGE),
                "{sql}"
            );
            assert_eq!(
                run(sql, StatementKind::Other, true, false),
                Ok(None),
                "{sql}"
            );
        }
    }

    #[test]
    fn files_need_a_superuser_when_the_server_allows_them() {
        use StatementKind::*;
        for (sql, kind) in [
            ("SELECT * FROM read_csv('/etc/passwd')", Select),
            ("SELECT * FROM '/etc/passwd'", Select),
            ("COPY t FROM '/etc/passwd'", Copy),
            ("SELECT * FROM glob('/etc/*')", Select),
        ] {
            assert_eq!(
                run(sql, kind, false, true),
                Err(SqlState::INSUFFICIENT_PRIVILEGE),
                "{sql}"
            );
            assert_eq!(run(sql, kind, true, true), Ok(None), "{sql}");
        }
        assert_eq!(
            run(
                "SELECT 'a' FROM t, 'x'",
                StatementKind::Select,
                false,
                false
            ),
            Ok(None)
        );
    }
}
