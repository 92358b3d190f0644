//! What every part of a session works with: its DuckDB connection, the server's shared state,
//! the session's settings and who connected. The protocol (`worker.rs`), the transaction
//! machine (`transaction.rs`) and the statement code (`exec.rs`, `matview.rs`, `copy.rs`) each
//! take this, not the whole session.

use std::sync::Arc;

use super::ivm_sql::HotStatements;
use super::shared::Shared;
use crate::engine::Conn;

pub struct Context {
    /// Prepared REFRESH statements; declared before `conn` so they are dropped first.
    pub hot: HotStatements,
    pub conn: Conn,
    pub shared: Arc<Shared>,
    pub settings: crate::compat::Settings,
    /// The database name the client connected to: shown as the current database, and accepted
    /// as the catalog part of three-part names.
    pub database: String,
    /// Whether the user who connected is a superuser (`--superuser`).
    pub superuser: bool,
}

impl Context {
    pub fn new(conn: Conn, shared: Arc<Shared>) -> Self {
        if let Err(e) = crate::compat::session_init(&conn) {
            tracing::warn!("session setup failed: {e}");
        }
        Context {
            hot: Default::default(),
            conn,
            shared,
            settings: Default::default(),
            database: String::new(),
            superuser: false,
        }
    }

    /// Who connected: the database name becomes the session's current database.
    pub fn identify(&mut self, user: String, database: String) {
        self.superuser = self.shared.policy.superusers.contains(&user);
        let set = format!(
            "SET VARIABLE duckmv_database = '{}'",
            database.replace('\'', "''")
        );
        if let Err(e) = self.conn.exec(&set) {
            tracing::warn!("could not set the session's database name: {e}");
        }
        self.database = database;
    }

    /// The guard's checks (see `guard.rs`) for a statement of `kind`, with this session's rights.
    pub fn guard(
        &self,
        s: &crate::sql::Lexed,
        kind: crate::engine::StatementKind,
    ) -> Result<Option<String>, super::reply::SqlError> {
        super::guard::check(s, kind, self.superuser, &self.shared.policy)
    }
}
