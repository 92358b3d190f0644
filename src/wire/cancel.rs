//! Cancel requests: a new connection names a session by (pid, secret) and
//! asks DuckDB to interrupt whatever that session runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;

use crate::engine::Interrupter;

#[derive(Default)]
pub struct CancelRegistry {
    next_pid: AtomicI32,
    sessions: Mutex<HashMap<i32, (i32, Arc<Interrupter>)>>,
}

impl CancelRegistry {
    /// Registers a session; returns its (pid, secret key).
    pub fn register(&self, interrupter: Arc<Interrupter>) -> (i32, i32) {
        let pid = 1000 + self.next_pid.fetch_add(1, Ordering::Relaxed);
        let secret: i32 = rand::random();
        self.sessions.lock().insert(pid, (secret, interrupter));
        (pid, secret)
    }

    pub fn unregister(&self, pid: i32) {
        self.sessions.lock().remove(&pid);
    }

    /// Interrupts every session's running query (server shutdown).
    pub fn interrupt_all(&self) {
        for (_, int) in self.sessions.lock().values() {
            int.interrupt();
        }
    }

    fn cancel(&self, pid: i32, secret: &SecretKey) {
        let sessions = self.sessions.lock();
        if let Some((s, int)) = sessions.get(&pid) {
            // The request's key may be decoded as bytes: compare encodings.
            if secret.to_bytes() == SecretKey::I32(*s).to_bytes() {
                int.interrupt();
            }
        }
    }
}

pub struct Cancel {
    pub registry: Arc<CancelRegistry>,
    pub pid: i32,
}

impl Drop for Cancel {
    fn drop(&mut self) {
        self.registry.unregister(self.pid);
    }
}

#[async_trait]
impl CancelHandler for Cancel {
    async fn on_cancel_request(&self, req: CancelRequest) {
        self.registry.cancel(req.pid, &req.secret_key);
    }
}
