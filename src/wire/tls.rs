//! TLS with rustls: the acceptor pgwire uses after an SSLRequest.

use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

pub fn acceptor(cert_path: &str, key_path: &str) -> anyhow::Result<TlsAcceptor> {
    let certs = rustls_pemfile::certs(&mut BufReader::new(
        File::open(cert_path).with_context(|| format!("opening {cert_path}"))?,
    ))
    .collect::<Result<Vec<_>, _>>()
    .with_context(|| format!("reading certificates from {cert_path}"))?;
    if certs.is_empty() {
        return Err(anyhow!("no certificate in {cert_path}"));
    }
    let key = rustls_pemfile::private_key(&mut BufReader::new(
        File::open(key_path).with_context(|| format!("opening {key_path}"))?,
    ))
    .with_context(|| format!("reading the key in {key_path}"))?
    .ok_or_else(|| anyhow!("no private key in {key_path}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not match")?;
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
