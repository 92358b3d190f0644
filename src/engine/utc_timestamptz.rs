//! TIMESTAMPTZ arithmetic in UTC for the bundled DuckDB, which has no ICU extension: without it
//! `now() + interval '1 day'`, `date_trunc('day', created_at)`, `now()::date` and
//! `current_date` fail. The work is in `utc_timestamptz.cpp` (compiled by build.rs against the
//! bundled sources): it gives the listed TIMESTAMP functions TIMESTAMPTZ overloads, which is
//! exact because sessions run in UTC, where both types hold the same microseconds.

use std::os::raw::c_char;

use duckdb::ffi;

use super::duck::{take_c_string, Conn};
use super::error::EngineError;

extern "C" {
    fn duckmv_register_utc_timestamptz(connection: ffi::duckdb_connection) -> *mut c_char;
}

/// Registers the functions in the database `conn` belongs to, for all its connections. Runs
/// once, before the user's file is attached, so nothing stored is bound without them.
pub(super) fn register(conn: &Conn) -> Result<(), EngineError> {
    // SAFETY: `conn` is open for the whole call. The shim catches every C++ exception and
    // returns NULL or a message allocated with duckdb_malloc, which take_c_string frees.
    let message = unsafe { take_c_string(duckmv_register_utc_timestamptz(conn.raw())) };
    match message {
        None => Ok(()),
        Some(m) => Err(EngineError::internal(format!(
            "could not register the TIMESTAMPTZ functions: {m}"
        ))),
    }
}
