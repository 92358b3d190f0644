//! Keeps the stored row keys of bag views (see `plan::row_key`) equal to what DuckDB's `hash`
//! gives now. They are hashes kept in the storage: a DuckDB whose hash differs (a new version)
//! would no longer find those rows, and a refresh would add a second copy of a row instead of
//! changing its count. At start-up the server compares the fingerprint of `hash` with the one
//! it stored; when they differ, every keyed storage has its keys computed again. The new
//! fingerprint is written last, so a start that stops halfway does it all again.

use super::plan;
use super::text::lit;
use super::upgrade::{names, views_in_id_order};
use super::{IvmError, Sql};

const NAME: &str = "hash fingerprint";

/// Recomputes the keys of every keyed storage when `hash` changed since they were written;
/// returns the names of the views whose keys it recomputed.
pub fn run(db: &mut dyn Sql) -> Result<Vec<String>, IvmError> {
    let first = |db: &mut dyn Sql, sql: &str| -> Result<Option<String>, IvmError> {
        Ok(names(db, sql)?.into_iter().next())
    };
    let now = first(db, plan::fingerprint_sql())?;
    let stored = first(
        db,
        &format!(
            "SELECT value FROM _duckmv.settings WHERE name = {}",
            lit(NAME)
        ),
    )?;
    if stored.is_some() && stored == now {
        return Ok(Vec::new());
    }
    let mut rekeyed = Vec::new();
    if stored.is_some() {
        for view in views_in_id_order(db)? {
            if super::mode::keyed_bag(&view.plan) {
                let cols = plan::positional(view.plan.columns.len());
                db.exec(&format!(
                    "UPDATE {} SET {} = {}",
                    plan::storage(view.id),
                    plan::KEY,
                    plan::row_key(None, &cols, &view.plan.types)
                ))?;
                rekeyed.push(view.name);
            }
        }
    }
    db.exec(&format!(
        "DELETE FROM _duckmv.settings WHERE name = {}",
        lit(NAME)
    ))?;
    db.exec(&format!(
        "INSERT INTO _duckmv.settings VALUES ({}, {})",
        lit(NAME),
        lit(now.as_deref().unwrap_or_default())
    ))?;
    Ok(rekeyed)
}
