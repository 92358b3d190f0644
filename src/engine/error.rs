//! DuckDB errors, and the PostgreSQL SQLSTATE a client would get for the same
//! mistake.

use std::fmt;

/// An error reported by DuckDB (or by the engine wrapper around it).
#[derive(Debug, Clone)]
pub struct EngineError {
    /// DuckDB's message, e.g. `Catalog Error: Table with name t does not exist!`.
    pub message: String,
    /// `duckdb_error_type` when DuckDB reported one, else 0.
    pub kind: u32,
    /// A SQLSTATE fixed by the caller, overriding the derived one.
    pub state: Option<&'static str>,
}

impl EngineError {
    pub fn new(message: impl Into<String>, kind: u32) -> Self {
        Self {
            message: message.into(),
            kind,
            state: None,
        }
    }
    pub fn with_state(message: impl Into<String>, state: &'static str) -> Self {
        Self {
            message: message.into(),
            kind: 0,
            state: Some(state),
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::with_state(message, "XX000")
    }

    /// The SQLSTATE PostgreSQL would report for this error.
    pub fn sqlstate(&self) -> &'static str {
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
pub fn sqlstate_for(message: &str, kind: u32) -> &'static str {
    let lower = message.to_ascii_lowercase();
    let class = message.split_once(" Error:").map(|(c, _)| c).unwrap_or("");
    let has = |s: &str| lower.contains(s);
    if has("division by zero") || has("divide by zero") || kind == 6 {
        return "22012";
    }
    // MERGE's cardinality violation: a target row matched by two source rows.
    if has("cannot affect the same target row") {
        return "21000";
    }
    // Raised by the body of an unpopulated materialized view.
    if has("has not been populated") {
        return "55000";
    }
    // A session tried to change a setting DuckDB holds only server-wide (see session/guard.rs).
    if has("can only be set globally")
        || has("cannot be set locally")
        || has("cannot be reset locally")
    {
        return "42501";
    }
    match class {
        "Parser" | "Syntax" => "42601",
        "Catalog" => {
            if has("table with name") && has("does not exist")
                || has("view with name") && has("does not exist")
            {
                "42P01"
            } else if has("already exists") {
                if has("schema") {
                    "42P06"
                } else {
                    "42P07"
                }
            } else if has("function") && has("does not exist")
                || has("macro") && has("does not exist")
            {
                "42883"
            } else if has("schema") && has("does not exist") {
                "3F000"
            } else if has("type") && has("does not exist") {
                "42704"
            } else if has("does not exist") || has("not found") {
                "42P01"
            } else if has("depend") {
                "2BP01"
            } else {
                "42704"
            }
        }
        "Binder" => {
            if has("referenced column")
                || has("not found in from clause")
                || has("does not have a column")
                || has("column") && has("not found")
                || has("table") && has("does not have")
            {
                "42703"
            } else if has("no function matches")
                || has("cannot compare values")
                || has("no function")
            {
                "42883"
            } else if has("group by") {
                "42803"
            } else if has("ambiguous") {
                "42702"
            } else if has("already exists") {
                "42P07"
            } else {
                "42601"
            }
        }
        "Constraint" => {
            if has("not null") {
                "23502"
            } else if has("duplicate key") || has("unique") || has("primary key") {
                "23505"
            } else if has("foreign key") {
                "23503"
            } else if has("check constraint") {
                "23514"
            } else {
                "23000"
            }
        }
        "Conversion" | "Invalid Input" if has("could not convert") || has("conversion") => "22P02",
        "Conversion" => "22P02",
        "Out of Range" => "22003",
        "TransactionContext" | "Transaction" => {
            if has("conflict") {
                "40001"
            } else if has("aborted") {
                "25P02"
            } else {
                "25000"
            }
        }
        "INTERRUPT" | "Interrupt" => "57014",
        "Not implemented" | "Not Implemented" => "0A000",
        "Dependency" => "2BP01",
        "Permission" => "42501",
        "Out of Memory" => "53200",
        "IO" => "58030",
        "Invalid Input" => "22023",
        "Sequence" => "2200H",
        _ => match kind {
            1 => "22003",
            2 => "22P02",
            10 => {
                if has("conflict") {
                    "40001"
                } else {
                    "25000"
                }
            }
            11 => "0A000",
            13 => "42P01",
            14 | 22 => "42601",
            18 => "23000",
            24 => "42601",
            29 => "57014",
            33 => "53200",
            34 => "42501",
            37 => "2BP01",
            _ => {
                if has("conflict") {
                    "40001"
                } else if has("interrupted") {
                    "57014"
                } else {
                    "XX000"
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
            "42601"
        );
        assert_eq!(
            sqlstate_for("Catalog Error: Table with name nope does not exist!", 0),
            "42P01"
        );
        assert_eq!(
            sqlstate_for("Catalog Error: Table with name t already exists!", 0),
            "42P07"
        );
        assert_eq!(
            sqlstate_for(
                "Binder Error: Referenced column \"zz\" not found in FROM clause!",
                0
            ),
            "42703"
        );
        assert_eq!(
            sqlstate_for(
                "Constraint Error: Duplicate key \"id: 1\" violates primary key constraint.",
                0
            ),
            "23505"
        );
        assert_eq!(
            sqlstate_for("Constraint Error: NOT NULL constraint failed: t.a", 0),
            "23502"
        );
        assert_eq!(
            sqlstate_for("Out of Range Error: Division by zero!", 0),
            "22012"
        );
        assert_eq!(
            sqlstate_for("TransactionContext Error: Conflict on update!", 0),
            "40001"
        );
        assert_eq!(sqlstate_for("INTERRUPT Error: Interrupted!", 0), "57014");
    }

    #[test]
    fn strips_prefix_for_clients() {
        let e = EngineError::new("Catalog Error: Table with name nope does not exist!", 0);
        assert_eq!(e.client_message(), "Table with name nope does not exist!");
    }
}
