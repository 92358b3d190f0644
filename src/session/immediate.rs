//! Views whose policy is `immediate`: maintained inside the writing transaction, at the end of
//! each statement that changed one of their sources, before the statement reports success.
//!
//! The statement's changes are already in the change logs (the capture triggers ran inside
//! it), so maintaining a view is an ordinary incremental refresh in the same transaction: the
//! writer reads its own change through the view at once, other sessions see the tables and the
//! view change together when it commits, and a rollback undoes both. Writers of tracked tables
//! hold the capture lock until their transaction ends, so two writers never maintain the same
//! view at the same time. A maintenance that fails fails the statement with its error (and, as
//! any failed statement, aborts the transaction): nothing half-maintained is committed.

use super::context::Context;
use super::matview::{self, IfMissing, Target};
use super::reply::SqlError;
use super::transaction::Tx;
use crate::ivm::RefreshMode;

/// Maintains the immediate views that read `changed` (lower-cased names of the relations a
/// statement wrote), each after the views it reads.
pub fn maintain(ctx: &mut Context, tx: &mut Tx, changed: &[String]) -> Result<(), SqlError> {
    if changed.is_empty() {
        return Ok(());
    }
    let views = ctx.shared.policies.read().immediate_for(changed);
    for (display, bare) in views {
        let target = Target { display, bare };
        // `auto` as a user's REFRESH: a bulk change may cost less recomputed.
        let r = matview::refresh(ctx, tx, &target, true, RefreshMode::Auto, IfMissing::Skip);
        r.map_err(|mut e| {
            e.message = format!(
                "maintaining materialized view {} (refresh = 'immediate'): {}",
                target.bare, e.message
            );
            e
        })?;
    }
    Ok(())
}
