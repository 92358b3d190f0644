//! A view's refresh policy: when duckmv refreshes it without being asked.
//!
//! Set with the storage-parameter syntax PostgreSQL accepts for materialized views
//! (`WITH (refresh = 'every 5 seconds')`, `ALTER MATERIALIZED VIEW v SET (refresh = …)`) and
//! kept in `_duckmv.views.refresh_policy` as its canonical text (NULL: on demand, so catalogs
//! written before policies existed need no change).
//! - on demand: only `REFRESH MATERIALIZED VIEW` refreshes it (PostgreSQL's behaviour).
//! - every N seconds/minutes/hours: the server's background refresher refreshes it when the
//!   interval has passed and a source changed.
//! - immediate: it is maintained inside every transaction that writes one of its sources.

use std::time::Duration;

use super::text::lit;
use super::{IvmError, Sql};

/// The shortest interval a scheduled view may have.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefreshPolicy {
    #[default]
    OnDemand,
    Every(Duration),
    Immediate,
}

impl RefreshPolicy {
    /// Reads a policy as a user writes it: `on demand`, `immediate`, or `every N unit` with unit
    /// second(s), minute(s) or hour(s) (or s, sec, min, m, h). Case and spacing do not matter.
    pub fn parse(text: &str) -> Result<RefreshPolicy, IvmError> {
        let lower = text.trim().to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        match words.as_slice() {
            ["on", "demand"] | ["on_demand"] | ["manual"] => Ok(RefreshPolicy::OnDemand),
            ["immediate"] | ["immediately"] => Ok(RefreshPolicy::Immediate),
            ["every", n, unit] => every(n, unit, text),
            ["every", n] => {
                // `every 5s`, `every 2min`
                let split = n.find(|c: char| !c.is_ascii_digit()).unwrap_or(n.len());
                every(&n[..split], &n[split..], text)
            }
            _ => Err(invalid(text)),
        }
    }

    /// The canonical text, as stored and shown in `duckmv.views`.
    pub fn text(&self) -> String {
        match self {
            RefreshPolicy::OnDemand => "on demand".into(),
            RefreshPolicy::Immediate => "immediate".into(),
            RefreshPolicy::Every(d) => {
                let s = d.as_secs();
                let (n, unit) = if s % 3600 == 0 {
                    (s / 3600, "hour")
                } else if s % 60 == 0 {
                    (s / 60, "minute")
                } else {
                    (s, "second")
                };
                let plural = if n == 1 { "" } else { "s" };
                format!("every {n} {unit}{plural}")
            }
        }
    }

    /// Reads the stored column: NULL or anything unreadable is on demand (a policy never stops
    /// a view from working).
    pub fn from_stored(stored: Option<&str>) -> RefreshPolicy {
        stored
            .and_then(|s| RefreshPolicy::parse(s).ok())
            .unwrap_or_default()
    }

    /// The interval of a scheduled view.
    pub fn interval(&self) -> Option<Duration> {
        match self {
            RefreshPolicy::Every(d) => Some(*d),
            _ => None,
        }
    }
}

fn every(n: &str, unit: &str, text: &str) -> Result<RefreshPolicy, IvmError> {
    let n: u64 = n.parse().map_err(|_| invalid(text))?;
    let secs = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => Some(n),
        "m" | "min" | "mins" | "minute" | "minutes" => n.checked_mul(60),
        "h" | "hour" | "hours" => n.checked_mul(3600),
        _ => return Err(invalid(text)),
    };
    let d = Duration::from_secs(secs.ok_or_else(|| invalid(text))?);
    if d < MIN_INTERVAL {
        return Err(IvmError::InvalidValue(format!(
            "invalid value for parameter \"refresh\": \"{text}\": the shortest interval is 1 second"
        )));
    }
    Ok(RefreshPolicy::Every(d))
}

fn invalid(text: &str) -> IvmError {
    IvmError::InvalidValue(format!(
        "invalid value for parameter \"refresh\": \"{text}\" (expected 'on demand', 'immediate' \
         or 'every N seconds|minutes|hours')"
    ))
}

/// A materialized view, its policy, and the relations it reads (lower-cased names, schema
/// left out), as the server keeps them to know which views a write concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewPolicy {
    pub id: i64,
    pub schema: String,
    pub name: String,
    pub policy: RefreshPolicy,
    pub sources: Vec<String>,
}

/// Every materialized view with its policy and sources, in id order (a view comes after the
/// views it reads: it was created after them).
pub fn all(db: &mut dyn Sql) -> Result<Vec<ViewPolicy>, IvmError> {
    let rows = db.query(
        "SELECT v.id, v.schema, v.name, v.refresh_policy, lower(s.source_name) \
         FROM _duckmv.views v LEFT JOIN _duckmv.view_sources s ON s.view_id = v.id \
         ORDER BY v.id, s.source_name",
    )?;
    let mut out: Vec<ViewPolicy> = Vec::new();
    for r in rows {
        let id: i64 = r[0].as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
        if out.last().is_none_or(|v| v.id != id) {
            out.push(ViewPolicy {
                id,
                schema: r[1].clone().unwrap_or_default(),
                name: r[2].clone().unwrap_or_default(),
                policy: RefreshPolicy::from_stored(r[3].as_deref()),
                sources: Vec::new(),
            });
        }
        if let (Some(v), Some(src)) = (out.last_mut(), r[4].clone()) {
            v.sources.push(src);
        }
    }
    Ok(out)
}

/// The stored policy of view `id`.
pub fn stored(db: &mut dyn Sql, id: i64) -> Result<RefreshPolicy, IvmError> {
    let rows = db.query(&format!(
        "SELECT refresh_policy FROM _duckmv.views WHERE id = {id}"
    ))?;
    let text = rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten());
    Ok(RefreshPolicy::from_stored(text.as_deref()))
}

/// Records what the background refresher says about view `id` (None: nothing to say). Only the
/// refresher writes this table, in statements of its own, so it never conflicts with a refresh.
pub fn record_status(db: &mut dyn Sql, id: i64, status: Option<&str>) -> Result<(), IvmError> {
    db.exec(&format!(
        "DELETE FROM _duckmv.refresher_status WHERE view_id = {id}"
    ))?;
    if let Some(s) = status {
        db.exec(&format!(
            "INSERT INTO _duckmv.refresher_status VALUES ({id}, {}, now())",
            lit(s)
        ))?;
    }
    Ok(())
}

/// Stores the policy of view `id` (in the caller's transaction).
pub fn store(db: &mut dyn Sql, id: i64, policy: RefreshPolicy) -> Result<(), IvmError> {
    let value = match policy {
        RefreshPolicy::OnDemand => "NULL".to_string(),
        other => lit(&other.text()),
    };
    db.exec(&format!(
        "UPDATE _duckmv.views SET refresh_policy = {value} WHERE id = {id}"
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_users_write() {
        let secs = |n| RefreshPolicy::Every(Duration::from_secs(n));
        for (text, want) in [
            ("on demand", RefreshPolicy::OnDemand),
            ("  ON   Demand ", RefreshPolicy::OnDemand),
            ("immediate", RefreshPolicy::Immediate),
            ("every 5 seconds", secs(5)),
            ("every 1 second", secs(1)),
            ("Every 2 Minutes", secs(120)),
            ("every 1 hour", secs(3600)),
            ("every 5s", secs(5)),
            ("every 10min", secs(600)),
        ] {
            assert_eq!(RefreshPolicy::parse(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for text in [
            "",
            "sometimes",
            "every",
            "every five seconds",
            "every 0 seconds",
            "every 5 fortnights",
            "every -1 seconds",
            "every 99999999999999999999 hours",
        ] {
            let e = RefreshPolicy::parse(text).unwrap_err();
            assert!(matches!(e, IvmError::InvalidValue(_)), "{text}: {e:?}");
        }
    }

    #[test]
    fn canonical_text_reads_back_as_itself() {
        for text in [
            "on demand",
            "immediate",
            "every 1 second",
            "every 90 seconds",
            "every 2 minutes",
            "every 1 hour",
        ] {
            let p = RefreshPolicy::parse(text).unwrap();
            assert_eq!(p.text(), text);
            assert_eq!(RefreshPolicy::parse(&p.text()).unwrap(), p);
        }
        assert_eq!(RefreshPolicy::from_stored(None), RefreshPolicy::OnDemand);
        assert_eq!(
            RefreshPolicy::from_stored(Some("garbage")),
            RefreshPolicy::OnDemand
        );
    }
}
