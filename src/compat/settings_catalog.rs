//! The rows of `pg_settings` (and so `current_setting()` in SQL): the
//! parameters the server answers SET/SHOW for, with the defaults of
//! `Settings` (settings.rs), plus a few read-only ones clients look up.

use super::Settings;

/// Parameters `Settings` knows (its defaults are used, not repeated here).
const SESSION: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "intervalstyle",
    "timezone",
    "standard_conforming_strings",
    "integer_datetimes",
    "is_superuser",
    "server_encoding",
    "server_version",
    "server_version_num",
    "extra_float_digits",
    "client_min_messages",
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "default_transaction_isolation",
    "transaction_isolation",
    "default_transaction_read_only",
    "transaction_read_only",
    "bytea_output",
    "search_path",
    "synchronous_commit",
    "jit",
    "max_identifier_length",
    "max_index_keys",
    "row_security",
    "lc_messages",
    "lc_monetary",
    "lc_numeric",
    "lc_time",
];

/// Read-only parameters PostgreSQL has and clients query, which the server
/// does not manage.
const FIXED: &[(&str, &str)] = &[
    ("default_table_access_method", "heap"),
    ("max_connections", "100"),
    ("block_size", "8192"),
    ("data_checksums", "off"),
    ("default_with_oids", "off"),
    ("lc_collate", "C"),
    ("lc_ctype", "C"),
    ("ssl", "off"),
    ("password_encryption", "scram-sha-256"),
    ("default_tablespace", ""),
    ("temp_tablespaces", ""),
    ("array_nulls", "on"),
    ("escape_string_warning", "on"),
];

/// (name, default) of every row of pg_settings.
pub(crate) fn rows() -> Vec<(String, String)> {
    let defaults = Settings::default();
    SESSION
        .iter()
        .filter_map(|n| defaults.get(n).map(|v| (n.to_string(), v)))
        .chain(FIXED.iter().map(|(n, v)| (n.to_string(), v.to_string())))
        .collect()
}

/// True for a (lower-case) name pg_settings answers for; DuckDB's own
/// settings (threads, memory_limit, ...) are left to DuckDB.
pub(crate) fn is_pg_setting(name: &str) -> bool {
    SESSION.contains(&name) || FIXED.iter().any(|(n, _)| *n == name) || Settings::is_known(name)
}

/// pg_settings' VALUES list: `('name', 'value'), ...`.
pub(crate) fn values_sql() -> String {
    rows()
        .iter()
        .map(|(n, v)| format!("('{}', '{}')", n.replace('\'', "''"), v.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A CASE expression giving the value of the setting named by `arg`
/// (case-insensitively), NULL for others.
pub(crate) fn case_sql(arg: &str) -> String {
    let arms: String = rows()
        .iter()
        .map(|(n, v)| {
            format!(
                " WHEN '{}' THEN '{}'",
                n.replace('\'', "''"),
                v.replace('\'', "''")
            )
        })
        .collect();
    format!("(CASE lower({arg}){arms} END)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_session_parameter_is_known_to_settings() {
        for n in SESSION {
            assert!(Settings::is_known(n), "{n} is not in settings.rs");
        }
        let rows = rows();
        assert_eq!(rows.len(), SESSION.len() + FIXED.len());
        let get = |n: &str| rows.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(
            get("server_version_num"),
            Settings::default().get("server_version_num")
        );
        assert_eq!(get("default_table_access_method").as_deref(), Some("heap"));
    }

    #[test]
    fn values_are_quoted() {
        let v = values_sql();
        assert!(v.contains("('search_path', '\"$user\", public')"), "{v}");
        assert!(is_pg_setting("server_version_num"));
        assert!(!is_pg_setting("threads"));
    }
}
