//! PostgreSQL session settings that DuckDB does not have: SET, SHOW and
//! RESET of them are answered by the server, and the ones PostgreSQL
//! reports to clients are sent back as ParameterStatus.

use std::collections::HashMap;

/// (name, default, reported to the client with ParameterStatus)
const KNOWN: &[(&str, &str, bool)] = &[
    ("application_name", "", true),
    ("client_encoding", "UTF8", true),
    ("datestyle", "ISO, MDY", true),
    ("intervalstyle", "postgres", true),
    ("timezone", "UTC", true),
    ("standard_conforming_strings", "on", true),
    ("integer_datetimes", "on", true),
    ("is_superuser", "on", true),
    ("server_encoding", "UTF8", true),
    ("server_version", "16.6", true),
    ("server_version_num", "160006", false),
    ("extra_float_digits", "1", false),
    ("client_min_messages", "notice", false),
    ("statement_timeout", "0", false),
    ("lock_timeout", "0", false),
    ("idle_in_transaction_session_timeout", "0", false),
    ("default_transaction_isolation", "read committed", false),
    ("transaction_isolation", "read committed", false),
    ("default_transaction_read_only", "off", true),
    ("transaction_read_only", "off", false),
    ("bytea_output", "hex", false),
    ("search_path", "\"$user\", public", false),
    ("synchronous_commit", "on", false),
    ("jit", "off", false),
    ("max_identifier_length", "63", false),
    ("max_index_keys", "32", false),
    ("row_security", "on", false),
    ("lc_messages", "C", false),
    ("lc_monetary", "C", false),
    ("lc_numeric", "C", false),
    ("lc_time", "C", false),
    ("duckmv.refresh_mode", "auto", false),
];

/// PostgreSQL's spelling of a parameter's name (ParameterStatus, SHOW's column).
fn reported_name(name: &str) -> &str {
    match name {
        "datestyle" => "DateStyle",
        "intervalstyle" => "IntervalStyle",
        "timezone" => "TimeZone",
        "transaction isolation level" => "transaction_isolation",
        other => other,
    }
}

/// The column SHOW `name` answers in, as PostgreSQL names it.
pub fn show_column(name: &str) -> String {
    reported_name(name).replace(' ', "_")
}

#[derive(Default)]
pub struct Settings {
    values: HashMap<String, String>,
}

impl Settings {
    pub fn is_known(name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        KNOWN.iter().any(|(k, _, _)| *k == n)
    }

    pub fn get(&self, name: &str) -> Option<String> {
        let n = name.to_ascii_lowercase();
        if let Some(v) = self.values.get(&n) {
            return Some(v.clone());
        }
        KNOWN
            .iter()
            .find(|(k, _, _)| *k == n)
            .map(|(_, d, _)| d.to_string())
    }

    /// Sets a known parameter; returns the ParameterStatus to send, if any.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Option<(String, String)> {
        let n = name.to_ascii_lowercase();
        let (_, default, reported) = *KNOWN.iter().find(|(k, _, _)| *k == n)?;
        let v = value.map(normalize).unwrap_or_else(|| default.to_string());
        self.values.insert(n.clone(), v.clone());
        reported.then(|| (reported_name(&n).to_string(), v))
    }

    /// RESET ALL: every parameter back to its default.
    pub fn reset_all(&mut self) -> Vec<(String, String)> {
        let changed: Vec<String> = self.values.drain().map(|(k, _)| k).collect();
        changed
            .into_iter()
            .filter_map(|k| {
                let (_, d, rep) = *KNOWN.iter().find(|(n, _, _)| *n == k)?;
                rep.then(|| (reported_name(&k).to_string(), d.to_string()))
            })
            .collect()
    }
}

/// Whether a TimeZone setting names UTC: the zone duckmv computes in (without ICU's zone data,
/// see `engine/utc_timestamptz.cpp`, which accepts the same names in `AT TIME ZONE`).
fn is_utc_zone(value: &str) -> bool {
    const UTC: &[&str] = &[
        "utc",
        "etc/utc",
        "gmt",
        "etc/gmt",
        "z",
        "zulu",
        "uct",
        "universal",
        "etc/universal",
        "etc/zulu",
        "etc/uct",
        "greenwich",
        "gmt0",
        "etc/gmt0",
        "+00",
        "-00",
        "+00:00",
        "-00:00",
        "00:00",
        "0",
        "default",
        "local",
    ];
    let v = normalize(value).to_ascii_lowercase();
    UTC.contains(&v.as_str())
}

/// What a session is told when it sets TimeZone to a zone other than UTC: the setting is kept
/// for SHOW and ParameterStatus (drivers send their machine's zone at connect and would fail
/// on an error), but times are still read and shown in UTC.
pub fn zone_notice(value: &str) -> Option<String> {
    (!is_utc_zone(value)).then(|| {
        format!(
            "duckmv computes timestamptz values in UTC: TimeZone is now '{}' for SHOW, but \
             times without an offset are read as UTC and every timestamptz is shown in UTC",
            normalize(value)
        )
    })
}

fn normalize(v: &str) -> String {
    let v = v.trim();
    let v = v
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(v);
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zones_other_than_utc_get_a_notice() {
        for utc in ["UTC", "'utc'", "Etc/UTC", "GMT", "+00:00", "DEFAULT"] {
            assert_eq!(zone_notice(utc), None, "{utc}");
        }
        let notice = zone_notice("'Europe/Paris'").unwrap();
        assert!(notice.contains("'Europe/Paris'"), "{notice}");
        assert!(zone_notice("America/New_York").is_some());
    }

    #[test]
    fn set_show_reset() {
        let mut s = Settings::default();
        assert_eq!(s.get("DateStyle").as_deref(), Some("ISO, MDY"));
        assert_eq!(
            s.set("application_name", Some("'app'")),
            Some(("application_name".into(), "app".into()))
        );
        assert_eq!(s.get("application_name").as_deref(), Some("app"));
        assert_eq!(s.set("extra_float_digits", Some("3")), None);
        assert_eq!(s.get("extra_float_digits").as_deref(), Some("3"));
        assert!(s.set("threads", Some("4")).is_none());
        assert_eq!(
            s.reset_all(),
            vec![("application_name".to_string(), "".to_string())]
        );
    }
}
