//! Where a flow's batches go: the idempotent producer (at-least-once) or the
//! transactional one (exactly-once; the flow's committer ends each transaction).

use strait_client::{
    AckFuture, IdempotentProducer, ProducerStats, Result, TransactionalProducer, TrySend,
};
use strait_records::Batch;

/// A flow's producer of replicated batches.
#[derive(Debug, Clone)]
pub enum Sink {
    /// At-least-once.
    Idempotent(IdempotentProducer),
    /// Exactly-once: batches join the open transaction.
    Transactional(TransactionalProducer),
}

impl Sink {
    /// Queues `batch` (header patched, payload not copied).
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        match self {
            Sink::Idempotent(p) => p.send(topic, partition, batch).await,
            Sink::Transactional(p) => p.send(topic, partition, batch).await,
        }
    }

    /// Queues `batch` if it can without waiting; [`TrySend::Later`] gives it back for
    /// [`Sink::send`] (the window is full, or the partition must join the transaction).
    pub fn try_send(&self, topic: &str, partition: i32, batch: Batch) -> Result<TrySend> {
        match self {
            Sink::Idempotent(p) => p.try_send(topic, partition, batch),
            Sink::Transactional(p) => p.try_send(topic, partition, batch),
        }
    }

    /// Stops sending for good (see [`IdempotentProducer::abort`]).
    pub fn abort(&self, reason: &str) {
        match self {
            Sink::Idempotent(p) => p.abort(reason),
            Sink::Transactional(p) => p.halt(reason),
        }
    }

    /// Lets a partition whose batch failed for good produce again (a restart of its
    /// pipeline). Exactly-once flows never restart a partition alone (the whole flow
    /// restarts, with a new producer), so there it does nothing.
    pub fn reset_partition(&self, topic: &str, partition: i32) {
        if let Sink::Idempotent(p) = self {
            p.reset_partition(topic, partition);
        }
    }

    /// Gives back the producer's room for a partition gone idle (see
    /// [`IdempotentProducer::shrink_partition`]). Exactly-once partitions never park, so
    /// there it does nothing.
    pub fn shrink_partition(&self, topic: &str, partition: i32) {
        if let Sink::Idempotent(p) = self {
            p.shrink_partition(topic, partition);
        }
    }

    /// The producer's counters.
    pub fn stats(&self) -> ProducerStats {
        match self {
            Sink::Idempotent(p) => p.stats(),
            Sink::Transactional(p) => p.stats().1,
        }
    }

    /// The transactional producer, in exactly-once mode.
    pub fn transactional(&self) -> Option<&TransactionalProducer> {
        match self {
            Sink::Transactional(p) => Some(p),
            Sink::Idempotent(_) => None,
        }
    }
}
