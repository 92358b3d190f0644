//! The PostgreSQL protocol side: pgwire handlers that forward each message
//! to the client's session and turn its replies into protocol messages.
//!
//! The handlers override pgwire's message callbacks rather than its
//! `do_query` hooks: the session decides statement splitting, transaction
//! state, portals and row encoding, and this layer only pumps replies.

use crate::sqlstate::SqlState;
mod auth;
mod cancel;
mod guard;
mod inbox;
mod pump;
mod serve;
mod startup;
pub mod tls;

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::portal::Portal as PgPortal;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{Response, Tag};
use pgwire::api::stmt::NoopQueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::extendedquery::{
    Bind, Close, Describe, Execute, Flush as PgFlush, Parse, Sync as PgSync,
    TARGET_TYPE_BYTE_PORTAL,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::mpsc::Receiver;

pub use auth::{AuthMethod, Users};
pub use cancel::CancelRegistry;
pub use inbox::Inbox;
pub use serve::serve;
pub use startup::AuthConfig;

use crate::session::{Ends, Reply, Session, SqlError};
use pump::{forward, pump, user_error};

/// The handlers of one connection.
pub struct Connection {
    handler: Arc<QueryHandler>,
    startup: Arc<startup::Startup>,
    cancel: Arc<cancel::Cancel>,
}

impl Connection {
    pub fn new(mut session: Session, registry: Arc<CancelRegistry>, auth: &AuthConfig) -> Self {
        let (pid, secret) = registry.register(session.interrupter());
        // Notifications the session sends carry the pid its client knows it by.
        session.set_backend_pid(pid);
        let (_, none) = tokio::sync::mpsc::unbounded_channel();
        let inbox = Inbox::new(session.take_notifications().unwrap_or(none));
        Connection {
            handler: Arc::new(QueryHandler {
                session,
                identified: Default::default(),
                inbox,
                queued: Default::default(),
            }),
            startup: Arc::new(startup::Startup::new(pid, secret, auth)),
            cancel: Arc::new(cancel::Cancel { registry, pid }),
        }
    }

    /// The client's notifications, for the connection loop to send while it waits.
    pub fn inbox(&self) -> Arc<Inbox> {
        self.handler.inbox.clone()
    }
}

impl PgWireServerHandlers for Connection {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.handler.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.handler.clone()
    }
    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }
    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }
    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.handler.clone()
    }
}

pub struct QueryHandler {
    session: Session,
    /// Whether the session was told who connected (user, database), before its first statement.
    identified: std::sync::atomic::AtomicBool,
    /// The client's notifications: sent before a ReadyForQuery that leaves the session idle.
    inbox: Arc<Inbox>,
    /// The replies of extended-protocol messages sent to the session and not yet to the
    /// client, in order (see [`QueryHandler::queue`]).
    queued: parking_lot::Mutex<VecDeque<Receiver<Reply>>>,
}

impl QueryHandler {
    /// Tells the session the user and database the client named at start-up (PostgreSQL's
    /// default database is the user's name). Queued before the first statement's job.
    fn identify<C: ClientInfo>(&self, client: &C) {
        use std::sync::atomic::Ordering;
        if self.identified.swap(true, Ordering::SeqCst) {
            return;
        }
        let meta = client.metadata();
        let user = meta.get("user").cloned().unwrap_or_default();
        let database = meta
            .get("database")
            .filter(|d| !d.is_empty())
            .cloned()
            .unwrap_or_else(|| user.clone());
        drop(
            self.session
                .run(Ends::Replies, move |w, _| w.identify(user, database)),
        );
    }

    /// Sends an extended-protocol message to the session without waiting for its replies:
    /// a client sends Parse, Bind, Describe and Execute at once and reads nothing before its
    /// Sync or Flush, so the session works through them while the next arrive, and their
    /// replies go out together (one round trip to the session thread per message cost more
    /// than DuckDB's own work for a short statement).
    fn queue<F>(&self, f: F)
    where
        F: FnOnce(&mut crate::session::Worker, &crate::session::Out) + Send + 'static,
    {
        let rx = self.session.run(Ends::Extended, f);
        self.queued.lock().push_back(rx);
    }

    /// Sends the replies of the queued messages, in order, errors among them; true when one
    /// failed (the session then discarded those after it, until Sync).
    async fn send_queued<C>(&self, client: &mut C) -> PgWireResult<bool>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut failed = false;
        loop {
            let next = self.queued.lock().pop_front();
            let Some(rx) = next else {
                return Ok(failed);
            };
            failed |= forward(client, rx, true, true, &self.inbox)
                .await?
                .is_some();
        }
    }
}

#[async_trait]
impl SimpleQueryHandler for QueryHandler {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.send_queued(client).await? {
            // After a failed extended-protocol message everything up to Sync is discarded.
            client.set_state(PgWireConnectionState::AwaitingSync);
            client.flush().await?;
            return Ok(());
        }
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        self.identify(client);
        client.set_state(PgWireConnectionState::QueryInProgress);
        let text = query.query;
        let rx = self
            .session
            .run(Ends::Ready, move |w, out| w.simple_query(&text, out));
        let r = pump(client, rx, false, &self.inbox).await;
        // COPY FROM STDIN leaves the connection in copy mode; ReadyForQuery
        // follows the data.
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        client.flush().await?;
        r
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        unreachable!("on_query is overridden")
    }
}

#[async_trait]
impl ExtendedQueryHandler for QueryHandler {
    type Statement = String;
    type QueryParser = NoopQueryParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::new(NoopQueryParser)
    }

    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.identify(client);
        let name = message.name.unwrap_or_default();
        let (sql, oids) = (message.query, message.type_oids);
        self.queue(move |w, out| w.parse(name, sql, oids, out));
        Ok(())
    }

    async fn on_bind<C>(&self, _client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let portal = message.portal_name.unwrap_or_default();
        let stmt = message.statement_name.unwrap_or_default();
        let (pf, params, rf) = (
            message.parameter_format_codes,
            message.parameters,
            message.result_column_format_codes,
        );
        self.queue(move |w, out| w.bind(portal, stmt, pf, params, rf, out));
        Ok(())
    }

    async fn on_describe<C>(&self, _client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            self.queue(move |w, out| w.describe_portal(&name, out));
        } else {
            self.queue(move |w, out| w.describe_statement(&name, out));
        }
        Ok(())
    }

    async fn on_execute<C>(&self, _client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        let max_rows = message.max_rows;
        self.queue(move |w, out| w.execute(&name, max_rows, out));
        Ok(())
    }

    async fn on_flush<C>(&self, client: &mut C, _message: PgFlush) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.send_queued(client).await?;
        client.flush().await?;
        Ok(())
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.send_queued(client).await?;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            // An Execute just started COPY FROM STDIN: as PostgreSQL does, the Sync a client
            // pipelines after it is ignored; the one after CopyDone ends the copy.
            client.flush().await?;
            return Ok(());
        }
        let rx = self.session.run(Ends::Ready, |w, out| w.sync(out));
        // An error committing the implicit transaction is sent, not returned:
        // ReadyForQuery must follow it.
        let r = pump(client, rx, false, &self.inbox).await;
        client.flush().await?;
        r
    }

    async fn on_close<C>(&self, _client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            self.queue(move |w, out| w.close_portal(&name, out));
        } else {
            self.queue(move |w, out| w.close_statement(&name, out));
        }
        Ok(())
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        _portal: &PgPortal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Ok(Response::Execution(Tag::new("unused")))
    }
}

#[async_trait]
impl pgwire::api::copy::CopyHandler for QueryHandler {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let data = copy_data.data;
        let rx = self
            .session
            .run(Ends::Replies, move |w, out| w.copy_data(&data, out));
        pump(client, rx, true, &self.inbox).await
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let rx = self.session.run(Ends::Replies, |w, out| w.copy_done(out));
        pump(client, rx, true, &self.inbox).await
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let msg = fail.message;
        let rx = self
            .session
            .run(Ends::Replies, move |w, out| w.copy_fail(&msg, out));
        match pump(client, rx, true, &self.inbox).await {
            Err(e) => e,
            Ok(()) => user_error(SqlError::new(
                SqlState::QUERY_CANCELED,
                "COPY from stdin failed",
            )),
        }
    }
}

/// Server parameters reported at startup, as PostgreSQL 16 would.
pub fn server_parameters(client_meta: &HashMap<String, String>) -> Vec<(String, String)> {
    let app = client_meta
        .get("application_name")
        .cloned()
        .unwrap_or_default();
    let user = client_meta
        .get("user")
        .cloned()
        .unwrap_or_else(|| "duckmv".into());
    vec![
        ("server_version".into(), "16.6".into()),
        ("server_encoding".into(), "UTF8".into()),
        ("client_encoding".into(), "UTF8".into()),
        ("DateStyle".into(), "ISO, MDY".into()),
        ("IntervalStyle".into(), "postgres".into()),
        ("TimeZone".into(), "UTC".into()),
        ("integer_datetimes".into(), "on".into()),
        ("standard_conforming_strings".into(), "on".into()),
        ("is_superuser".into(), "on".into()),
        ("in_hot_standby".into(), "off".into()),
        ("default_transaction_read_only".into(), "off".into()),
        ("search_path".into(), "\"$user\", public".into()),
        ("application_name".into(), app),
        ("session_authorization".into(), user),
    ]
}
