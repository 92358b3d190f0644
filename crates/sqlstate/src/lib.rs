//! The SQLSTATE codes duckmv reports, named by PostgreSQL's condition names
//! (Appendix A of its manual). Every layer says which condition it means by
//! name; only the wire layer turns one into the five characters clients read.

use std::fmt;

/// A PostgreSQL SQLSTATE code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SqlState(&'static str);

impl SqlState {
    /// The five-character code.
    pub const fn code(self) -> &'static str {
        self.0
    }

    pub const SUCCESSFUL_COMPLETION: SqlState = SqlState("00000");
    pub const CONNECTION_FAILURE: SqlState = SqlState("08006");
    pub const PROTOCOL_VIOLATION: SqlState = SqlState("08P01");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: SqlState = SqlState("2200H");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const CHARACTER_NOT_IN_REPERTOIRE: SqlState = SqlState("22021");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const BAD_COPY_FILE_FORMAT: SqlState = SqlState("22P04");
    pub const INTEGRITY_CONSTRAINT_VIOLATION: SqlState = SqlState("23000");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const FOREIGN_KEY_VIOLATION: SqlState = SqlState("23503");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const CHECK_VIOLATION: SqlState = SqlState("23514");
    pub const INVALID_TRANSACTION_STATE: SqlState = SqlState("25000");
    pub const ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25001");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const INVALID_SQL_STATEMENT_NAME: SqlState = SqlState("26000");
    pub const INVALID_AUTHORIZATION_SPECIFICATION: SqlState = SqlState("28000");
    pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = SqlState("2BP01");
    pub const INVALID_CURSOR_NAME: SqlState = SqlState("34000");
    pub const INVALID_SAVEPOINT_SPECIFICATION: SqlState = SqlState("3B001");
    pub const INVALID_SCHEMA_NAME: SqlState = SqlState("3F000");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const DEADLOCK_DETECTED: SqlState = SqlState("40P01");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState("42501");
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const GROUPING_ERROR: SqlState = SqlState("42803");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const DUPLICATE_SCHEMA: SqlState = SqlState("42P06");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    pub const STATEMENT_TOO_COMPLEX: SqlState = SqlState("54001");
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: SqlState = SqlState("55000");
    pub const CANT_CHANGE_RUNTIME_PARAM: SqlState = SqlState("55P02");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
}

/// Every code above, for the table's own test.
#[cfg(test)]
const ALL: &[SqlState] = &[
    SqlState::SUCCESSFUL_COMPLETION,
    SqlState::CONNECTION_FAILURE,
    SqlState::PROTOCOL_VIOLATION,
    SqlState::FEATURE_NOT_SUPPORTED,
    SqlState::CARDINALITY_VIOLATION,
    SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
    SqlState::INVALID_DATETIME_FORMAT,
    SqlState::DATETIME_FIELD_OVERFLOW,
    SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
    SqlState::DIVISION_BY_ZERO,
    SqlState::CHARACTER_NOT_IN_REPERTOIRE,
    SqlState::INVALID_PARAMETER_VALUE,
    SqlState::INVALID_TEXT_REPRESENTATION,
    SqlState::BAD_COPY_FILE_FORMAT,
    SqlState::INTEGRITY_CONSTRAINT_VIOLATION,
    SqlState::NOT_NULL_VIOLATION,
    SqlState::FOREIGN_KEY_VIOLATION,
    SqlState::UNIQUE_VIOLATION,
    SqlState::CHECK_VIOLATION,
    SqlState::INVALID_TRANSACTION_STATE,
    SqlState::ACTIVE_SQL_TRANSACTION,
    SqlState::NO_ACTIVE_SQL_TRANSACTION,
    SqlState::IN_FAILED_SQL_TRANSACTION,
    SqlState::INVALID_SQL_STATEMENT_NAME,
    SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
    SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
    SqlState::INVALID_CURSOR_NAME,
    SqlState::INVALID_SAVEPOINT_SPECIFICATION,
    SqlState::INVALID_SCHEMA_NAME,
    SqlState::SERIALIZATION_FAILURE,
    SqlState::DEADLOCK_DETECTED,
    SqlState::INSUFFICIENT_PRIVILEGE,
    SqlState::SYNTAX_ERROR,
    SqlState::AMBIGUOUS_COLUMN,
    SqlState::UNDEFINED_COLUMN,
    SqlState::UNDEFINED_OBJECT,
    SqlState::GROUPING_ERROR,
    SqlState::WRONG_OBJECT_TYPE,
    SqlState::UNDEFINED_FUNCTION,
    SqlState::UNDEFINED_TABLE,
    SqlState::DUPLICATE_SCHEMA,
    SqlState::DUPLICATE_TABLE,
    SqlState::OUT_OF_MEMORY,
    SqlState::STATEMENT_TOO_COMPLEX,
    SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
    SqlState::CANT_CHANGE_RUNTIME_PARAM,
    SqlState::QUERY_CANCELED,
    SqlState::IO_ERROR,
    SqlState::INTERNAL_ERROR,
];

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl From<SqlState> for String {
    fn from(s: SqlState) -> String {
        s.0.to_string()
    }
}

/// Tests and logs compare with the code a client sees.
impl PartialEq<&str> for SqlState {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::{SqlState, ALL};

    #[test]
    fn every_code_is_five_characters_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for s in ALL {
            let c = s.code();
            assert_eq!(c.len(), 5, "{c}");
            assert!(
                c.chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
                "{c}"
            );
            assert!(seen.insert(c), "{c} twice");
        }
        assert_eq!(SqlState::UNDEFINED_TABLE, "42P01");
    }

    /// The codes are named here and only here: a known code spelled as a string literal
    /// anywhere else in the server's source fails this test.
    #[test]
    fn no_other_file_spells_a_code() {
        // Read when the test runs: a test binary reused from a checkout elsewhere (one shared
        // target directory) would otherwise walk that checkout's sources.
        let own = std::env::var("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").into());
        let own = std::path::Path::new(&own);
        let workspace = own.join("../..");
        let mut offenders = Vec::new();
        // The server's sources and every crate's sources; this file is the one table.
        let mut dirs = vec![workspace.join("src"), workspace.join("crates")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if !path.ends_with("target") {
                        dirs.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "rs")
                    && path.canonicalize().unwrap()
                        != own.join("src/lib.rs").canonicalize().unwrap()
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for s in ALL {
                        if text.contains(&format!("\"{}\"", s.code())) {
                            offenders.push(format!("{} spells {}", path.display(), s.code()));
                        }
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
