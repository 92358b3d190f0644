//! What committed refreshes did, held by the server until it writes them to
//! `_duckmv.refresh_stats` (see `ivm::refresh_stats`) on a connection of its own.
//!
//! A refresh's transaction no longer writes them: that UPDATE was a statement and about 1 ms of
//! every refresh. They are written by the background vacuum once a second, and at once before
//! any statement that names `duckmv.views`, so a session that refreshed a view and then reads
//! `duckmv.views` sees that refresh. A server that is killed loses at most the last second of
//! them: they describe refreshes, they are not data.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::ivm_sql::ConnSql;
use crate::engine::Conn;
use crate::ivm::{self, RefreshStats};
use crate::sql::lex::Tok;
use crate::sql::Lexed;

#[derive(Default)]
pub struct RefreshStatsStore {
    /// The last committed refresh of each view not yet written.
    pending: Mutex<HashMap<i64, RefreshStats>>,
    /// The connection that writes them (None until the server starts its background work, and
    /// in tests of sessions without one: then they stay in memory).
    conn: Mutex<Option<Conn>>,
}

impl RefreshStatsStore {
    /// Gives the store the connection it writes with.
    pub fn attach(&self, conn: Conn) {
        *self.conn.lock() = Some(conn);
    }

    /// Refreshes whose transaction committed.
    pub fn committed(&self, stats: Vec<RefreshStats>) {
        if stats.is_empty() {
            return;
        }
        let mut pending = self.pending.lock();
        for s in stats {
            pending.insert(s.view_id, s);
        }
    }

    /// Writes what is pending in one transaction. On failure (a conflict with a DROP of the
    /// schema, a full disk) the refreshes stay pending unless a newer one of the same view came.
    pub fn flush(&self) {
        let conn = self.conn.lock();
        let Some(conn) = conn.as_ref() else {
            return;
        };
        let stats: Vec<RefreshStats> = self.pending.lock().drain().map(|(_, s)| s).collect();
        if stats.is_empty() {
            return;
        }
        let mut db = ConnSql(conn);
        let written = ivm::Sql::exec(&mut db, "BEGIN")
            .map_err(ivm::IvmError::from)
            .and_then(|_| ivm::record_refreshes(&mut db, &stats))
            .and_then(|_| ivm::Sql::exec(&mut db, "COMMIT").map_err(ivm::IvmError::from));
        if let Err(e) = written {
            let _ = ivm::Sql::exec(&mut db, "ROLLBACK");
            tracing::debug!("could not record refresh statistics: {e}");
            let mut pending = self.pending.lock();
            for s in stats {
                pending.entry(s.view_id).or_insert(s);
            }
        }
    }

    /// Forgets the recorded refreshes of dropped views (autocommit, on the store's connection).
    pub fn prune(&self) {
        if let Some(conn) = self.conn.lock().as_ref() {
            if let Err(e) = ivm::prune_refreshes(&mut ConnSql(conn)) {
                tracing::debug!("could not prune refresh statistics: {e}");
            }
        }
    }
}

/// Whether a statement names `duckmv.views`: it is about to read the refresh statistics.
pub fn reads_stats(text: &Lexed) -> bool {
    text.tokens().windows(3).any(|w| {
        let is = |t: &crate::sql::lex::Token, name: &str| {
            matches!(t.kind, Tok::Word | Tok::Ident) && t.text.eq_ignore_ascii_case(name)
        };
        is(&w[0], "duckmv") && w[1].text == "." && is(&w[2], "views")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_naming_duckmv_views_reads_them() {
        let reads = |s: &str| reads_stats(&Lexed::new(s.to_string()));
        assert!(reads("SELECT * FROM duckmv.views"));
        assert!(reads("select name from DUCKMV . \"views\" where true"));
        assert!(!reads("SELECT * FROM views"));
        assert!(!reads("SELECT 'duckmv.views'"));
        assert!(!reads("SELECT * FROM duckmv.other"));
    }
}
