//! The predicates callers decide by: retriable, refused, an authentication failure, stale
//! metadata, a coordinator error, fenced, transaction-abortable or -fatal, a network
//! failure, unsupported. Each is a flat match over [`ErrorKind`] and Kafka's codes.

use kafka_protocol::ResponseError;

use super::{Error, ErrorKind};

impl Error {
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
}
