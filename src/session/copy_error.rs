//! What a failed COPY FROM STDIN tells the client: PostgreSQL's messages for the errors a
//! client's data causes, and never the server's spool file.
//!
//! DuckDB's CSV reader answers a bad row with a page of diagnostics (the sniffer's search
//! space, every reader option, "possible fixes") that names the spool file the server wrote the
//! client's data to. PostgreSQL answers `extra data after last expected column` (22P04) or
//! `invalid input syntax for type integer: "abc"` (22P02) with the line in CONTEXT; those are
//! the forms clients and users know.

use std::path::Path;

use crate::engine::EngineError;
use crate::sqlstate::SqlState;

use super::reply::SqlError;

/// PostgreSQL's message for a row of `found` fields where one per column of `names` was wanted,
/// or None when the count is right.
pub fn field_count(found: usize, names: &[String], line: u64, table: &str) -> Option<SqlError> {
    let message = match names.get(found) {
        _ if found > names.len() => "extra data after last expected column".to_string(),
        Some(missing) => format!("missing data for column \"{missing}\""),
        None => return None,
    };
    let mut e = SqlError::new(SqlState::BAD_COPY_FILE_FORMAT, message);
    e.detail = Some(format!("COPY {table}, line {line}"));
    Some(e)
}

/// The error of DuckDB's load of the spool at `spool` into `table`'s columns `names`, as
/// PostgreSQL would word it.
pub fn load(e: EngineError, spool: &Path, names: &[String], table: &str) -> SqlError {
    let full = e.client_message();
    if let Some(mapped) = conversion(&full, table).or_else(|| sniffed_width(&full, names, table)) {
        return mapped;
    }
    let mut err = SqlError::from(e);
    let path = spool.display().to_string();
    err.message = err.message.replace(&path, "STDIN");
    // DuckDB's diagnostics after the first line name the file and the reader's options.
    err.detail = err
        .detail
        .as_deref()
        .and_then(|d| d.lines().next())
        .filter(|l| !l.contains(&path))
        .map(str::to_string);
    err
}

/// `CSV Error on Line: 2 … Could not convert string "abc" to 'INTEGER'`: 22P02.
fn conversion(msg: &str, table: &str) -> Option<SqlError> {
    let line = between(msg, "CSV Error on Line: ", "\n")?.trim();
    let value = between(msg, "Could not convert string \"", "\" to '")?;
    let ty = between(msg, &format!("\"{value}\" to '"), "'")?;
    let column = between(msg, "Error when converting column \"", "\"");
    let mut e = SqlError::new(
        SqlState::INVALID_TEXT_REPRESENTATION,
        format!(
            "invalid input syntax for type {}: \"{value}\"",
            ty.to_ascii_lowercase()
        ),
    );
    e.detail = Some(match column {
        Some(c) => format!("COPY {table}, line {line}, column {c}: \"{value}\""),
        None => format!("COPY {table}, line {line}"),
    });
    Some(e)
}

/// The sniffer's "they contain: 2 columns … found by the sniffer: 3": a row of another width.
fn sniffed_width(msg: &str, names: &[String], table: &str) -> Option<SqlError> {
    let found = between(msg, "found by the sniffer: ", ".")?.parse().ok()?;
    let mut e = field_count(found, names, 1, table)?;
    e.detail = Some(format!("COPY {table}"));
    Some(e)
}

/// The text between the first `start` and the next `end` after it.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let len = s[from..].find(end)?;
    Some(&s[from..from + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_counts_are_worded_as_postgresql_words_them() {
        let names = ["a".to_string(), "b".to_string()];
        let e = field_count(3, &names, 4, "t").unwrap();
        assert_eq!(e.code, SqlState::BAD_COPY_FILE_FORMAT);
        assert_eq!(e.message, "extra data after last expected column");
        assert_eq!(e.detail.as_deref(), Some("COPY t, line 4"));
        assert_eq!(
            field_count(1, &names, 1, "t").unwrap().message,
            "missing data for column \"b\""
        );
        assert!(field_count(2, &names, 1, "t").is_none());
    }

    #[test]
    fn a_conversion_error_names_the_value_not_the_file() {
        let msg =
            "CSV Error on Line: 2\nOriginal Line: abc,3\nError when converting column \"a\". \
                   Could not convert string \"abc\" to 'INTEGER'\n\n  file = /tmp/s/copy-1.csv";
        let e = conversion(msg, "c2").unwrap();
        assert_eq!(e.code, SqlState::INVALID_TEXT_REPRESENTATION);
        assert_eq!(e.message, "invalid input syntax for type integer: \"abc\"");
        assert_eq!(
            e.detail.as_deref(),
            Some("COPY c2, line 2, column a: \"abc\"")
        );
    }

    #[test]
    fn a_sniffed_width_is_extra_or_missing_data() {
        let msg = "Error when sniffing file \"/tmp/s/copy-1.csv\".\n* Columns are set as: \
                   \"columns = {…}\", and they contain: 2 columns. It does not match the number \
                   of columns found by the sniffer: 3. Verify";
        let e = sniffed_width(msg, &["a".into(), "b".into()], "c2").unwrap();
        assert_eq!(e.message, "extra data after last expected column");
        assert!(!format!("{e:?}").contains("/tmp/s"));
    }
}
