//! Producers: the idempotent raw-batch producer (for forwarding), the record-level
//! convenience producer built on it, and the transactional producer.
//!
//! - `sequencer`: the pure sequencing state machine (testable without sockets);
//! - `idempotent`: the producer handle around it;
//! - `driver`: its sink driver task (one sink per leader broker, many partitions per
//!   Produce request; a hung broker delays only its own partitions);
//! - `state`: the settings and the state the handle and the driver share, and the
//!   delivery of each batch's outcome;
//! - `merge`: the pure rule for when a sink's ready partitions leave together;
//! - `records`: records in → batches (strait-records) → the idempotent producer;
//! - `transaction`: the pure transaction lifecycle state machine;
//! - `transactional`: the transactional producer driving it, on the idempotent producer.

mod driver;
mod idempotent;
mod merge;
mod records;
pub mod sequencer;
mod state;
pub mod transaction;
mod transactional;

pub use idempotent::{AckFuture, IdempotentProducer, ProducerStats, TrySend};
pub use records::{ProducerRecord, RecordProducer};
pub use sequencer::{Ack, Sequencer};
pub use state::ProducerConfig;
pub use transactional::{TransactionStats, TransactionalConfig, TransactionalProducer};

#[cfg(test)]
mod tests;
