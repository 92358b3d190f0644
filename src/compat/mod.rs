//! Answers for what PostgreSQL clients ask and DuckDB lacks.
//!
//! Compatibility objects live in the `duckmv` schema, which every session
//! puts on its search path after `main`, so unqualified catalog names such
//! as `pg_class` resolve there before DuckDB's own `pg_catalog`. What a
//! search path cannot redirect (`pg_catalog.x`, `information_schema.x`,
//! `public.x`, regclass casts, `OPERATOR(...)`) is rewritten per statement
//! by `rewrite`.

mod catalog_names;
mod colname_rules;
mod column_names;
mod pg_keywords;
mod reserved_names;
mod rewrite;
mod settings;
mod settings_catalog;
mod storage;
mod type_oids;

pub use catalog_names::strip_connected_catalog;
pub use settings::{show_column, zone_notice, Settings};

use crate::engine::{Conn, EngineError};
use crate::sql::Lexed;

/// The PostgreSQL catalog as views and macros over DuckDB's (see the file).
const CATALOG_SQL: &str = include_str!("catalog.sql");
/// What tools read besides the core catalog (installed after it).
const TOOLS_SQL: &str = include_str!("catalog_tools.sql");

/// The role every catalog row names as owner (duckmv has no roles of its
/// own; authentication users are not DuckDB users).
const ROLE: &str = "duckmv";

/// Words that end an item of a FROM list, so are no table alias (upper case, as the lexer
/// gives words).
const ENDS_FROM_ITEM: &[&str] = &[
    "ON",
    "USING",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "FULL",
    "CROSS",
    "NATURAL",
    "WHERE",
    "GROUP",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WINDOW",
];

/// The name of the placeholder column a statement with an empty select list
/// (`SELECT FROM t`) selects; the session sends its rows without it.
pub const NO_COLUMNS: &str = "__duckmv_no_columns";

/// The statement to hand DuckDB instead of `sql` (catalog names, casts,
/// table storage parameters), or None to run it as is.
pub fn rewrite(s: &Lexed) -> Option<String> {
    match storage::strip_table_options(s) {
        Some(stripped) => rewrite::rewrite(&Lexed::new(stripped.as_str())).or(Some(stripped)),
        None => rewrite::rewrite(s),
    }
}

/// Creates the objects clients expect to find (idempotent; at start-up,
/// after the IVM catalog exists).
pub fn install(conn: &Conn) -> Result<(), EngineError> {
    conn.exec_batch(&catalog_sql())
}

/// catalog.sql and catalog_tools.sql with their placeholders filled in.
fn catalog_sql() -> String {
    format!("{CATALOG_SQL}\n{TOOLS_SQL}")
        .replace("{{role}}", ROLE)
        .replace("{{version}}", &version_sql())
        .replace("{{settings}}", &settings_catalog::values_sql())
        .replace("{{settings_case}}", &settings_catalog::case_sql("p_name"))
        .replace("{{pg_keywords}}", &pg_keywords::quoted_keywords_sql())
        .replace("{{type_oid_macros}}", &type_oids::macros_sql())
}

/// A statement as the client wrote it, made ready for the session: the
/// connected database dropped from three-part names, names DuckDB reserves
/// quoted, and result columns named as PostgreSQL names them. Runs before a
/// statement is classified, so materialized views get the same text.
/// Each rewrite that changes the text hands on the new text, lexed.
pub fn normalize(s: Lexed, database: &str) -> Lexed {
    let s = strip_connected_catalog(&s, database).map_or(s, Lexed::new);
    let s = reserved_names::quote_reserved_names(&s).map_or(s, Lexed::new);
    column_names::name_columns(&s).map_or(s, Lexed::new)
}

/// `version()`: PostgreSQL's format (clients parse the leading
/// "PostgreSQL <major>.<minor>"), naming duckmv and the embedded DuckDB.
fn version_sql() -> String {
    let server = Settings::default()
        .get("server_version")
        .unwrap_or_else(|| "16.6".into());
    format!(
        "'PostgreSQL {server} (duckmv {}, DuckDB ' || (SELECT library_version FROM pragma_version()) || ') on {}-pc-linux-gnu, compiled by rustc, 64-bit'",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
    )
}

/// Per-connection settings every session starts with.
pub fn session_init(conn: &Conn) -> Result<(), EngineError> {
    conn.exec_batch("SET search_path = 'main,duckmv'")
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tools_tests;
