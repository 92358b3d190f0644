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

mod spool;
use spool::Spool;

pub async fn run(config: Config) -> anyhow::Result<()> {
    let db = Database::open(&config.database)
        .with_context(|| format!("opening database {}", config.database))?;
    // COPY FROM STDIN data is spooled here for DuckDB to load.
    let spool = Spool::create()?;
    if !config.allow_file_access {
        db.restrict_files(spool.path())?;
    }
    let policy = crate::session::Policy {
        file_access: config.allow_file_access,
        superusers: config.superusers.iter().cloned().collect(),
    };
    let shared = Arc::new(Shared::new(db.clone(), policy, spool.path().to_path_buf()));
    crate::session::bootstrap(&shared)
        .map_err(|e| anyhow::anyhow!("preparing the database: {} ({})", e.message, e.code))?;
    crate::session::start_log_vacuum(&shared)
        .map_err(|e| anyhow::anyhow!("starting the change-log vacuum: {}", e.message))?;
    crate::session::checkpoints::start(
        &db,
        shared.activity.clone(),
        &config.database,
        config.max_wal_size,
        config.commit_checkpoints,
    )
    .context("starting the background checkpoints")?;
    let refresher = crate::session::refresher::Refresher::start(shared.clone())
        .context("starting the background refresher")?;

    let auth = auth_config(&config)?;
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(c), Some(k)) => Some(crate::wire::tls::acceptor(c, k)?),
        _ => None,
    };
    let listener = TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() && auth.users.is_none() && !config.allow_unauthenticated_remote {
        anyhow::bail!(
            "refusing to listen on {local} without authentication: configure users (--users-file or DUCKMV_USERS) or pass --allow-unauthenticated-remote"
        );
    }
    // Signal handlers exist before anyone is told the server is ready.
    let shutdown = shutdown_signal()?;
    info!("listening on {local}");

    let registry = Arc::new(CancelRegistry::default());
    let mut connections = JoinSet::new();
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
                let handlers = Connection::new(session, registry.clone(), &auth);
                let (tls, inbox) = (tls.clone(), handlers.inbox());
                connections.spawn(crate::wire::serve(stream, tls, handlers, inbox));
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
    // A scheduled refresh under way finishes (or is rolled back) before the checkpoint.
    tokio::task::block_in_place(|| refresher.stop());
    // What the last refreshes did, before the database closes.
    shared.refresh_stats.flush();
    let conn = db.connect()?;
    // The background checkpoint or change-log vacuum may hold DuckDB's checkpoint lock for a
    // moment: a CHECKPOINT then fails at once rather than waiting, so it is tried again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while let Err(e) = conn.exec("CHECKPOINT") {
        if std::time::Instant::now() >= deadline {
            warn!("checkpoint failed: {e}");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    info!("stopped");
    Ok(())
}

fn auth_config(config: &Config) -> anyhow::Result<crate::wire::AuthConfig> {
    use crate::wire::{AuthMethod, Users};
    let from_env = std::env::var("DUCKMV_USERS")
        .unwrap_or_default()
        .replace(',', "\n");
    let mut passwords =
        Users::parse_lines(&from_env).map_err(|e| anyhow::anyhow!("DUCKMV_USERS: {e}"))?;
    if let Some(path) = &config.users_file {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        passwords.extend(Users::parse_lines(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?);
    }
    let method = config.auth.unwrap_or(if passwords.is_empty() {
        AuthMethod::Trust
    } else {
        AuthMethod::Scram
    });
    if method != AuthMethod::Trust && passwords.is_empty() {
        anyhow::bail!("--auth {method:?} needs users (--users-file or DUCKMV_USERS)");
    }
    let users =
        (method != AuthMethod::Trust).then(|| std::sync::Arc::new(Users::new(method, passwords)));
    Ok(crate::wire::AuthConfig {
        users,
        tls_only: config.tls_only,
    })
}

fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
