//! The notifications waiting for one client (LISTEN / NOTIFY), and when they may be sent.
//!
//! As in PostgreSQL, a NotificationResponse goes out only while no transaction is open and no
//! reply is being sent: right before a ReadyForQuery that leaves the session idle (the reply
//! pump drains the inbox there), and while the connection waits for the client's next message
//! after such a ReadyForQuery (the connection loop waits on the inbox and the socket at once).
//! Inside a transaction block they wait until it ends.

use std::sync::Arc;

use parking_lot::Mutex;
use pgwire::messages::response::NotificationResponse;
use pgwire::messages::PgWireBackendMessage;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::session::Notification;

/// Shared by the reply pump and the connection loop, which never run at the same time.
pub struct Inbox {
    rx: Mutex<UnboundedReceiver<Notification>>,
}

impl Inbox {
    pub fn new(rx: UnboundedReceiver<Notification>) -> Arc<Inbox> {
        Arc::new(Inbox { rx: Mutex::new(rx) })
    }

    /// A notification already waiting, without waiting for one.
    pub fn try_next(&self) -> Option<PgWireBackendMessage> {
        self.rx.lock().try_recv().ok().map(message)
    }

    /// Waits for the next notification; None once none can come (the session ended).
    /// Cancel-safe: a notification is taken only when it is returned.
    pub async fn next(&self) -> Option<PgWireBackendMessage> {
        std::future::poll_fn(|cx| self.rx.lock().poll_recv(cx))
            .await
            .map(message)
    }
}

fn message(n: Notification) -> PgWireBackendMessage {
    PgWireBackendMessage::NotificationResponse(NotificationResponse::new(
        n.pid, n.channel, n.payload,
    ))
}
