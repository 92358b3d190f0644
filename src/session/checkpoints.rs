//! Checkpoints in quiet moments.
//!
//! DuckDB checkpoints a database inside the COMMIT that takes its write-ahead log past
//! `checkpoint_threshold`: whichever transaction commits then — a one-row UPDATE, a REFRESH —
//! waits for the whole checkpoint (measured here: 30–50 ms instead of 5–9, for a log of 16 MiB
//! over a 1M-row table). The server checkpoints earlier, from a thread of its own, once the log
//! is past half of `--max-wal-size` and no session has worked for [`QUIET`]: a client that
//! leaves time between its statements then never meets a checkpoint in a commit.
//!
//! Only in quiet moments, because a checkpoint cannot go beside a statement that writes: it
//! holds DuckDB's exclusive checkpoint lock, which every write transaction takes shared, so a
//! writer arriving during one waits for it whole; and a CHECKPOINT fails at once while a write
//! transaction is open (then the next look tries again). Tried at every opening regardless, a
//! checkpoint moved from a bulk write's commit into the refreshes that follow it. Clients that
//! never pause leave no quiet moment: their commits checkpoint at `--max-wal-size`, as DuckDB's
//! own would at its threshold.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, warn};

use super::activity::Activity;
use crate::engine::{Conn, Database};

/// How often the log's size is looked at.
const LOOK: Duration = Duration::from_millis(20);

/// How long no session must have worked before a checkpoint.
const QUIET: Duration = Duration::from_millis(10);

/// How long to wait after a CHECKPOINT DuckDB refused (a write transaction is open): a client
/// idle in one would otherwise be answered by a refused CHECKPOINT every look.
const AFTER_REFUSAL: Duration = Duration::from_millis(200);

/// Sets DuckDB's commit-time threshold to `limit_mib` MiB for the database file at `path` and,
/// unless `on_commit`, starts the thread that checkpoints it in quiet moments. An in-memory
/// database has no log: nothing to do.
pub fn start(
    db: &Arc<Database>,
    activity: Arc<Activity>,
    path: &str,
    limit_mib: u64,
    on_commit: bool,
) -> std::io::Result<()> {
    if path == ":memory:" || path.is_empty() {
        return Ok(());
    }
    let conn = db.connect().map_err(std::io::Error::other)?;
    let limit = limit_mib.saturating_mul(1024 * 1024);
    if let Err(e) = conn.exec(&format!("SET GLOBAL checkpoint_threshold = '{limit}B'")) {
        warn!("could not set checkpoint_threshold: {e}");
    }
    if on_commit {
        return Ok(());
    }
    let wal = PathBuf::from(format!("{path}.wal"));
    std::thread::Builder::new()
        .name("duckmv-checkpoint".into())
        .spawn(move || {
            let mut wait = LOOK;
            loop {
                std::thread::sleep(wait);
                wait = LOOK;
                // No log file: nothing written since the last checkpoint.
                let size = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
                if due(size, limit, activity.quiet_for()) && !checkpoint(&conn, size) {
                    wait = AFTER_REFUSAL;
                }
            }
        })?;
    Ok(())
}

/// Whether to checkpoint a log of `size` bytes with `limit` allowed, no session having worked
/// for `quiet` (None: one is working).
fn due(size: u64, limit: u64, quiet: Option<Duration>) -> bool {
    size >= limit / 2 && quiet.is_some_and(|q| q >= QUIET)
}

/// Checkpoints; false when DuckDB refused.
fn checkpoint(conn: &Conn, size: u64) -> bool {
    match conn.exec("CHECKPOINT") {
        Ok(_) => {
            debug!("checkpointed {size} bytes of log in a quiet moment");
            true
        }
        Err(e) => {
            debug!("checkpoint of {size} bytes of log put off: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_past_half_the_limit_in_quiet_moments_only() {
        let quiet = Some(QUIET);
        assert!(!due(49, 100, quiet));
        assert!(due(50, 100, quiet));
        assert!(due(500, 100, quiet));
        assert!(!due(500, 100, None));
        assert!(!due(500, 100, Some(QUIET / 2)));
    }
}
