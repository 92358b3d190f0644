//! One client connection, from the accepted socket to its close.
//!
//! pgwire's own loop (`process_socket`) is followed step for step, with three differences: the
//! byte stream passes through [`Guarded`], so a malformed message ends the connection with
//! FATAL 08P01 instead of a decoder panic; a panic anywhere in the connection's handling is
//! caught here, so it ends this connection only; and while the session is idle the loop waits
//! for notifications (LISTEN) as well as for the client's next message (see `inbox.rs`).

use crate::sqlstate::SqlState;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use super::guard::Guarded;
use super::inbox::Inbox;

/// How long a client may take to start up and authenticate (as pgwire and PostgreSQL allow).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves one connection; never panics.
pub async fn serve<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
    inbox: Arc<Inbox>,
) {
    let peer = tcp.peer_addr().ok();
    match std::panic::AssertUnwindSafe(run(tcp, tls, handlers, inbox))
        .catch_unwind()
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!("connection {peer:?} ended: {e}"),
        Err(_) => tracing::error!("connection {peer:?} ended by a panic in its handling"),
    }
}

async fn run<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
    inbox: Arc<Inbox>,
) -> std::io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        s = negotiate_tls(tcp, tls) => s?,
    };
    // None: the client asked for TLS directly and the server has none.
    let Some(socket) = negotiated else {
        return Ok(());
    };
    let old = socket.into_parts();
    let mut parts = FramedParts::new(Guarded::new(old.io, old.read_buf), old.codec);
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);
    socket.set_state(PgWireConnectionState::AwaitingStartup);

    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    // idle: the last reply ended with a ReadyForQuery outside any transaction, so notifications
    // may go out; inbox_open: the session can still send some.
    let (mut idle, mut inbox_open) = (false, true);
    loop {
        let in_startup = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = if in_startup {
            tokio::select! {
                _ = &mut startup_timeout => return Ok(()),
                m = socket.next() => m,
            }
        } else if idle {
            next_while_idle(&mut socket, &inbox, &mut inbox_open).await
        } else {
            socket.next().await
        };
        let msg = match next {
            None => return Ok(()),
            Some(Ok(m)) => m,
            Some(Err(e)) => return refuse(&mut socket, e).await,
        };
        // Terminate: the client is leaving; some wait for the server to close first.
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(e) => e,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let ends_ready = ends_with_ready(&msg, extended_query);
        let r = process_message(
            msg,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(e) = r {
            let fatal = e.is_fatal();
            process_error(&mut socket, e, extended_query).await?;
            if fatal {
                return Ok(());
            }
        }
        if is_cancel {
            return Ok(());
        }
        idle = ends_ready && outside_transaction(&socket);
    }
}

/// Whether the connection is ready for a query with no transaction open.
fn outside_transaction(socket: &impl ClientInfo) -> bool {
    matches!(socket.state(), PgWireConnectionState::ReadyForQuery)
        && matches!(socket.transaction_status(), TransactionStatus::Idle)
}

/// Whether the reply to `msg` ends with a ReadyForQuery (COPY's only in the simple protocol).
fn ends_with_ready(msg: &PgWireFrontendMessage, extended_query: bool) -> bool {
    match msg {
        PgWireFrontendMessage::Query(_) | PgWireFrontendMessage::Sync(_) => true,
        PgWireFrontendMessage::CopyDone(_) | PgWireFrontendMessage::CopyFail(_) => !extended_query,
        _ => false,
    }
}

/// The client's next message, read while the session is idle: notifications that come
/// meanwhile are sent as they come, each batch in one flush. `open` turns false once the
/// session can send none.
async fn next_while_idle<S>(
    socket: &mut S,
    inbox: &Inbox,
    open: &mut bool,
) -> Option<Result<PgWireFrontendMessage, PgWireError>>
where
    S: futures::Stream<Item = Result<PgWireFrontendMessage, PgWireError>>
        + futures::Sink<PgWireBackendMessage, Error = std::io::Error>
        + Unpin,
{
    while *open {
        // Both are cancel-safe: what the branch not taken would have read stays for later.
        let first = tokio::select! {
            m = socket.next() => return m,
            n = inbox.next() => n,
        };
        let Some(first) = first else {
            *open = false;
            break;
        };
        let mut batch = Some(first);
        while let Some(n) = batch.take().or_else(|| inbox.try_next()) {
            if let Err(e) = socket.feed(n).await {
                return Some(Err(e.into()));
            }
        }
        if let Err(e) = socket.flush().await {
            return Some(Err(e.into()));
        }
    }
    socket.next().await
}

/// A message that could not be read: FATAL 08P01, then the connection closes.
async fn refuse<S>(socket: &mut S, e: PgWireError) -> std::io::Result<()>
where
    S: futures::Sink<PgWireBackendMessage, Error = std::io::Error> + Unpin,
{
    let message = match &e {
        PgWireError::IoError(io) if io.kind() == std::io::ErrorKind::InvalidData => io.to_string(),
        PgWireError::IoError(io) => return Err(std::io::Error::new(io.kind(), io.to_string())),
        other => other.to_string(),
    };
    let info = ErrorInfo::new("FATAL".into(), SqlState::PROTOCOL_VIOLATION.into(), message);
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(info.into()))
        .await;
    Ok(())
}
