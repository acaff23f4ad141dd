//! How an error of a transactional call is handled ([`Verdict`]): [`classify`]'s flat
//! table of the Java client's rules per call ([`TxnApi`]), KIP-360 and KIP-588.

use kafka_protocol::ResponseError;

use crate::error::{Error, ErrorKind};

/// How an error of a transactional call is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Try again after a backoff (until the call's deadline).
    Retry,
    /// The open transaction must be aborted; the producer stays usable.
    Abortable,
    /// Fenced by a newer producer with the same transactional id. Terminal.
    Fenced,
    /// Unrecoverable. Terminal.
    Fatal,
}

/// The call an error came from (some codes mean different things per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnApi {
    /// InitProducerId (first one or an epoch bump).
    InitProducerId,
    /// AddPartitionsToTxn.
    AddPartitions,
    /// EndTxn (commit or abort).
    EndTxn,
    /// A Produce of a transactional batch (after the idempotent producer's own retries).
    Produce,
    /// AddOffsetsToTxn.
    AddOffsets,
    /// TxnOffsetCommit (to the group coordinator).
    TxnOffsetCommit,
}

/// Classifies an error of `api` (the Java client's rules, KIP-360 and KIP-588).
pub fn classify(api: TxnApi, e: &Error) -> Verdict {
    match e.kind() {
        ErrorKind::Fenced(_) => return Verdict::Fenced,
        ErrorKind::TransactionFatal(_) => return Verdict::Fatal,
        ErrorKind::TransactionAbortable(_) | ErrorKind::NotSent(_) => return Verdict::Abortable,
        _ => {}
    }
    use ResponseError as R;
    match e.kafka_error() {
        Some(R::ProducerFenced) => Verdict::Fenced,
        // KIP-588: from a partition leader it may only mean the coordinator timed the
        // transaction out and bumped the epoch; the coordinator tells fencing apart.
        Some(R::InvalidProducerEpoch) if api == TxnApi::Produce => Verdict::Abortable,
        Some(R::InvalidProducerEpoch) => Verdict::Fenced,
        Some(
            R::TransactionalIdAuthorizationFailed
            | R::ClusterAuthorizationFailed
            | R::InvalidTxnState
            | R::InvalidTransactionTimeout
            | R::UnsupportedForMessageFormat
            | R::UnsupportedVersion,
        ) => Verdict::Fatal,
        Some(R::ConcurrentTransactions) => Verdict::Retry,
        // The group moved on (a rebalance, another member): these offsets cannot commit.
        Some(
            R::UnknownMemberId
            | R::IllegalGeneration
            | R::RebalanceInProgress
            | R::FencedInstanceId,
        ) if api == TxnApi::TxnOffsetCommit => Verdict::Abortable,
        Some(
            R::UnknownProducerId
            | R::InvalidProducerIdMapping
            | R::OutOfOrderSequenceNumber
            | R::TopicAuthorizationFailed
            | R::GroupAuthorizationFailed
            | R::OperationNotAttempted,
        ) => Verdict::Abortable,
        // The idempotent producer retried until the delivery deadline already.
        _ if api == TxnApi::Produce => Verdict::Abortable,
        _ if e.is_retriable() => Verdict::Retry,
        _ if e.is_unsupported() => Verdict::Fatal,
        Some(_) => Verdict::Fatal,
        None => Verdict::Abortable,
    }
}
