//! duckmv: a PostgreSQL wire-protocol server over an embedded DuckDB that keeps
//! materialized views up to date incrementally.
//!
//! Data flows one way: `wire` (protocol) → `session` (one client's state) →
//! `sql` (classify/rewrite) → `ivm` / `engine` (DuckDB).

pub mod compat;
pub mod config;
pub mod engine;
pub mod ivm;
pub mod server;
pub mod session;
pub mod sql;
pub mod sqlstate;
pub mod types;
pub mod wire;
