//! The benchmark's error type: what went wrong, with the SQL or step it happened in.

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{context}: {message}")]
    Sql { context: String, message: String },
    #[error("server: {0}")]
    Server(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("in-process DuckDB: {0}")]
    Duck(#[from] duckdb::Error),
}

impl BenchError {
    /// A failed statement; the message includes the server's detail (tokio-postgres hides
    /// it behind `db error` otherwise).
    pub fn sql(context: impl Into<String>, e: &tokio_postgres::Error) -> BenchError {
        BenchError::Sql {
            context: context.into(),
            message: pg_message(e),
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }
}

/// The server's own error text where there is one.
pub fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
