//! The engine's one error type, [`MirrorError`], carrying where it happened: flow, cluster,
//! topic, partition.
//!
//! It has the client's shape: opaque, with a kind ([`MirrorError::kind`], matched by
//! callers that decide on it) and a context. Build an error with a constructor
//! ([`MirrorError::kafka`], [`MirrorError::incident`], …) and add context with the
//! chainable setters ([`MirrorError::flow`],
//! [`MirrorError::cluster`], [`MirrorError::topic`], [`MirrorError::partition`]). The
//! message reads `flow f, cluster c, topic t, partition p: what: cause`.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// Where an error happened. Every field is optional; the message names those that are set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The flow's name.
    pub flow: Option<String>,
    /// The cluster's name (a key of the config's `[clusters]`).
    pub cluster: Option<String>,
    /// The topic (source name unless the message says otherwise).
    pub topic: Option<String>,
    /// The partition.
    pub partition: Option<i32>,
}

impl fmt::Display for Context {
    /// `flow f, cluster c, topic t, partition p: `, or nothing when no field is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(x) = &self.flow {
            parts.push(format!("flow {x}"));
        }
        if let Some(x) = &self.cluster {
            parts.push(format!("cluster {x}"));
        }
        if let Some(x) = &self.topic {
            parts.push(format!("topic {x}"));
        }
        if let Some(x) = self.partition {
            parts.push(format!("partition {x}"));
        }
        if parts.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", parts.join(", "))
        }
    }
}

/// The kinds of incident that stop a partition (policy `fail`) or are skipped with a log
/// line and a metric (policy `skip`). Never silent (DESIGN invariant 10). Which config key
/// governs which kind, and the messages: [`crate::incident`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IncidentKind {
    /// The source log start moved past our position: records were deleted before we copied
    /// them.
    SourceTruncation,
    /// The source topic was deleted and re-created (its topic id changed).
    TopicRecreation,
    /// The target partition does not hold what the map says: it ends before what was
    /// written (truncated or re-created), a batch landed elsewhere than expected, or records
    /// past the map are not the source's (written by someone else, or a batch is missing).
    TargetMismatch,
    /// The source grew partitions and the target cannot (no CreatePartitions).
    PartitionGrowthUnsupported,
}

impl IncidentKind {
    /// The `kind` label value in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentKind::SourceTruncation => "source_truncation",
            IncidentKind::TopicRecreation => "topic_recreation",
            IncidentKind::TargetMismatch => "target_mismatch",
            IncidentKind::PartitionGrowthUnsupported => "partition_growth_unsupported",
        }
    }
}

impl fmt::Display for IncidentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IncidentKind::SourceTruncation => "source truncation",
            IncidentKind::TopicRecreation => "topic re-creation",
            IncidentKind::TargetMismatch => "target mismatch",
            IncidentKind::PartitionGrowthUnsupported => "partition growth unsupported",
        })
    }
}

/// Everything that can go wrong in the engine: what went wrong ([`ErrorKind`]) and where
/// ([`Context`]), behind one pointer (a result holding it stays small in every task).
pub struct MirrorError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    ctx: Context,
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No broker of a cluster answered: every address refused, or none answered within the
    /// deadline.
    #[error("cannot connect to {addresses} (gave up after {:.1} s): {source}", .after.as_secs_f64())]
    Unreachable {
        /// The bootstrap addresses tried.
        addresses: String,
        /// How long it tried.
        after: Duration,
        /// The client's error.
        #[source]
        source: strait_client::Error,
    },
    /// A Kafka call failed.
    #[error("{what}: {source}")]
    Kafka {
        /// What we were doing ("fetch", "create topic", …).
        what: String,
        /// The client's error.
        #[source]
        source: strait_client::Error,
    },
    /// Fetched bytes could not be split, parsed or re-encoded.
    #[error("{what}: {source}")]
    Records {
        /// What we were doing.
        what: String,
        /// The records crate's error.
        #[source]
        source: strait_records::Error,
    },
    /// An offset map refused an update (a bug or a corrupted state).
    #[error("offset map: {source}")]
    OffsetMap {
        /// The offsets crate's error.
        #[source]
        source: strait_offsets::MapError,
    },
    /// Source truncation, topic re-creation, … under policy `fail`.
    #[error("{kind}: {message}")]
    Incident {
        /// Which incident.
        kind: IncidentKind,
        /// What was observed and what the operator can do.
        message: String,
    },
    /// The state topic is missing, unreadable or corrupt.
    #[error("state: {message}")]
    State {
        /// What is wrong.
        message: String,
    },
    /// The `/metrics` endpoint could not listen.
    #[error("metrics endpoint: cannot listen on {addr}: {source}")]
    MetricsListen {
        /// The configured address.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration cannot work (a limit too small for the data, …): retrying does
    /// not help, so it stops the flow (see [`MirrorError::stops_flow`]).
    #[error("configuration: {message}")]
    Config {
        /// What is wrong and which setting to change.
        message: String,
    },
    /// A safety rule refused to go on (a takeover from MirrorMaker 2 that cannot be
    /// proven): nothing was written, and retrying does not help, so it stops the flow.
    #[error("refused: {message}")]
    Refused {
        /// What was refused and why.
        message: String,
    },
    /// Exactly-once: another process initialised the flow's `transactional.id`; this one
    /// must stop for good (starting again would fence its successor).
    #[error("{message}")]
    Fenced {
        /// What happened.
        message: String,
    },
    /// Anything else, with a message.
    #[error("{message}")]
    Other {
        /// What is wrong.
        message: String,
    },
}

impl fmt::Debug for MirrorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorError")
            .field("ctx", &self.0.ctx)
            .field("kind", &self.0.kind)
            .finish()
    }
}

/// `flow f, cluster c, topic t, partition p: what: cause`.
impl fmt::Display for MirrorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.0.ctx, self.0.kind)
    }
}

/// The source is the kind's: the client's, records', offsets' or socket error.
impl std::error::Error for MirrorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0.kind)
    }
}

impl From<ErrorKind> for MirrorError {
    fn from(kind: ErrorKind) -> Self {
        MirrorError(Box::new(Inner {
            ctx: Context::default(),
            kind,
        }))
    }
}

impl MirrorError {
    /// A failed Kafka call: `what` says what we were doing.
    pub fn kafka(what: impl Into<String>, source: strait_client::Error) -> Self {
        ErrorKind::Kafka {
            what: what.into(),
            source,
        }
        .into()
    }

    /// No broker of a cluster answered at `addresses` within `after`.
    pub fn unreachable(
        addresses: impl Into<String>,
        after: Duration,
        source: strait_client::Error,
    ) -> Self {
        ErrorKind::Unreachable {
            addresses: addresses.into(),
            after,
            source,
        }
        .into()
    }

    /// Bad fetched bytes.
    pub fn records(what: impl Into<String>, source: strait_records::Error) -> Self {
        ErrorKind::Records {
            what: what.into(),
            source,
        }
        .into()
    }

    /// A refused offset-map update.
    pub fn offset_map(source: strait_offsets::MapError) -> Self {
        ErrorKind::OffsetMap { source }.into()
    }

    /// An incident under policy `fail`.
    pub fn incident(kind: IncidentKind, message: impl Into<String>) -> Self {
        ErrorKind::Incident {
            kind,
            message: message.into(),
        }
        .into()
    }

    /// A state-topic problem.
    pub fn state(message: impl Into<String>) -> Self {
        ErrorKind::State {
            message: message.into(),
        }
        .into()
    }

    /// The `/metrics` endpoint cannot listen on `addr`.
    pub fn metrics_listen(addr: SocketAddr, source: std::io::Error) -> Self {
        ErrorKind::MetricsListen { addr, source }.into()
    }

    /// A configuration that cannot work; the message names the setting to change.
    pub fn config(message: impl Into<String>) -> Self {
        ErrorKind::Config {
            message: message.into(),
        }
        .into()
    }

    /// A safety rule refused to go on; the message says which and why.
    pub fn refused(message: impl Into<String>) -> Self {
        ErrorKind::Refused {
            message: message.into(),
        }
        .into()
    }

    /// Exactly-once: the flow's `transactional.id` was taken by another process.
    pub fn fenced(message: impl Into<String>) -> Self {
        ErrorKind::Fenced {
            message: message.into(),
        }
        .into()
    }

    /// Anything else.
    pub fn other(message: impl Into<String>) -> Self {
        ErrorKind::Other {
            message: message.into(),
        }
        .into()
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Where it went wrong (every field optional).
    pub fn context(&self) -> &Context {
        &self.0.ctx
    }

    /// The message without the flow's name, for a line that names the flow already (the
    /// flow's `/health` line): `cluster c, topic t, partition p: what: cause`.
    pub fn within_flow(&self) -> String {
        let ctx = Context {
            flow: None,
            ..self.0.ctx.clone()
        };
        format!("{ctx}{}", self.0.kind)
    }

    /// Sets the flow (kept if already set: the innermost context wins).
    pub fn flow(mut self, flow: impl Into<String>) -> Self {
        self.0.ctx.flow.get_or_insert_with(|| flow.into());
        self
    }

    /// Sets the cluster (kept if already set).
    pub fn cluster(mut self, cluster: impl Into<String>) -> Self {
        self.0.ctx.cluster.get_or_insert_with(|| cluster.into());
        self
    }

    /// Sets the topic (kept if already set).
    pub fn topic(mut self, topic: impl Into<String>) -> Self {
        self.0.ctx.topic.get_or_insert_with(|| topic.into());
        self
    }

    /// Sets the partition (kept if already set).
    pub fn partition(mut self, partition: i32) -> Self {
        self.0.ctx.partition.get_or_insert(partition);
        self
    }

    /// The incident kind, when this is an incident.
    pub fn incident_kind(&self) -> Option<IncidentKind> {
        match self.kind() {
            ErrorKind::Incident { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether this error stops its flow instead of restarting the partition it happened
    /// in: an incident under policy `fail` (the operator asked to stop), a configuration
    /// that cannot work, or a refusal by a safety rule. Everything else — network trouble,
    /// a delivery timeout, a corrupt fetch, a failed state write — is retried by
    /// restarting the partition from its recovered state (`restarts`).
    pub fn stops_flow(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Incident { .. } | ErrorKind::Config { .. } | ErrorKind::Refused { .. }
        )
    }

    /// Whether another producer took the flow's `transactional.id` (exactly-once): the
    /// flow must stop for good, never start again and fence its successor.
    pub fn is_fenced(&self) -> bool {
        match self.kind() {
            ErrorKind::Fenced { .. } => true,
            ErrorKind::Kafka { source, .. } => source.is_fenced(),
            _ => false,
        }
    }

    /// Whether retrying the operation may succeed (network trouble, leader moves, …).
    pub fn is_retriable(&self) -> bool {
        match self.kind() {
            ErrorKind::Kafka { source, .. } | ErrorKind::Unreachable { source, .. } => {
                source.is_retriable()
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests;
