//! DuckDB type ⇄ PostgreSQL type, and value encoding in both directions.
//!
//! - [`DuckType`], [`pg_type`], [`duck_type_for_oid`]: what a column or parameter is called
//!   on each side.
//! - [`encode_batch`] / [`encode_rows`]: Arrow batches from DuckDB → DataRow bodies, in
//!   PostgreSQL's text or binary format per column.
//! - [`decode_param`]: Bind parameter bytes → [`ParamValue`] for the engine to bind.
//!
//! Text output matches PostgreSQL 16 with default settings (DateStyle ISO, IntervalStyle
//! postgres, TimeZone UTC, extra_float_digits 1, bytea_output hex).

mod binary;
mod calendar;
mod duck_type;
mod encode;
mod error;
mod nested;
mod oid;
mod params;
mod parse;
mod text;
mod writers;

#[cfg(test)]
mod duckdb_tests;
#[cfg(test)]
mod roundtrip_tests;

pub use duck_type::DuckType;
pub use encode::{encode_batch, encode_rows};
pub use error::TypeError;
pub use oid::{array_element_oid, array_type_of, duck_type_for_oid, oids, pg_type, Format, PgType};
pub use params::{decode_param, ParamValue};
pub use parse::{parse_array, parse_bytea, ArrayElem};
