//! Checkpoints off the commit path.
//!
//! DuckDB checkpoints a database inside the COMMIT that takes its write-ahead log past
//! `checkpoint_threshold` (16 MiB by default): whichever transaction commits then — a one-row
//! UPDATE, a REFRESH — waits for the whole checkpoint (measured here: 30–50 ms instead of 8–9
//! for a refresh of a view over a 1M-row table). The server raises that threshold out of reach
//! and checkpoints from a thread of its own once the log passes `--max-wal-size`, so that the
//! checkpoint falls between statements when the clients leave any time between them.
//!
//! A checkpoint still holds DuckDB's exclusive checkpoint lock, which every write transaction
//! takes shared from its first write to its end: a writer that starts during a checkpoint waits
//! for it, and a CHECKPOINT fails at once while any write transaction is open. Past the limit
//! the thread therefore tries every [`RETRY`] until one gets through. Writers that never pause
//! leave it no opening; then the log would only grow, and the checkpoint that finally runs
//! would take longer with it. So at [`GIVE_BACK`] times the limit commits checkpoint again, as
//! DuckDB does by default (a commit finds an opening whenever it is the only writer), until a
//! checkpoint has brought the log back under the limit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, warn};

use crate::engine::{Conn, Database};

/// How often the log's size is looked at while it is under the limit.
const LOOK: Duration = Duration::from_secs(1);

/// How often a checkpoint is tried while the log is past the limit.
const RETRY: Duration = Duration::from_millis(50);

/// Past this many times the limit, commits checkpoint again (see the module comment).
const GIVE_BACK: u64 = 2;

/// `checkpoint_threshold` while the thread checkpoints: never reached by a commit.
const OUT_OF_REACH: &str = "1TB";

/// Starts the checkpoint thread for the database file at `path`, which may hold `limit_mib`
/// MiB of log; with `on_commit`, only sets DuckDB's threshold to that limit and leaves the
/// checkpoints to commits. An in-memory database has no log: nothing to do.
pub fn start(
    db: &Arc<Database>,
    path: &str,
    limit_mib: u64,
    on_commit: bool,
) -> std::io::Result<()> {
    if path == ":memory:" || path.is_empty() {
        return Ok(());
    }
    let conn = db.connect().map_err(std::io::Error::other)?;
    let mut c = Checkpoints {
        wal: PathBuf::from(format!("{path}.wal")),
        limit: limit_mib.max(1) * 1024 * 1024,
        on_commit: !on_commit,
    };
    c.commits_checkpoint(&conn, on_commit);
    if on_commit {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("duckmv-checkpoint".into())
        .spawn(move || loop {
            let wait = c.tick(&conn);
            std::thread::sleep(wait);
        })?;
    Ok(())
}

/// The checkpoints of one database file.
struct Checkpoints {
    wal: PathBuf,
    limit: u64,
    /// Whether commits checkpoint (DuckDB's threshold is the limit) rather than this thread.
    on_commit: bool,
}

/// What one look does, from the log's size.
#[derive(Debug, PartialEq)]
enum Step {
    /// Under the limit: checkpoints are this thread's again, if they were not.
    Under,
    Checkpoint,
}

fn step(size: u64, limit: u64) -> Step {
    if size < limit {
        Step::Under
    } else {
        Step::Checkpoint
    }
}

/// Whether a failed checkpoint hands checkpoints back to commits.
fn give_back(size: u64, limit: u64, on_commit: bool) -> bool {
    !on_commit && size >= limit.saturating_mul(GIVE_BACK)
}

impl Checkpoints {
    /// One look at the log; returns how long to wait before the next.
    fn tick(&mut self, conn: &Conn) -> Duration {
        // No log file: nothing written since the last checkpoint.
        let size = std::fs::metadata(&self.wal).map(|m| m.len()).unwrap_or(0);
        match step(size, self.limit) {
            Step::Under => {
                if self.on_commit {
                    self.commits_checkpoint(conn, false);
                }
                LOOK
            }
            Step::Checkpoint => match conn.exec("CHECKPOINT") {
                Ok(_) => LOOK,
                Err(e) => {
                    debug!("checkpoint at {size} bytes of log: {e}");
                    if give_back(size, self.limit, self.on_commit) {
                        warn!(
                            "the write-ahead log is at {} MiB and writers leave no time to \
                             checkpoint between them: commits checkpoint again",
                            size / (1024 * 1024)
                        );
                        self.commits_checkpoint(conn, true);
                    }
                    RETRY
                }
            },
        }
    }

    /// Sets DuckDB's commit-time threshold: the limit when `on`, out of reach when not.
    fn commits_checkpoint(&mut self, conn: &Conn, on: bool) {
        let value = if on {
            format!("{}B", self.limit)
        } else {
            OUT_OF_REACH.to_string()
        };
        match conn.exec(&format!("SET GLOBAL checkpoint_threshold = '{value}'")) {
            Ok(_) => self.on_commit = on,
            Err(e) => warn!("could not set checkpoint_threshold to {value}: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_past_the_limit_only() {
        assert_eq!(step(0, 100), Step::Under);
        assert_eq!(step(99, 100), Step::Under);
        assert_eq!(step(100, 100), Step::Checkpoint);
    }

    #[test]
    fn hands_back_to_commits_only_far_past_the_limit() {
        assert!(!give_back(199, 100, false));
        assert!(give_back(200, 100, false));
        assert!(!give_back(200, 100, true));
    }
}
