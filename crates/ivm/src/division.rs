//! Views written when `/` on integers gave fractions. The server now divides integers as
//! PostgreSQL does (7 / 2 = 3, a division by zero an error), so a view whose definition divides
//! may hold rows its query no longer gives. At start-up, a database without the mark below has
//! each populated view that divides recomputed from its sources, then gets the mark; a start
//! that stops halfway does it all again.

use super::catalog::ViewRow;
use super::refresh;
use super::text::lit;
use super::upgrade::{names, views_in_id_order};
use super::{IvmError, Sql};

const NAME: &str = "division";
const VALUE: &str = "integer";

/// Recomputes the populated views that divide, once per database; returns their names.
pub fn run(db: &mut dyn Sql) -> Result<Vec<String>, IvmError> {
    let marked = names(
        db,
        &format!(
            "SELECT value FROM _duckmv.settings WHERE name = {}",
            lit(NAME)
        ),
    )?;
    if marked.iter().any(|v| v == VALUE) {
        return Ok(Vec::new());
    }
    let mut recomputed = Vec::new();
    for view in views_in_id_order(db)? {
        if view.populated && divides(&view) {
            refresh::recompute_now(db, &view)?;
            recomputed.push(view.name);
        }
    }
    db.exec(&format!(
        "INSERT INTO _duckmv.settings VALUES ({}, {})",
        lit(NAME),
        lit(VALUE)
    ))?;
    Ok(recomputed)
}

/// Whether the definition has a `/` anywhere: one in a string or a comment only costs a
/// recompute.
fn divides(view: &ViewRow) -> bool {
    view.definition.contains('/')
}
