//! Rewriting what PostgreSQL clients send into SQL DuckDB understands
//! (catalog names, casts and operators DuckDB lacks).

/// The statement to hand DuckDB instead of `sql`, or None to run it as is.
pub fn rewrite(_sql: &str) -> Option<String> {
    None
}
