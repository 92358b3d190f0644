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

    /// Write-ahead log size (MiB) at which a commit checkpoints the database; from half of it
    /// the server checkpoints in the background whenever no session is working.
    #[arg(long, env = "DUCKMV_MAX_WAL_SIZE", default_value_t = 16,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_wal_size: u64,

    /// Leave every checkpoint to the commit that takes the log past --max-wal-size, as DuckDB
    /// does: no checkpoints in quiet moments.
    #[arg(long, env = "DUCKMV_COMMIT_CHECKPOINTS")]
    pub commit_checkpoints: bool,

    /// How clients authenticate: trust, password (cleartext), md5 or
    /// scram-sha-256. Defaults to trust without users, scram-sha-256 with.
    #[arg(long, env = "DUCKMV_AUTH", value_enum)]
    pub auth: Option<crate::wire::AuthMethod>,

    /// A file of NAME:PASSWORD lines, one user each. (Users can also come from DUCKMV_USERS,
    /// comma-separated NAME:PASSWORD; never from the command line, where every local user could
    /// read the passwords.)
    #[arg(long, env = "DUCKMV_USERS_FILE")]
    pub users_file: Option<String>,

    /// A user with superuser rights: server-wide settings, ATTACH, CHECKPOINT, and server files
    /// when --allow-file-access is given (repeatable).
    #[arg(long = "superuser", env = "DUCKMV_SUPERUSERS", value_delimiter = ',')]
    pub superusers: Vec<String>,

    /// Let superusers read and write files on the server (read_csv, COPY to and from files,
    /// ATTACH, extensions). Off by default: no client can touch server files.
    #[arg(long, env = "DUCKMV_ALLOW_FILE_ACCESS")]
    pub allow_file_access: bool,

    /// Allow listening on a non-loopback address without authentication.
    #[arg(long, env = "DUCKMV_ALLOW_UNAUTHENTICATED_REMOTE")]
    pub allow_unauthenticated_remote: bool,

    /// PEM certificate chain for TLS (with --tls-key).
    #[arg(long, env = "DUCKMV_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<String>,

    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, env = "DUCKMV_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<String>,

    /// Refuse connections that do not use TLS.
    #[arg(long, env = "DUCKMV_TLS_ONLY", requires = "tls_cert")]
    pub tls_only: bool,
}
