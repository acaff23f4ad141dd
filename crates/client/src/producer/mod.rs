//! Producers: the idempotent raw-batch producer (for forwarding) and the record-level
//! convenience producer built on it.
//!
//! - `sequencer`: the pure sequencing state machine (testable without sockets);
//! - `idempotent`: the producer handle around it;
//! - `driver`: its sink driver task (one sink per leader broker, many partitions per
//!   Produce request; a hung broker delays only its own partitions);
//! - `records`: records in → batches (strait-records) → the idempotent producer.

mod driver;
mod idempotent;
mod records;
pub mod sequencer;

pub use idempotent::{AckFuture, IdempotentProducer, ProducerConfig, ProducerStats};
pub use records::{ProducerRecord, RecordProducer};
pub use sequencer::{Ack, Sequencer};

#[cfg(test)]
mod tests;
