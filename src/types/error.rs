//! The error of the types layer: a value that cannot be encoded or a parameter that cannot be
//! decoded. Every variant maps to the SQLSTATE PostgreSQL would report for the same problem, so
//! the wire layer can forward it unchanged.

use crate::sqlstate::SqlState;
/// A value that could not be encoded, or a Bind parameter that could not be decoded.
/// Messages name the type and the offending value, in PostgreSQL's wording where one exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// Text that does not parse as the type (22P02).
    #[error("invalid input syntax for type {type_name}: \"{value}\"")]
    InvalidText { type_name: String, value: String },
    /// Date/time text that does not parse (22007), as PostgreSQL reports it.
    #[error("invalid input syntax for type {type_name}: \"{value}\"")]
    InvalidDatetime { type_name: String, value: String },
    /// A date/time field outside its range, e.g. month 13 (22008).
    #[error("date/time field value out of range: \"{value}\"")]
    DatetimeOverflow { type_name: String, value: String },
    /// A well-formed value that does not fit the type (22003).
    #[error("value \"{value}\" is out of range for type {type_name}")]
    OutOfRange { type_name: String, value: String },
    /// Binary data of the wrong length or shape (08P01).
    #[error("incorrect binary data format for type {type_name}: {detail}")]
    BadBinary { type_name: String, detail: String },
    /// Bytes that are not UTF-8 where text is required (22021).
    #[error("invalid byte sequence for encoding \"UTF8\" in a value of type {type_name}")]
    InvalidUtf8 { type_name: String },
    /// A type or representation this server does not handle (0A000).
    #[error("{0}")]
    Unsupported(String),
    /// The caller broke this module's contract, e.g. column formats that do not match the
    /// batch (XX000).
    #[error("internal error: {0}")]
    Internal(String),
}

impl TypeError {
    /// The SQLSTATE code PostgreSQL uses for this class of error.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            TypeError::InvalidText { .. } => SqlState::INVALID_TEXT_REPRESENTATION,
            TypeError::InvalidDatetime { .. } => SqlState::INVALID_DATETIME_FORMAT,
            TypeError::DatetimeOverflow { .. } => SqlState::DATETIME_FIELD_OVERFLOW,
            TypeError::OutOfRange { .. } => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            TypeError::BadBinary { .. } => SqlState::PROTOCOL_VIOLATION,
            TypeError::InvalidUtf8 { .. } => SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            TypeError::Unsupported(_) => SqlState::FEATURE_NOT_SUPPORTED,
            TypeError::Internal(_) => SqlState::INTERNAL_ERROR,
        }
    }

    pub(crate) fn invalid(type_name: &str, value: &str) -> Self {
        TypeError::InvalidText {
            type_name: type_name.to_string(),
            value: truncate(value),
        }
    }

    pub(crate) fn invalid_datetime(type_name: &str, value: &str) -> Self {
        TypeError::InvalidDatetime {
            type_name: type_name.to_string(),
            value: truncate(value),
        }
    }

    pub(crate) fn datetime_overflow(type_name: &str, value: &str) -> Self {
        TypeError::DatetimeOverflow {
            type_name: type_name.to_string(),
            value: truncate(value),
        }
    }

    pub(crate) fn out_of_range(type_name: &str, value: impl std::fmt::Display) -> Self {
        TypeError::OutOfRange {
            type_name: type_name.to_string(),
            value: truncate(&value.to_string()),
        }
    }

    pub(crate) fn bad_binary(type_name: &str, detail: impl Into<String>) -> Self {
        TypeError::BadBinary {
            type_name: type_name.to_string(),
            detail: detail.into(),
        }
    }
}

/// Error messages quote the bad value; a multi-megabyte parameter should not end up in a log line.
fn truncate(value: &str) -> String {
    const MAX: usize = 200;
    if value.len() <= MAX {
        return value.to_string();
    }
    let mut end = MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &value[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_match_postgres() {
        assert_eq!(
            TypeError::invalid("integer", "x").sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(
            TypeError::out_of_range("integer", "9e99").sqlstate(),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(
            TypeError::bad_binary("int4", "3 bytes").sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            TypeError::Unsupported("x".into()).sqlstate(),
            SqlState::FEATURE_NOT_SUPPORTED
        );
        assert_eq!(
            TypeError::invalid_datetime("date", "x").sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
        assert_eq!(
            TypeError::datetime_overflow("date", "x").sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
    }

    #[test]
    fn messages_name_type_and_value() {
        let e = TypeError::invalid("integer", "abc");
        assert_eq!(
            e.to_string(),
            "invalid input syntax for type integer: \"abc\""
        );
        let e = TypeError::out_of_range("smallint", 70000);
        assert_eq!(
            e.to_string(),
            "value \"70000\" is out of range for type smallint"
        );
    }

    #[test]
    fn long_values_are_truncated_on_char_boundary() {
        let long = "é".repeat(300);
        let e = TypeError::invalid("integer", &long);
        assert!(e.to_string().len() < 260);
        assert!(e.to_string().ends_with("...\""));
    }
}
