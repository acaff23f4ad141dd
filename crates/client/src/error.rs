//! The crate's one public error type.
//!
//! Shaped like hyper's: an opaque [`Error`] with predicates ([`Error::is_retriable`],
//! [`Error::kafka_code`], …) and a public [`ErrorKind`] for matching, plus the context of the
//! call that failed (broker, topic, partition, offset). kafka-protocol reports encode/decode
//! failures as `anyhow::Error`; they are wrapped here so anyhow never shows in a signature.
//! A rustls failure is worded here too (what to check), for the TLS handshake and for a
//! TLS session that fails on a later read or write alike.

use std::fmt;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;

/// Shorthand for `Result<T, strait_client::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, without the context. Matching on it is stable for the listed variants;
/// new variants may be added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A socket error (connect, read or write). Retriable: the connection is re-established.
    Io(std::io::ErrorKind),
    /// The connection was closed (by the peer, or poisoned by an earlier failure) while the
    /// request was pending. Retriable: whether the request took effect is unknown.
    ConnectionClosed,
    /// No response within the deadline. Retriable; the connection is closed because a broker
    /// that does not answer in time cannot be trusted with pipelined requests.
    Timeout,
    /// The broker answered with a Kafka error code.
    Kafka(ResponseError),
    /// The broker does not support any version of `api` this crate can speak.
    UnsupportedVersion {
        /// The API the broker is too old (or too new) for.
        api: ApiKey,
        /// The versions the broker advertised, if it advertised the API at all.
        broker: Option<(i16, i16)>,
        /// The versions this crate uses.
        ours: (i16, i16),
    },
    /// A frame or message violated the protocol (oversized frame, bad correlation id,
    /// undecodable body, trailing bytes). Not retriable on the same connection.
    Protocol(String),
    /// kafka-protocol refused to encode a request (a caller or version mismatch).
    Encode(String),
    /// The request was malformed before it reached the network (bad argument).
    InvalidInput(String),
    /// No broker could be reached, or the topic/partition has no known leader.
    NoBrokerAvailable,
    /// The producer has to be re-initialised; the batch was not written.
    ProducerFenced(String),
    /// A transactional producer was fenced: another producer initialised the same
    /// `transactional.id` (a newer epoch), or the coordinator rejected this producer's
    /// epoch. Terminal: the producer can do nothing more, and its open transaction is (or
    /// will be) aborted by the coordinator. A process seeing it has been replaced.
    Fenced(String),
    /// The open transaction cannot commit (a batch failed, a partition could not be
    /// added, the sequence broke); abort it, and the producer can start the next one.
    TransactionAbortable(String),
    /// The transactional producer cannot go on (authorization, invalid transaction state,
    /// a refused epoch bump, an unsupported broker); not fencing. Terminal.
    TransactionFatal(String),
    /// The batch was not sent because an earlier batch of the same partition failed for
    /// good (the idempotent producer never writes past a hole). Not retriable.
    NotSent(String),
    /// TLS could not be set up: a certificate or key file, or the handshake (untrusted CA,
    /// expired certificate, host name mismatch, a plaintext peer). Not retriable.
    Tls(String),
    /// SASL authentication failed (wrong credentials, mechanism not enabled, the broker
    /// could not prove it knows the password, no token). Not retriable; the message names
    /// the broker, the mechanism and the user, never the secret.
    Authentication(String),
}

#[derive(Debug, Clone, Default)]
struct Context {
    broker: Option<i32>,
    api: Option<ApiKey>,
    topic: Option<String>,
    partition: Option<i32>,
    offset: Option<i64>,
    message: Option<String>,
}

/// The error type of every fallible call in this crate.
///
/// Cheap to clone (one `Arc`): a failed connection hands the same error to every request
/// that was pending on it.
#[derive(Clone)]
pub struct Error {
    inner: Arc<Inner>,
}

struct Inner {
    kind: ErrorKind,
    ctx: Context,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// Creates an error of the given kind with no context.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            inner: Arc::new(Inner {
                kind,
                ctx: Context::default(),
                source: None,
            }),
        }
    }

    pub(crate) fn with_source(
        kind: ErrorKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error {
            inner: Arc::new(Inner {
                kind,
                ctx: Context::default(),
                source: Some(Arc::new(source)),
            }),
        }
    }

    /// A Kafka error code as an error (`None` when `code` is 0).
    pub fn from_code(code: i16) -> Option<Self> {
        ResponseError::try_from_code(code).map(|e| Error::new(ErrorKind::Kafka(e)))
    }

    /// `Err` for a non-zero Kafka error code, with the broker's message if it sent one.
    pub(crate) fn check_code(code: i16, message: Option<&str>) -> Result<()> {
        match Error::from_code(code) {
            None => Ok(()),
            Some(e) => Err(match message {
                Some(m) if !m.is_empty() => e.message(m),
                _ => e,
            }),
        }
    }

    pub(crate) fn protocol(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Protocol(msg.into()))
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput(msg.into()))
    }

    pub(crate) fn encode(api: ApiKey, version: i16, e: &anyhow::Error) -> Self {
        Error::new(ErrorKind::Encode(format!("{api:?} v{version}: {e}"))).api(api)
    }

    pub(crate) fn decode(api: ApiKey, version: i16, e: &anyhow::Error) -> Self {
        Error::new(ErrorKind::Protocol(format!(
            "cannot decode {api:?} v{version} response: {e}"
        )))
        .api(api)
    }

    fn ctx_mut(&mut self) -> &mut Context {
        // Errors are built and decorated before they are shared, so this rarely clones.
        &mut Arc::make_mut_inner(&mut self.inner).ctx
    }

    /// Adds the broker (node id) the request went to.
    pub fn broker(mut self, broker: i32) -> Self {
        self.ctx_mut().broker = Some(broker);
        self
    }

    /// Adds the API the request was for.
    pub fn api(mut self, api: ApiKey) -> Self {
        self.ctx_mut().api = Some(api);
        self
    }

    /// Adds the topic the error is about.
    pub fn topic(mut self, topic: impl Into<String>) -> Self {
        self.ctx_mut().topic = Some(topic.into());
        self
    }

    /// Adds the partition the error is about.
    pub fn partition(mut self, partition: i32) -> Self {
        self.ctx_mut().partition = Some(partition);
        self
    }

    /// Adds the offset the error is about.
    pub fn offset(mut self, offset: i64) -> Self {
        self.ctx_mut().offset = Some(offset);
        self
    }

    /// Adds a human-readable message (e.g. the broker's `error_message`).
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.ctx_mut().message = Some(message.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// The Kafka error code, if the broker sent one.
    pub fn kafka_code(&self) -> Option<i16> {
        self.kafka_error().map(|e| e.code())
    }

    /// The Kafka error, if the broker sent one.
    pub fn kafka_error(&self) -> Option<ResponseError> {
        match self.inner.kind {
            ErrorKind::Kafka(e) => Some(e),
            _ => None,
        }
    }

    /// True when trying again (after a backoff, a metadata refresh or a reconnect) may
    /// succeed: network failures, timeouts, and Kafka errors the protocol marks retriable.
    pub fn is_retriable(&self) -> bool {
        match &self.inner.kind {
            ErrorKind::Io(_)
            | ErrorKind::ConnectionClosed
            | ErrorKind::Timeout
            | ErrorKind::NoBrokerAvailable => true,
            ErrorKind::Kafka(e) => e.is_retriable(),
            _ => false,
        }
    }

    /// True when the peer refused the TCP connection (nothing listens at the address).
    pub fn is_refused(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Io(std::io::ErrorKind::ConnectionRefused)
        )
    }

    /// True for a failed authentication or authorization, or a TLS failure: the credentials,
    /// certificates or ACLs must change before trying again.
    pub fn is_auth_failure(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Tls(_) | ErrorKind::Authentication(_)
        ) || matches!(
            self.kafka_error(),
            Some(
                ResponseError::SaslAuthenticationFailed
                    | ResponseError::UnsupportedSaslMechanism
                    | ResponseError::IllegalSaslState
                    | ResponseError::TopicAuthorizationFailed
                    | ResponseError::GroupAuthorizationFailed
                    | ResponseError::ClusterAuthorizationFailed
                    | ResponseError::TransactionalIdAuthorizationFailed
                    | ResponseError::DelegationTokenAuthorizationFailed
            )
        )
    }

    /// True when the error means the metadata used for routing is stale (leader moved,
    /// unknown partition, leader epoch mismatch): refresh metadata and retry.
    pub fn is_stale_metadata(&self) -> bool {
        matches!(
            self.kafka_error(),
            Some(
                ResponseError::NotLeaderOrFollower
                    | ResponseError::LeaderNotAvailable
                    | ResponseError::UnknownTopicOrPartition
                    | ResponseError::FencedLeaderEpoch
                    | ResponseError::UnknownLeaderEpoch
                    | ResponseError::UnknownTopicId
                    | ResponseError::BrokerNotAvailable
                    | ResponseError::ReplicaNotAvailable
                    | ResponseError::KafkaStorageError
            )
        )
    }

    /// True when the group or transaction coordinator moved or is loading.
    pub fn is_coordinator_error(&self) -> bool {
        matches!(
            self.kafka_error(),
            Some(
                ResponseError::NotCoordinator
                    | ResponseError::CoordinatorNotAvailable
                    | ResponseError::CoordinatorLoadInProgress
            )
        )
    }

    /// True when a transactional producer was fenced ([`ErrorKind::Fenced`], or a
    /// PRODUCER_FENCED answer): another producer owns its `transactional.id` now.
    pub fn is_fenced(&self) -> bool {
        matches!(self.inner.kind, ErrorKind::Fenced(_))
            || self.kafka_error() == Some(ResponseError::ProducerFenced)
    }

    /// True when the open transaction must be aborted and the producer can go on
    /// ([`ErrorKind::TransactionAbortable`]).
    pub fn is_transaction_abortable(&self) -> bool {
        matches!(self.inner.kind, ErrorKind::TransactionAbortable(_))
    }

    /// True when a transactional producer cannot go on: fenced or fatal
    /// ([`ErrorKind::Fenced`], [`ErrorKind::TransactionFatal`]).
    pub fn is_transaction_fatal(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Fenced(_) | ErrorKind::TransactionFatal(_)
        )
    }

    /// True for a network-level failure (the request may or may not have been processed).
    pub fn is_network(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Io(_) | ErrorKind::ConnectionClosed | ErrorKind::Timeout
        )
    }

    /// True when the broker does not support the API or version (including Kafka's
    /// UNSUPPORTED_VERSION error code).
    pub fn is_unsupported(&self) -> bool {
        matches!(self.inner.kind, ErrorKind::UnsupportedVersion { .. })
            || self.kafka_error() == Some(ResponseError::UnsupportedVersion)
    }

    /// The broker the request went to, if known.
    pub fn broker_id(&self) -> Option<i32> {
        self.inner.ctx.broker
    }

    /// The API of the failed request, if known.
    pub fn api_key(&self) -> Option<ApiKey> {
        self.inner.ctx.api
    }

    /// The topic the error is about, if any.
    pub fn topic_name(&self) -> Option<&str> {
        self.inner.ctx.topic.as_deref()
    }

    /// The partition the error is about, if any.
    pub fn partition_index(&self) -> Option<i32> {
        self.inner.ctx.partition
    }

    /// The offset the error is about, if any.
    pub fn offset_value(&self) -> Option<i64> {
        self.inner.ctx.offset
    }
}

/// `Arc::make_mut` needs `Clone` on the pointee; `Inner` holds an `Arc<dyn Error>` source,
/// so clone it by hand.
trait MakeMutInner {
    fn make_mut_inner(this: &mut Arc<Inner>) -> &mut Inner;
}

impl MakeMutInner for Arc<Inner> {
    fn make_mut_inner(this: &mut Arc<Inner>) -> &mut Inner {
        if Arc::get_mut(this).is_none() {
            *this = Arc::new(Inner {
                kind: this.kind.clone(),
                ctx: this.ctx.clone(),
                source: this.source.clone(),
            });
        }
        Arc::get_mut(this).expect("unique after clone")
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(k) => write!(f, "i/o error: {k}"),
            ErrorKind::ConnectionClosed => f.write_str("connection closed"),
            ErrorKind::Timeout => f.write_str("request timed out"),
            ErrorKind::Kafka(e) => write!(f, "broker error {e} ({})", e.code()),
            ErrorKind::UnsupportedVersion { api, broker, ours } => match broker {
                Some((lo, hi)) => write!(
                    f,
                    "broker supports {api:?} v{lo}..v{hi}, this client needs v{}..v{}",
                    ours.0, ours.1
                ),
                None => write!(f, "broker does not support {api:?} (UNSUPPORTED)"),
            },
            ErrorKind::Protocol(m) => write!(f, "protocol error: {m}"),
            ErrorKind::Encode(m) => write!(f, "cannot encode request: {m}"),
            ErrorKind::InvalidInput(m) => write!(f, "invalid input: {m}"),
            ErrorKind::NoBrokerAvailable => f.write_str("no broker available"),
            ErrorKind::ProducerFenced(m) => write!(f, "producer must be re-initialised: {m}"),
            ErrorKind::NotSent(m) => write!(f, "not sent: {m}"),
            ErrorKind::Fenced(m) => write!(f, "transactional producer fenced: {m}"),
            ErrorKind::TransactionAbortable(m) => {
                write!(f, "transaction must be aborted: {m}")
            }
            ErrorKind::TransactionFatal(m) => write!(f, "transactional producer failed: {m}"),
            ErrorKind::Tls(m) => write!(f, "TLS error: {m}"),
            ErrorKind::Authentication(m) => write!(f, "authentication failed: {m}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner.kind)?;
        let c = &self.inner.ctx;
        if let Some(m) = &c.message {
            write!(f, ": {m}")?;
        }
        if let Some(a) = c.api {
            write!(f, " [api {a:?}]")?;
        }
        if let Some(b) = c.broker {
            write!(f, " [broker {b}]")?;
        }
        match (&c.topic, c.partition) {
            (Some(t), Some(p)) => write!(f, " [{t}-{p}]")?,
            (Some(t), None) => write!(f, " [topic {t}]")?,
            _ => {}
        }
        if let Some(o) = c.offset {
            write!(f, " [offset {o}]")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("context", &self.inner.ctx)
            .field("source", &self.inner.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        // A TLS failure after the handshake (TLS 1.3 reports a refused client certificate
        // with an alert on the first read) is a TLS error, not a flaky network.
        if let Some(t) = e.get_ref().and_then(|r| r.downcast_ref::<rustls::Error>()) {
            return Error::new(ErrorKind::Tls(describe_after_handshake(t)));
        }
        let kind = match e.kind() {
            std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
            std::io::ErrorKind::UnexpectedEof => ErrorKind::ConnectionClosed,
            k => ErrorKind::Io(k),
        };
        Error::with_source(kind, e)
    }
}

/// A TLS error that surfaced on a read or write after the handshake.
fn describe_after_handshake(e: &rustls::Error) -> String {
    format!(
        "the TLS session failed: {}",
        describe_rustls(e, "the broker")
    )
}

/// What a rustls failure means, in words that say what to check (`host`: the name the
/// broker's certificate was verified against).
pub(crate) fn describe_rustls(e: &rustls::Error, host: &str) -> String {
    use rustls::{CertificateError as C, Error as R};
    match e {
        R::InvalidCertificate(C::UnknownIssuer) => {
            "the broker's certificate is not signed by a trusted CA (check `tls.ca_file`)".into()
        }
        R::InvalidCertificate(C::Expired) | R::InvalidCertificate(C::ExpiredContext { .. }) => {
            "the broker's certificate has expired".into()
        }
        R::InvalidCertificate(C::NotValidForName)
        | R::InvalidCertificate(C::NotValidForNameContext { .. }) => format!(
            "the broker's certificate is not valid for {host:?} (set `tls.server_name` if the \
             broker is reached under another name)"
        ),
        R::InvalidMessage(_) | R::InappropriateMessage { .. } => {
            format!("the peer did not answer with TLS ({e}): is this a plaintext listener?")
        }
        R::AlertReceived(a) => format!(
            "the broker refused the handshake ({a:?}): a missing or untrusted client \
             certificate for mutual TLS, or no common protocol version"
        ),
        other => other.to_string(),
    }
}

impl From<ResponseError> for Error {
    fn from(e: ResponseError) -> Self {
        Error::new(ErrorKind::Kafka(e))
    }
}

#[cfg(test)]
mod tests;
