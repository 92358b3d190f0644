//! What every part of a session works with: its DuckDB connection, the server's shared state,
//! the session's settings and who connected. The protocol (`worker.rs`), the transaction
//! machine (`transaction.rs`) and the statement code (`exec.rs`, `matview.rs`, `copy.rs`) each
//! take this, not the whole session.

use std::sync::Arc;

use super::shared::Shared;
use crate::engine::Conn;

/// Where the notifications for this session's client go.
pub type NoteSender = tokio::sync::mpsc::UnboundedSender<super::notify::Notification>;

pub struct Context {
    pub conn: Conn,
    pub shared: Arc<Shared>,
    pub settings: crate::compat::Settings,
    /// The database name the client connected to: shown as the current database, and accepted
    /// as the catalog part of three-part names.
    pub database: String,
    /// Whether the user who connected is a superuser (`--superuser`).
    pub superuser: bool,
    /// The session's backend pid and LISTEN subscriptions (see `notify.rs`).
    pub notify: super::notify::Listener,
}

impl Context {
    pub fn new(conn: Conn, shared: Arc<Shared>, inbox: NoteSender) -> Self {
        if let Err(e) = crate::compat::session_init(&conn) {
            tracing::warn!("session setup failed: {e}");
        }
        let notify = super::notify::Listener::new(shared.notify.clone(), inbox);
        Context {
            notify,
            conn,
            shared,
            settings: Default::default(),
            database: String::new(),
            superuser: false,
        }
    }

    /// Who connected: the database name becomes the session's current database, the user its
    /// `current_user`.
    pub fn identify(&mut self, user: String, database: String) {
        self.superuser = self.shared.policy.superusers.contains(&user);
        let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
        let set = format!(
            "SET VARIABLE duckmv_database = {}; SET VARIABLE duckmv_user = {}",
            quote(&database),
            quote(&user)
        );
        if let Err(e) = self.conn.exec_batch(&set) {
            tracing::warn!("could not set the session's database and user names: {e}");
        }
        self.database = database;
    }

    /// The backend pid the connection was given: notifications this session sends carry it, and
    /// `pg_backend_pid()` returns it.
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.notify.set_pid(pid);
        if let Err(e) = self
            .conn
            .exec(&format!("SET VARIABLE duckmv_backend_pid = {pid}"))
        {
            tracing::warn!("could not set the session's backend pid: {e}");
        }
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
