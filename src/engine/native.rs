//! duckmv's own C++ inside DuckDB, compiled by build.rs against the bundled sources with the
//! same flags, and registered once per database before the user's file is attached (so nothing
//! stored is bound without it):
//!
//! - `utc_timestamptz.cpp`: TIMESTAMPTZ forms of DuckDB's TIMESTAMP functions, exact in UTC,
//!   for a build without ICU (without them `now() + interval '1 day'`, `date_trunc('day', at)`
//!   and `current_date` fail);
//! - `pg_bytea.cpp`: PostgreSQL's hex input for bytea (`'\x0001ff'` is three bytes; DuckDB
//!   read five), and `length(bytea)`;
//! - `pg_round.cpp`: round(double precision) rounds halves to even, as PostgreSQL's;
//! - `kept_plan.cpp`: the optimizer step that lets a refresh's statements keep their plans
//!   (`kept_plan`).

use std::os::raw::c_char;

use duckdb::ffi;

use super::duck::{take_c_string, Conn};
use super::error::EngineError;

extern "C" {
    fn duckmv_register_utc_timestamptz(connection: ffi::duckdb_connection) -> *mut c_char;
    fn duckmv_register_pg_bytea(connection: ffi::duckdb_connection) -> *mut c_char;
    fn duckmv_register_pg_round(connection: ffi::duckdb_connection) -> *mut c_char;
    fn duckmv_register_kept_plans(connection: ffi::duckdb_connection) -> *mut c_char;
}

/// A registration: NULL, or an error message from duckdb_malloc.
type Registration = unsafe extern "C" fn(ffi::duckdb_connection) -> *mut c_char;

/// What each registers, for its error message, in the order they run.
const REGISTRATIONS: &[(&str, Registration)] = &[
    ("the TIMESTAMPTZ functions", duckmv_register_utc_timestamptz),
    ("the bytea input and length", duckmv_register_pg_bytea),
    ("round of double precision", duckmv_register_pg_round),
    (
        "the optimizer step that keeps plans",
        duckmv_register_kept_plans,
    ),
];

/// Registers each in the database `conn` belongs to, for all its connections.
pub(super) fn register(conn: &Conn) -> Result<(), EngineError> {
    for (what, registration) in REGISTRATIONS {
        // SAFETY: `conn` is open for the whole call. Each registration catches every C++
        // exception and returns NULL or a message allocated with duckdb_malloc, which
        // take_c_string frees.
        if let Some(m) = unsafe { take_c_string(registration(conn.raw())) } {
            return Err(EngineError::internal(format!(
                "could not register {what}: {m}"
            )));
        }
    }
    Ok(())
}
