//! The IVM layer's error type and its mapping to PostgreSQL SQLSTATE codes.

use super::DbError;
use duckmv_sqlstate::SqlState;

/// Everything that can go wrong while creating, refreshing or dropping a materialized view.
#[derive(Debug, thiserror::Error)]
pub enum IvmError {
    /// A relation with the requested name already exists (42P07).
    #[error("relation \"{0}\" already exists")]
    AlreadyExists(String),
    /// The named materialized view does not exist (42P01).
    #[error("materialized view \"{0}\" does not exist")]
    NoSuchView(String),
    /// The view has not been populated yet (55000).
    #[error("materialized view \"{0}\" has not been populated")]
    NotPopulated(String),
    /// Other objects depend on the object being dropped (2BP01).
    #[error("cannot drop {object} because other objects depend on it: {dependents}")]
    Dependents { object: String, dependents: String },
    /// An ALTER TABLE would leave a view that reads the table without its columns (2BP01).
    #[error("cannot alter table {table} because materialized view {view} depends on it: {reason}")]
    AlterBlocked {
        table: String,
        view: String,
        reason: String,
    },
    /// A feature the engine does not support at all (0A000).
    #[error("{0}")]
    Unsupported(String),
    /// The definition is not valid SQL (42601).
    #[error("{0}")]
    Syntax(String),
    /// A setting got a value it does not take (22023).
    #[error("{0}")]
    InvalidValue(String),
    /// The engine's own catalog is inconsistent (XX000).
    #[error("internal error in materialized view catalog: {0}")]
    Internal(String),
    /// DuckDB refused a statement; its message is passed on.
    #[error("{}", .0.message)]
    Db(#[from] DbError),
}

impl IvmError {
    /// The SQLSTATE a PostgreSQL client should see for this error.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            IvmError::AlreadyExists(_) => SqlState::DUPLICATE_TABLE,
            IvmError::NoSuchView(_) => SqlState::UNDEFINED_TABLE,
            IvmError::NotPopulated(_) => SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            IvmError::Dependents { .. } | IvmError::AlterBlocked { .. } => {
                SqlState::DEPENDENT_OBJECTS_STILL_EXIST
            }
            IvmError::Unsupported(_) => SqlState::FEATURE_NOT_SUPPORTED,
            IvmError::Syntax(_) => SqlState::SYNTAX_ERROR,
            IvmError::InvalidValue(_) => SqlState::INVALID_PARAMETER_VALUE,
            IvmError::Internal(_) => SqlState::INTERNAL_ERROR,
            IvmError::Db(e) => e.state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates() {
        assert_eq!(
            IvmError::AlreadyExists("v".into()).sqlstate(),
            SqlState::DUPLICATE_TABLE
        );
        assert_eq!(
            IvmError::NoSuchView("v".into()).sqlstate(),
            SqlState::UNDEFINED_TABLE
        );
        assert_eq!(
            IvmError::NotPopulated("v".into()).sqlstate(),
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE
        );
        let dep = IvmError::Dependents {
            object: "table t".into(),
            dependents: "v".into(),
        };
        assert_eq!(dep.sqlstate(), SqlState::DEPENDENT_OBJECTS_STILL_EXIST);
        assert_eq!(
            IvmError::Unsupported("x".into()).sqlstate(),
            SqlState::FEATURE_NOT_SUPPORTED
        );
        let db = IvmError::Db(DbError {
            message: "Parser Error: syntax error".into(),
            state: SqlState::SYNTAX_ERROR,
        });
        assert_eq!(
            db.sqlstate(),
            SqlState::SYNTAX_ERROR,
            "the database layer's code"
        );
    }
}
