//! The DuckDB database: opening it, connections, running SQL, and the errors
//! it reports.

pub mod duck;
pub mod error;
mod native;
mod one_shot;
mod repeated;
mod spill;

pub use duck::{
    Column, Conn, Database, Interrupter, Prepared, QueryResult, StatementKind, CATALOG,
};
pub use error::EngineError;
