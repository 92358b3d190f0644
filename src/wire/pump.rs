//! A job's replies, turned into protocol messages and fed to the client.

use std::fmt::Debug;

use futures::{Sink, SinkExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    BindComplete, CloseComplete, ParseComplete, PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery,
    TransactionStatus,
};
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::mpsc::Receiver;

use super::inbox::Inbox;
use crate::session::{Reply, SqlError, TxStatus};
use crate::types::Format;

pub(super) fn status(s: TxStatus) -> TransactionStatus {
    match s {
        TxStatus::Idle => TransactionStatus::Idle,
        TxStatus::InBlock => TransactionStatus::Transaction,
        TxStatus::Failed => TransactionStatus::Error,
    }
}

pub(super) fn fields(e: &SqlError, severity: &str) -> Vec<(u8, String)> {
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

pub(super) fn user_error(e: SqlError) -> PgWireError {
    let mut info = ErrorInfo::new("ERROR".into(), e.code.into(), e.message);
    info.detail = e.detail;
    info.hint = e.hint;
    PgWireError::UserError(Box::new(info))
}

/// Forwards a job's replies to the client. In the extended protocol an
/// error is returned instead of sent, so pgwire skips to the next Sync.
pub(super) async fn pump<C>(
    client: &mut C,
    rx: Receiver<Reply>,
    extended: bool,
    inbox: &Inbox,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match forward(client, rx, extended, !extended, inbox).await? {
        Some(e) if extended => Err(user_error(e)),
        _ => Ok(()),
    }
}

/// Forwards a job's replies to the client; `extended`: the job is an extended-protocol message
/// (a COPY it starts ends at a Sync). An error is sent among the replies when `send_errors`,
/// else returned.
pub(super) async fn forward<C>(
    client: &mut C,
    mut rx: Receiver<Reply>,
    extended: bool,
    send_errors: bool,
    inbox: &Inbox,
) -> PgWireResult<Option<SqlError>>
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
                let msg = ErrorResponse::new(fields(&e, "ERROR"));
                failed = Some(e);
                if !send_errors {
                    continue;
                }
                PgWireBackendMessage::ErrorResponse(msg)
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
            Reply::CopyInResponse { columns, binary } => {
                client.set_state(PgWireConnectionState::CopyInProgress(extended));
                let format = i8::from(binary);
                let msg = PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
                    format,
                    columns,
                    vec![format as i16; columns.max(0) as usize],
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
    Ok(failed)
}
