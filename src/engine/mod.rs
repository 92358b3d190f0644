//! The DuckDB database: opening it, connections, running SQL, and the errors
//! it reports.

pub mod duck;
pub mod error;
mod kept_plan;
mod native;
mod one_shot;
mod repeated;
mod result;
mod spill;
mod values;

pub use duck::{Column, Conn, Database, Interrupter, Prepared, StatementKind, CATALOG};
pub use error::EngineError;
pub use result::QueryResult;
