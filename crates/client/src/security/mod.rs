//! Connection security: TLS (rustls) and SASL authentication (KIP-152, re-authentication
//! per KIP-368), applied to every connection the client opens — bootstrap, control,
//! produce and fetch, to every broker named by Metadata.
//!
//! Order on a new connection: TCP connect → TLS handshake (within
//! [`TlsConfig::handshake_timeout`]) → ApiVersions → SaslHandshake v1 → SaslAuthenticate
//! rounds (highest version both support) → ready. When the broker grants a session
//! lifetime (SaslAuthenticate v1+), the connection re-authenticates in band before it
//! expires: new requests wait at a gate while the exchange runs, requests already in
//! flight are answered in order and never failed.
//!
//! Rules:
//! - Hostname verification is always on; there is no switch to turn it off.
//!   [`TlsConfig::server_name`] only changes the name verified.
//! - Authentication and authorization failures are [`ErrorKind::Authentication`] /
//!   Kafka authorization codes: never retried, and the message names the broker, the
//!   mechanism and the user — never the secret.
//! - Secrets are held in [`Secret`], whose `Debug` and `Display` print `<redacted>`.
//!
//! [`ErrorKind::Authentication`]: crate::error::ErrorKind::Authentication

use std::fmt;

pub(crate) mod config;
#[cfg(feature = "msk-iam")]
pub mod msk;
pub mod oauth;
pub(crate) mod sasl;
pub mod scram;
pub mod tls;

pub use config::{
    CaRoots, ClientCert, SaslConfig, ScramHash, Secret, Security, TlsConfig, Token, TokenProvider,
    protocol_name,
};
#[cfg(feature = "msk-iam")]
pub use msk::MskIamTokenProvider;
pub use oauth::{FileTokenProvider, OidcTokenProvider};
pub use tls::TlsInfo;

/// Security prepared once per client: the rustls connector is built (files read and
/// parsed) when the client is created, so a bad PEM file is an error at start-up.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(crate) tls: Option<tls::Connector>,
    pub(crate) sasl: Option<SaslConfig>,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl)
            .finish()
    }
}

impl Prepared {
    pub(crate) fn new(sec: &Security) -> crate::error::Result<Self> {
        Ok(Prepared {
            tls: sec.tls.as_ref().map(tls::Connector::new).transpose()?,
            sasl: sec.sasl.clone(),
        })
    }
}
