//! Answers for what PostgreSQL clients ask and DuckDB lacks.
//!
//! Compatibility objects live in the `duckmv` schema, which every session
//! puts on its search path after `main`, so unqualified catalog names such
//! as `pg_matviews` resolve there.

mod rewrite;
mod settings;

pub use rewrite::rewrite;

pub use settings::Settings;

use crate::engine::{Conn, EngineError};

/// Creates the objects clients expect to find (idempotent; at start-up,
/// after the IVM catalog exists).
pub fn install(conn: &Conn) -> Result<(), EngineError> {
    conn.exec_batch(
        "CREATE SCHEMA IF NOT EXISTS duckmv;
         CREATE OR REPLACE VIEW duckmv.pg_matviews AS
           SELECT CASE WHEN v.schema = 'main' THEN 'public' ELSE v.schema END AS schemaname,
                  v.name AS matviewname,
                  current_user AS matviewowner,
                  NULL::VARCHAR AS tablespace,
                  false AS hasindexes,
                  v.populated AS ispopulated,
                  v.definition AS definition
           FROM _duckmv.views v;",
    )
}

/// Per-connection settings every session starts with.
pub fn session_init(conn: &Conn) -> Result<(), EngineError> {
    conn.exec_batch("SET search_path = 'main,duckmv'")
}
