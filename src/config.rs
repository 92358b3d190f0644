//! Command-line flags (also read from `DUCKMV_*` environment variables).

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "duckmv",
    version,
    about = "A PostgreSQL wire-protocol server over embedded DuckDB, with materialized views refreshed incrementally"
)]
pub struct Config {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "DUCKMV_LISTEN", default_value = "127.0.0.1:5433")]
    pub listen: String,

    /// DuckDB database file, created when absent; `:memory:` for a
    /// database that lives only as long as the server.
    #[arg(long, env = "DUCKMV_DATABASE", default_value = "./duckmv.duckdb")]
    pub database: String,
}
