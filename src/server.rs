//! The server: opens the database, accepts connections, and shuts down
//! cleanly on SIGINT/SIGTERM (connections closed, database checkpointed).

use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::config::Config;
use crate::engine::Database;
use crate::session::{Session, Shared};
use crate::wire::{CancelRegistry, Connection};

pub async fn run(config: Config) -> anyhow::Result<()> {
    let db = Database::open(&config.database)
        .with_context(|| format!("opening database {}", config.database))?;
    let shared = Arc::new(Shared::new(db.clone()));
    crate::session::bootstrap(&shared).context("preparing the database")?;

    let listener = TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    info!("listening on {}", listener.local_addr()?);

    let registry = Arc::new(CancelRegistry::default());
    let mut connections = JoinSet::new();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => { warn!("accept failed: {e}"); continue; }
                };
                let _ = stream.set_nodelay(true);
                let session = match Session::start(shared.clone()) {
                    Ok(s) => s,
                    Err(e) => { warn!("could not start a session for {peer}: {e}"); continue; }
                };
                let handlers = Connection::new(session, registry.clone());
                connections.spawn(async move {
                    if let Err(e) = pgwire::tokio::process_socket(stream, None, handlers).await {
                        tracing::debug!("connection {peer} ended: {e}");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = &mut shutdown => break,
        }
    }

    info!("shutting down");
    registry.interrupt_all();
    connections.shutdown().await;
    // Give session workers a moment to notice their clients are gone.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let conn = db.connect()?;
    if let Err(e) = conn.exec("CHECKPOINT") {
        warn!("checkpoint failed: {e}");
    }
    info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
