//! The endpoint's TLS server config: rustls with the `ring` provider, from PEM files.

use std::io;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::resolved::MetricsTls;

/// Reads the certificate chain and key of `files` into an acceptor (HTTP/1.1 over TLS
/// 1.2 or 1.3). Errors name the file; they never contain key material.
pub(crate) fn acceptor(files: &MetricsTls) -> io::Result<TlsAcceptor> {
    let bad = |what: &str, path: &std::path::Path, e: &dyn std::fmt::Display| {
        io::Error::other(format!("TLS {what} {}: {e}", path.display()))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert_file)
        .map_err(|e| bad("certificate file", &files.cert_file, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad("certificate file", &files.cert_file, &e))?;
    if certs.is_empty() {
        return Err(bad(
            "certificate file",
            &files.cert_file,
            &"no CERTIFICATE block",
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|e| bad("key file", &files.key_file, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("certificate and key", &files.cert_file, &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
