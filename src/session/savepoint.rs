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

use super::reply::SqlError;
use crate::sql::savepoint::SavepointOp;
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
    pub fn note(&mut self, only_reads: bool) {
        if !only_reads {
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

/// What a savepoint command asks of the transaction.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done: the command tag.
    Tag(&'static str),
    /// ROLLBACK TO a savepoint set before any change: roll back and begin again.
    Restart,
}

impl Savepoints {
    /// Applies a savepoint command inside a transaction block (`failed`: the block failed).
    pub fn apply(&mut self, op: &SavepointOp, failed: bool) -> Result<Outcome, SqlError> {
        match op {
            SavepointOp::Define(name) => {
                self.marks.push((name.clone(), self.changes));
                Ok(Outcome::Tag("SAVEPOINT"))
            }
            SavepointOp::Release(name) => {
                let i = self.find(name)?;
                self.marks.truncate(i);
                Ok(Outcome::Tag("RELEASE"))
            }
            SavepointOp::RollbackTo(name) => {
                let i = self.find(name)?;
                let at = self.marks[i].1;
                // The savepoint itself stays; the ones after it go.
                self.marks.truncate(i + 1);
                if !failed && self.changes == at {
                    return Ok(Outcome::Tag("ROLLBACK"));
                }
                if at == 0 {
                    return Ok(Outcome::Restart);
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
}
