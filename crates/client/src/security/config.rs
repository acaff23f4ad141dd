//! What a client is told about security: TLS and SASL settings, the secrets they carry,
//! and the token provider OAUTHBEARER asks for each authentication (its implementations
//! are in `oauth` and `msk`).

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::Result;

/// A secret string (password, client secret, token). `Debug`/`Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(Arc::from(s.into()))
    }

    /// The secret itself, for the code that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret::new(s)
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret::new(s)
    }
}

/// How every connection of a client is secured. The default is plaintext.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// TLS, or `None` for plaintext TCP.
    pub tls: Option<TlsConfig>,
    /// SASL authentication, or `None`.
    pub sasl: Option<SaslConfig>,
}

impl Security {
    /// Plaintext: no TLS, no SASL.
    pub fn plaintext() -> Self {
        Security::default()
    }

    /// Kafka's name for this combination (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn protocol_name(&self) -> &'static str {
        protocol_name(self.tls.is_some(), self.sasl.is_some())
    }
}

/// Kafka's `security.protocol` name for a connection with or without TLS and SASL.
pub fn protocol_name(tls: bool, sasl: bool) -> &'static str {
    match (tls, sasl) {
        (false, false) => "PLAINTEXT",
        (true, false) => "SSL",
        (false, true) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    }
}

/// Where the CA certificates that verify brokers come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaRoots {
    /// The operating system's trust store (`/etc/ssl/certs` and friends, `SSL_CERT_FILE`).
    #[default]
    System,
    /// A PEM bundle.
    PemFile(PathBuf),
}

/// A client certificate chain and its private key (PEM files), for mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// Certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// Private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC).
    pub key_file: PathBuf,
}

/// TLS settings. TLS 1.2 and 1.3; certificate and host name verification always on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// Trust anchors.
    pub ca: CaRoots,
    /// Client certificate for mutual TLS.
    pub client_cert: Option<ClientCert>,
    /// Name to verify instead of the host part of the broker address.
    pub server_name: Option<String>,
    /// Deadline for the TLS handshake.
    pub handshake_timeout: Duration,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            ca: CaRoots::System,
            client_cert: None,
            server_name: None,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramHash {
    /// `SCRAM-SHA-256`.
    Sha256,
    /// `SCRAM-SHA-512`.
    Sha512,
}

/// A SASL mechanism and its credentials.
#[derive(Clone)]
pub enum SaslConfig {
    /// `PLAIN` (RFC 4616). Use only over TLS: the password crosses the wire.
    Plain {
        /// Authentication identity.
        username: String,
        /// Password.
        password: Secret,
    },
    /// `SCRAM-SHA-256` / `SCRAM-SHA-512` (RFC 5802, RFC 7677). The broker must prove it
    /// knows the password (server signature) or the connection is refused.
    Scram {
        /// Which hash.
        hash: ScramHash,
        /// Authentication identity.
        username: String,
        /// Password.
        password: Secret,
    },
    /// `OAUTHBEARER` (RFC 7628, KIP-255) with a token provider.
    OAuthBearer {
        /// Supplies (and refreshes) the bearer token.
        provider: Arc<dyn TokenProvider>,
        /// SASL extensions (KIP-342), e.g. Confluent Cloud's `logicalCluster`.
        extensions: Vec<(String, String)>,
    },
}

impl SaslConfig {
    /// The mechanism name sent in SaslHandshake.
    pub fn mechanism(&self) -> &'static str {
        match self {
            SaslConfig::Plain { .. } => "PLAIN",
            SaslConfig::Scram {
                hash: ScramHash::Sha256,
                ..
            } => "SCRAM-SHA-256",
            SaslConfig::Scram {
                hash: ScramHash::Sha512,
                ..
            } => "SCRAM-SHA-512",
            SaslConfig::OAuthBearer { .. } => "OAUTHBEARER",
        }
    }

    /// The user named in errors and logs (for OAUTHBEARER, the provider's description).
    pub fn user(&self) -> String {
        match self {
            SaslConfig::Plain { username, .. } | SaslConfig::Scram { username, .. } => {
                username.clone()
            }
            SaslConfig::OAuthBearer { provider, .. } => provider.describe(),
        }
    }
}

impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaslConfig::Plain { username, .. } | SaslConfig::Scram { username, .. } => f
                .debug_struct("SaslConfig")
                .field("mechanism", &self.mechanism())
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            SaslConfig::OAuthBearer {
                provider,
                extensions,
            } => f
                .debug_struct("SaslConfig")
                .field("mechanism", &self.mechanism())
                .field("provider", &provider.describe())
                .field(
                    "extensions",
                    &extensions.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
                .finish(),
        }
    }
}

/// A bearer token.
#[derive(Debug, Clone)]
pub struct Token {
    /// The token (usually a JWT).
    pub value: Secret,
    /// When it stops being valid, if known.
    pub expires_at: Option<SystemTime>,
    /// The principal it names (`sub`), if known.
    pub principal: Option<String>,
}

/// A boxed future returned by [`TokenProvider::token`].
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<Token>> + Send + 'a>>;

/// Supplies bearer tokens for OAUTHBEARER. Called for every authentication (each new
/// connection and each re-authentication).
pub trait TokenProvider: Send + Sync {
    /// A currently valid token.
    fn token(&self) -> TokenFuture<'_>;
    /// A description for errors and logs (never the token).
    fn describe(&self) -> String;
}
