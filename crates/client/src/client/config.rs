//! [`ClientConfig`]: the client settings and their `with_*` builders.

use std::time::Duration;

use crate::backoff::BackoffConfig;
use crate::frame::DEFAULT_MAX_FRAME;
use crate::security::config::Security;

/// Client settings. Build with [`ClientConfig::new`] and the `with_*` methods.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `host:port` addresses to bootstrap from.
    pub bootstrap: Vec<String>,
    /// Sent as `client_id` in every request header.
    pub client_id: String,
    /// TCP connect + ApiVersions handshake timeout.
    pub connect_timeout: Duration,
    /// How long one request may wait for its response (Fetch adds its `max_wait`).
    pub request_timeout: Duration,
    /// How long a call keeps retrying retriable errors before giving up.
    pub retry_timeout: Duration,
    /// How long [`Client::connect`](super::Client::connect) keeps trying while every
    /// bootstrap address refuses the connection (nothing listens there: a wrong port, a
    /// stopped cluster). A silent host (no answer at all) is still tried for the whole
    /// `retry_timeout`.
    pub refused_timeout: Duration,
    /// Retry backoff.
    pub backoff: BackoffConfig,
    /// Metadata is refreshed in the background this often (and on routing errors).
    pub metadata_max_age: Duration,
    /// Largest response frame accepted.
    pub max_frame: usize,
    /// TLS and SASL for every connection (default: plaintext).
    pub security: Security,
}

impl ClientConfig {
    /// Defaults plus a bootstrap list.
    pub fn new<I, S>(bootstrap: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientConfig {
            bootstrap: bootstrap.into_iter().map(Into::into).collect(),
            client_id: "strait".into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            retry_timeout: Duration::from_secs(60),
            refused_timeout: Duration::from_secs(5),
            backoff: BackoffConfig::default(),
            metadata_max_age: Duration::from_secs(60),
            max_frame: DEFAULT_MAX_FRAME,
            security: Security::default(),
        }
    }

    /// Sets TLS and SASL for every connection.
    pub fn with_security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// Sets the `client_id`.
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = id.into();
        self
    }

    /// Sets the per-request timeout.
    pub fn with_request_timeout(mut self, t: Duration) -> Self {
        self.request_timeout = t;
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }

    /// Sets how long retriable errors are retried.
    pub fn with_retry_timeout(mut self, t: Duration) -> Self {
        self.retry_timeout = t;
        self
    }

    /// Sets how long a bootstrap that is refused everywhere keeps trying.
    pub fn with_refused_timeout(mut self, t: Duration) -> Self {
        self.refused_timeout = t;
        self
    }

    /// Sets the retry backoff.
    pub fn with_backoff(mut self, b: BackoffConfig) -> Self {
        self.backoff = b;
        self
    }

    /// Sets the background metadata refresh interval.
    pub fn with_metadata_max_age(mut self, t: Duration) -> Self {
        self.metadata_max_age = t;
        self
    }

    /// Sets the largest accepted response frame.
    pub fn with_max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }
}
