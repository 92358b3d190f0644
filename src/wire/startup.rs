//! Connection start-up: authentication (trust on the default loopback
//! setup, or passwords checked by pgwire's mechanisms), the TLS-only rule,
//! and the parameters PostgreSQL reports to a new client.

use crate::sqlstate::SqlState;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::cleartext::CleartextPasswordAuthStartupHandler;
use pgwire::api::auth::md5pass::Md5PasswordAuthStartupHandler;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::auth::{AuthMethod, Store, Users, SCRAM_ITERATIONS};

/// How connections must authenticate (shared by all connections).
#[derive(Debug)]
pub struct AuthConfig {
    pub users: Option<Arc<Users>>,
    pub tls_only: bool,
}

pub struct Params;

impl ServerParameterProvider for Params {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        Some(
            super::server_parameters(client.metadata())
                .into_iter()
                .collect(),
        )
    }
}

/// Hands pgwire's handlers this session's (pid, secret) for cancel requests.
struct FixedKey(i32, i32);

impl PidSecretKeyGenerator for FixedKey {
    fn generate(&self, _client: &dyn ClientInfo) -> (i32, SecretKey) {
        (self.0, SecretKey::I32(self.1))
    }
}

enum Method {
    Trust,
    Cleartext(CleartextPasswordAuthStartupHandler<Store, Params>),
    Md5(Md5PasswordAuthStartupHandler<Store, Params>),
    Scram(SASLAuthStartupHandler<Params>),
}

pub struct Startup {
    pid: i32,
    secret: i32,
    tls_only: bool,
    method: Method,
}

impl Startup {
    pub fn new(pid: i32, secret: i32, auth: &AuthConfig) -> Self {
        let key = Arc::new(FixedKey(pid, secret));
        let method = match &auth.users {
            None => Method::Trust,
            Some(users) => match users.method {
                AuthMethod::Trust => Method::Trust,
                AuthMethod::Password => Method::Cleartext(
                    CleartextPasswordAuthStartupHandler::new(Store(users.clone()), Params)
                        .with_pid_secret_key_generator(key),
                ),
                AuthMethod::Md5 => Method::Md5(
                    Md5PasswordAuthStartupHandler::new(
                        Arc::new(Store(users.clone())),
                        Arc::new(Params),
                    )
                    .with_pid_secret_key_generator(key),
                ),
                AuthMethod::Scram => {
                    let mut scram = ScramAuth::new(Arc::new(Store(users.clone())));
                    scram.set_iterations(SCRAM_ITERATIONS);
                    Method::Scram(
                        SASLAuthStartupHandler::new(Arc::new(Params))
                            .with_scram(scram)
                            .with_pid_secret_key_generator(key),
                    )
                }
            },
        };
        Startup {
            pid,
            secret,
            tls_only: auth.tls_only,
            method,
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.tls_only
            && matches!(message, PgWireFrontendMessage::Startup(_))
            && !client.is_secure()
        {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                SqlState::INVALID_AUTHORIZATION_SPECIFICATION.into(),
                "this server accepts only TLS connections (use sslmode=require)".into(),
            ))));
        }
        match &self.method {
            Method::Trust => {
                if let PgWireFrontendMessage::Startup(ref startup) = message {
                    protocol_negotiation(client, startup).await?;
                    save_startup_parameters_to_metadata(client, startup);
                    client.set_pid_and_secret_key(self.pid, SecretKey::I32(self.secret));
                    finish_authentication(client, &Params).await?;
                }
                Ok(())
            }
            Method::Cleartext(h) => h.on_startup(client, message).await,
            Method::Md5(h) => h.on_startup(client, message).await,
            Method::Scram(h) => h.on_startup(client, message).await,
        }
    }
}
