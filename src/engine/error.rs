//! DuckDB errors, and the PostgreSQL SQLSTATE a client would get for the same
//! mistake.

use crate::sqlstate::SqlState;
use std::fmt;

/// An error reported by DuckDB (or by the engine wrapper around it).
#[derive(Debug, Clone)]
pub struct EngineError {
    /// DuckDB's message, e.g. `Catalog Error: Table with name t does not exist!`.
    pub message: String,
    /// `duckdb_error_type` when DuckDB reported one, else 0.
    pub kind: u32,
    /// A SQLSTATE fixed by the caller, overriding the derived one.
    pub state: Option<SqlState>,
}

impl EngineError {
    pub fn new(message: impl Into<String>, kind: u32) -> Self {
        Self {
            message: message.into(),
            kind,
            state: None,
        }
    }
    pub fn with_state(message: impl Into<String>, state: SqlState) -> Self {
        Self {
            message: message.into(),
            kind: 0,
            state: Some(state),
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::with_state(message, SqlState::INTERNAL_ERROR)
    }

    /// The SQLSTATE PostgreSQL would report for this error.
    pub fn sqlstate(&self) -> SqlState {
        self.state
            .unwrap_or_else(|| sqlstate_for(&self.message, self.kind))
    }

    /// The message without DuckDB's `X Error: ` prefix, as a client expects.
    pub fn client_message(&self) -> String {
        let m = self.message.trim();
        let m = match m.split_once(" Error: ") {
            Some((prefix, rest))
                if !prefix.contains(' ')
                    || prefix == "Out of Range"
                    || prefix == "Invalid Input"
                    || prefix == "Not implemented" =>
            {
                rest
            }
            _ => m,
        };
        // DuckDB names the `//` it divides integers with and a server-wide switch no client
        // may set; PostgreSQL says just this.
        if m.starts_with("Division by zero in expression") {
            return "division by zero".into();
        }
        m.trim().to_string()
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

/// Maps DuckDB's error class (from the message prefix, or the C API's
/// error type) and message to a SQLSTATE.
pub fn sqlstate_for(message: &str, kind: u32) -> SqlState {
    let lower = message.to_ascii_lowercase();
    let class = message.split_once(" Error:").map(|(c, _)| c).unwrap_or("");
    let has = |s: &str| lower.contains(s);
    if has("division by zero") || has("divide by zero") || kind == 6 {
        return SqlState::DIVISION_BY_ZERO;
    }
    // MERGE's cardinality violation: a target row matched by two source rows.
    if has("cannot affect the same target row") {
        return SqlState::CARDINALITY_VIOLATION;
    }
    // Raised by the body of an unpopulated materialized view.
    if has("has not been populated") {
        return SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE;
    }
    // A session tried to change a setting DuckDB holds only server-wide (see session/guard.rs).
    if has("can only be set globally")
        || has("cannot be set locally")
        || has("cannot be reset locally")
    {
        return SqlState::INSUFFICIENT_PRIVILEGE;
    }
    match class {
        "Parser" | "Syntax" => SqlState::SYNTAX_ERROR,
        "Catalog" => {
            if has("table with name") && has("does not exist")
                || has("view with name") && has("does not exist")
            {
                SqlState::UNDEFINED_TABLE
            } else if has("already exists") {
                if has("schema") {
                    SqlState::DUPLICATE_SCHEMA
                } else {
                    SqlState::DUPLICATE_TABLE
                }
            } else if has("function") && has("does not exist")
                || has("macro") && has("does not exist")
            {
                SqlState::UNDEFINED_FUNCTION
            } else if has("schema") && has("does not exist") {
                SqlState::INVALID_SCHEMA_NAME
            } else if has("type") && has("does not exist") {
                SqlState::UNDEFINED_OBJECT
            } else if has("does not exist") || has("not found") {
                SqlState::UNDEFINED_TABLE
            } else if has("depend") {
                SqlState::DEPENDENT_OBJECTS_STILL_EXIST
            } else {
                SqlState::UNDEFINED_OBJECT
            }
        }
        "Binder" => {
            if has("referenced column")
                || has("not found in from clause")
                || has("does not have a column")
                || has("column") && has("not found")
                || has("table") && has("does not have")
            {
                SqlState::UNDEFINED_COLUMN
            } else if has("no function matches")
                || has("cannot compare values")
                || has("no function")
            {
                SqlState::UNDEFINED_FUNCTION
            } else if has("group by") {
                SqlState::GROUPING_ERROR
            } else if has("ambiguous") {
                SqlState::AMBIGUOUS_COLUMN
            } else if has("already exists") {
                SqlState::DUPLICATE_TABLE
            } else {
                SqlState::SYNTAX_ERROR
            }
        }
        "Constraint" => {
            if has("not null") {
                SqlState::NOT_NULL_VIOLATION
            } else if has("duplicate key") || has("unique") || has("primary key") {
                SqlState::UNIQUE_VIOLATION
            } else if has("foreign key") {
                SqlState::FOREIGN_KEY_VIOLATION
            } else if has("check constraint") {
                SqlState::CHECK_VIOLATION
            } else {
                SqlState::INTEGRITY_CONSTRAINT_VIOLATION
            }
        }
        "Conversion" | "Invalid Input" if has("could not convert") || has("conversion") => {
            SqlState::INVALID_TEXT_REPRESENTATION
        }
        "Conversion" => SqlState::INVALID_TEXT_REPRESENTATION,
        "Out of Range" => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "TransactionContext" | "Transaction" => {
            if has("conflict") {
                SqlState::SERIALIZATION_FAILURE
            } else if has("aborted") {
                SqlState::IN_FAILED_SQL_TRANSACTION
            } else {
                SqlState::INVALID_TRANSACTION_STATE
            }
        }
        "INTERRUPT" | "Interrupt" => SqlState::QUERY_CANCELED,
        "Not implemented" | "Not Implemented" => SqlState::FEATURE_NOT_SUPPORTED,
        "Dependency" => SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
        "Permission" => SqlState::INSUFFICIENT_PRIVILEGE,
        "Out of Memory" => SqlState::OUT_OF_MEMORY,
        "IO" => SqlState::IO_ERROR,
        "Invalid Input" => SqlState::INVALID_PARAMETER_VALUE,
        "Sequence" => SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
        _ => match kind {
            1 => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            2 => SqlState::INVALID_TEXT_REPRESENTATION,
            10 => {
                if has("conflict") {
                    SqlState::SERIALIZATION_FAILURE
                } else {
                    SqlState::INVALID_TRANSACTION_STATE
                }
            }
            11 => SqlState::FEATURE_NOT_SUPPORTED,
            13 => SqlState::UNDEFINED_TABLE,
            14 | 22 => SqlState::SYNTAX_ERROR,
            18 => SqlState::INTEGRITY_CONSTRAINT_VIOLATION,
            24 => SqlState::SYNTAX_ERROR,
            29 => SqlState::QUERY_CANCELED,
            33 => SqlState::OUT_OF_MEMORY,
            34 => SqlState::INSUFFICIENT_PRIVILEGE,
            37 => SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
            _ => {
                if has("conflict") {
                    SqlState::SERIALIZATION_FAILURE
                } else if has("interrupted") {
                    SqlState::QUERY_CANCELED
                } else {
                    SqlState::INTERNAL_ERROR
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_common_errors() {
        assert_eq!(
            sqlstate_for("Parser Error: syntax error at or near \"selec\"", 0),
            SqlState::SYNTAX_ERROR
        );
        assert_eq!(
            sqlstate_for("Catalog Error: Table with name nope does not exist!", 0),
            SqlState::UNDEFINED_TABLE
        );
        assert_eq!(
            sqlstate_for("Catalog Error: Table with name t already exists!", 0),
            SqlState::DUPLICATE_TABLE
        );
        assert_eq!(
            sqlstate_for(
                "Binder Error: Referenced column \"zz\" not found in FROM clause!",
                0
            ),
            SqlState::UNDEFINED_COLUMN
        );
        assert_eq!(
            sqlstate_for(
                "Constraint Error: Duplicate key \"id: 1\" violates primary key constraint.",
                0
            ),
            SqlState::UNIQUE_VIOLATION
        );
        assert_eq!(
            sqlstate_for("Constraint Error: NOT NULL constraint failed: t.a", 0),
            SqlState::NOT_NULL_VIOLATION
        );
        assert_eq!(
            sqlstate_for("Out of Range Error: Division by zero!", 0),
            SqlState::DIVISION_BY_ZERO
        );
        assert_eq!(
            sqlstate_for("TransactionContext Error: Conflict on update!", 0),
            SqlState::SERIALIZATION_FAILURE
        );
        assert_eq!(
            sqlstate_for("INTERRUPT Error: Interrupted!", 0),
            SqlState::QUERY_CANCELED
        );
    }

    #[test]
    fn strips_prefix_for_clients() {
        let e = EngineError::new("Catalog Error: Table with name nope does not exist!", 0);
        assert_eq!(e.client_message(), "Table with name nope does not exist!");
    }
}
