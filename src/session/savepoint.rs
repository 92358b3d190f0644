//! SAVEPOINT emulation. DuckDB has no subtransactions, so a savepoint can
//! only be returned to when nothing is lost by it:
//!
//! - nothing changed since the savepoint (and the transaction has not
//!   failed): ROLLBACK TO does nothing — drivers wrap catalog probes in a
//!   savepoint this way (psycopg's `conn.transaction()` inside a
//!   transaction, SQLAlchemy's type lookups);
//! - nothing changed before it: ROLLBACK TO rolls the DuckDB transaction
//!   back and begins a new one, which is the state the savepoint saw;
//! - otherwise the transaction cannot be partly undone: 0A000, and the
//!   transaction must be rolled back as a whole.
//!
//! "Changed" is counted per statement: anything but a plain query counts.

use super::context::Context;
use super::exec::{Statement, StmtKind};
use super::reply::SqlError;
use super::transaction::{Tx, Txn, ABORTED};
use crate::engine::StatementKind;
use crate::sql::savepoint::SavepointOp;
use crate::sql::Command;
use crate::sqlstate::SqlState;

#[derive(Default)]
pub struct Savepoints {
    /// Open savepoints, innermost last, with the change count when each was set.
    marks: Vec<(String, u64)>,
    /// Statements that may have changed something since BEGIN.
    changes: u64,
}

impl Savepoints {
    /// A new transaction block starts with no savepoints and no changes.
    pub fn reset(&mut self) {
        *self = Savepoints::default();
    }

    /// Counts a statement about to run, unless it only reads.
    pub fn note(&mut self, st: &Statement) {
        let reads = match &st.kind {
            StmtKind::Empty => true,
            // A WITH query may hold a data-modifying CTE: counted.
            StmtKind::Duck(p) => {
                p.borrow().kind == StatementKind::Select && st.lexed.first_word() != Some("WITH")
            }
            StmtKind::Command(c) => matches!(
                c,
                Command::Show { .. }
                    | Command::ExplainRefresh { .. }
                    | Command::Copy(crate::sql::copy::Copy::To { .. })
            ),
            StmtKind::Rewrite(_) => false,
        };
        if !reads {
            self.changes += 1;
        }
    }

    fn find(&self, name: &str) -> Result<usize, SqlError> {
        self.marks
            .iter()
            .rposition(|(n, _)| n == name)
            .ok_or_else(|| {
                SqlError::new(
                    SqlState::INVALID_SAVEPOINT_SPECIFICATION,
                    format!("savepoint \"{name}\" does not exist"),
                )
            })
    }
}

/// Runs a savepoint command; returns its command tag.
pub fn run(tx: &mut Tx, ctx: &Context, op: &SavepointOp) -> Result<&'static str, SqlError> {
    let verb = match op {
        SavepointOp::Define(_) => "SAVEPOINT",
        SavepointOp::Release(_) => "RELEASE SAVEPOINT",
        SavepointOp::RollbackTo(_) => "ROLLBACK TO SAVEPOINT",
    };
    match tx.state {
        Txn::Idle | Txn::Implicit => {
            return Err(SqlError::new(
                SqlState::NO_ACTIVE_SQL_TRANSACTION,
                format!("{verb} can only be used in transaction blocks"),
            ))
        }
        Txn::Failed if !matches!(op, SavepointOp::RollbackTo(_)) => {
            return Err(SqlError::new(SqlState::IN_FAILED_SQL_TRANSACTION, ABORTED))
        }
        _ => {}
    }
    let sp = &mut tx.savepoints;
    match op {
        SavepointOp::Define(name) => {
            sp.marks.push((name.clone(), sp.changes));
            Ok("SAVEPOINT")
        }
        SavepointOp::Release(name) => {
            let i = sp.find(name)?;
            sp.marks.truncate(i);
            Ok("RELEASE")
        }
        SavepointOp::RollbackTo(name) => {
            let i = sp.find(name)?;
            let at = sp.marks[i].1;
            // The savepoint itself stays; the ones after it go.
            sp.marks.truncate(i + 1);
            if tx.state == Txn::Block && sp.changes == at {
                return Ok("ROLLBACK");
            }
            if at == 0 {
                tx.restart_block(ctx)?;
                return Ok("ROLLBACK");
            }
            let mut e = SqlError::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!(
                    "cannot roll back to savepoint \"{name}\": the transaction changed data before it, \
                     and DuckDB has no subtransactions to undo only the later part"
                ),
            );
            e.hint = Some("ROLLBACK the whole transaction and run it again.".into());
            Err(e)
        }
    }
}
