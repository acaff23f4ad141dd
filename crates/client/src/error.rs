//! The crate's one public error type.
//!
//! Shaped like hyper's: an opaque [`Error`] with predicates ([`Error::is_retriable`],
//! [`Error::kafka_code`], …) and a public [`ErrorKind`] for matching, plus the context of the
//! call that failed (broker, topic, partition, offset). kafka-protocol reports encode/decode
//! failures as `anyhow::Error`; they are wrapped here so anyhow never shows in a signature.
//! A rustls failure is worded here too (what to check), for the TLS handshake and for a
//! TLS session that fails on a later read or write alike.
//!
//! The error's predicates are in `error/predicates.rs`; its display and the rustls
//! wording in `error/display.rs`.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;

mod display;
mod predicates;

use display::describe_after_handshake;
pub(crate) use display::describe_rustls;

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

impl From<ResponseError> for Error {
    fn from(e: ResponseError) -> Self {
        Error::new(ErrorKind::Kafka(e))
    }
}

#[cfg(test)]
mod tests;
