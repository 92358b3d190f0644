//! duckmv: a PostgreSQL wire-protocol server over an embedded DuckDB that keeps
//! materialized views up to date incrementally.
//!
//! Data flows one way: `wire` (protocol) → `session` (one client's state) →
//! `sql` (classify/rewrite) → `ivm` / `engine` (DuckDB).

pub mod compat;
pub mod config;
pub mod engine;
pub mod server;
pub mod session;
pub mod sql;
pub mod types;
pub mod wire;

// The engine and the codes are crates of the workspace; their old paths stay.
pub use duckmv_ivm as ivm;
pub use duckmv_sqlstate as sqlstate;
