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
mod serve;
mod startup;
pub mod tls;

use std::collections::HashMap;
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
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended, Sync as PgSync, TARGET_TYPE_BYTE_PORTAL,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery,
    TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::mpsc::Receiver;

pub use auth::{AuthMethod, Users};
pub use cancel::CancelRegistry;
pub use inbox::Inbox;
pub use serve::serve;
pub use startup::AuthConfig;

use crate::session::{Ends, Reply, Session, SqlError, TxStatus};
use crate::types::Format;

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
}

fn status(s: TxStatus) -> TransactionStatus {
    match s {
        TxStatus::Idle => TransactionStatus::Idle,
        TxStatus::InBlock => TransactionStatus::Transaction,
        TxStatus::Failed => TransactionStatus::Error,
    }
}

fn fields(e: &SqlError, severity: &str) -> Vec<(u8, String)> {
    let mut f = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', e.code.into()),
        (b'M', e.message.clone()),
    ];
    if let Some(d) = &e.detail {
        f.push((b'D', d.clone()));
    }
    if let Some(h) = &e.hint {
        f.push((b'H', h.clone()));
    }
    f
}

fn user_error(e: SqlError) -> PgWireError {
    let mut info = ErrorInfo::new("ERROR".into(), e.code.into(), e.message);
    info.detail = e.detail;
    info.hint = e.hint;
    PgWireError::UserError(Box::new(info))
}

/// Forwards a job's replies to the client. In the extended protocol an
/// error is returned instead of sent, so pgwire skips to the next Sync.
async fn pump<C>(
    client: &mut C,
    mut rx: Receiver<Reply>,
    extended: bool,
    inbox: &Inbox,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let mut failed = None;
    while let Some(r) = rx.recv().await {
        let msg = match r {
            Reply::RowDescription(cols) => {
                PgWireBackendMessage::RowDescription(RowDescription::new(
                    cols.into_iter()
                        .map(|c| {
                            let fmt = if c.format == Format::Binary { 1 } else { 0 };
                            FieldDescription::new(c.name, 0, 0, c.oid, c.len, c.typmod, fmt)
                        })
                        .collect(),
                ))
            }
            Reply::Rows(rows, n) => {
                for data in rows {
                    client
                        .feed(PgWireBackendMessage::DataRow(DataRow::new(data, n)))
                        .await?;
                }
                continue;
            }
            Reply::Complete(tag) => {
                PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))
            }
            Reply::Suspended => PgWireBackendMessage::PortalSuspended(PortalSuspended::new()),
            Reply::EmptyQuery => {
                PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())
            }
            Reply::Notice(e) => {
                PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields(&e, "NOTICE")))
            }
            Reply::Warning(e) => {
                PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields(&e, "WARNING")))
            }
            Reply::ParameterStatus(k, v) => {
                PgWireBackendMessage::ParameterStatus(ParameterStatus::new(k, v))
            }
            Reply::Error(e) => {
                if extended {
                    failed = Some(e);
                    continue;
                }
                PgWireBackendMessage::ErrorResponse(ErrorResponse::new(fields(&e, "ERROR")))
            }
            Reply::ParseComplete => PgWireBackendMessage::ParseComplete(ParseComplete::new()),
            Reply::BindComplete => PgWireBackendMessage::BindComplete(BindComplete::new()),
            Reply::CloseComplete => PgWireBackendMessage::CloseComplete(CloseComplete::new()),
            Reply::ParameterDescription(oids) => {
                PgWireBackendMessage::ParameterDescription(ParameterDescription::new(oids))
            }
            Reply::NoData => PgWireBackendMessage::NoData(NoData::new()),
            Reply::Status(s) => {
                client.set_transaction_status(status(s));
                continue;
            }
            Reply::CopyInResponse(n) => {
                client.set_state(PgWireConnectionState::CopyInProgress(extended));
                let msg = PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
                    0,
                    n,
                    vec![0; n.max(0) as usize],
                ));
                // The client sends its data only once it has this; over the extended protocol
                // no Sync follows that would flush it (the one pipelined after Execute is
                // ignored during the copy).
                client.send(msg).await?;
                continue;
            }
            Reply::CopyOutResponse(n) => PgWireBackendMessage::CopyOutResponse(
                CopyOutResponse::new(0, n, vec![0; n.max(0) as usize]),
            ),
            Reply::CopyData(d) => {
                PgWireBackendMessage::CopyData(CopyData::new(bytes::Bytes::from(d)))
            }
            Reply::CopyDone => PgWireBackendMessage::CopyDone(CopyDone::new()),
            Reply::Ready(s) => {
                client.set_transaction_status(status(s));
                // As PostgreSQL does: notifications that came while the statement ran (its
                // own included) precede the ReadyForQuery, once no transaction is open.
                if s == TxStatus::Idle {
                    while let Some(n) = inbox.try_next() {
                        client.feed(n).await?;
                    }
                }
                PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status(s)))
            }
        };
        client.feed(msg).await?;
    }
    match failed {
        Some(e) => Err(user_error(e)),
        None => Ok(()),
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
        let rx = self
            .session
            .run(Ends::Replies, move |w, out| w.parse(name, sql, oids, out));
        pump(client, rx, true, &self.inbox).await
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
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
        let rx = self.session.run(Ends::Replies, move |w, out| {
            w.bind(portal, stmt, pf, params, rf, out)
        });
        pump(client, rx, true, &self.inbox).await
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        let rx = if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            self.session
                .run(Ends::Replies, move |w, out| w.describe_portal(&name, out))
        } else {
            self.session.run(Ends::Replies, move |w, out| {
                w.describe_statement(&name, out)
            })
        };
        pump(client, rx, true, &self.inbox).await
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        let max_rows = message.max_rows;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let rx = self
            .session
            .run(Ends::Replies, move |w, out| w.execute(&name, max_rows, out));
        let r = pump(client, rx, true, &self.inbox).await;
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        r
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let rx = self.session.run(Ends::Ready, |w, out| w.sync(out));
        // An error committing the implicit transaction is sent, not returned:
        // ReadyForQuery must follow it.
        let r = pump(client, rx, false, &self.inbox).await;
        client.flush().await?;
        r
    }

    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.unwrap_or_default();
        let rx = if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            self.session
                .run(Ends::Replies, move |w, out| w.close_portal(&name, out))
        } else {
            self.session
                .run(Ends::Replies, move |w, out| w.close_statement(&name, out))
        };
        pump(client, rx, true, &self.inbox).await
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
