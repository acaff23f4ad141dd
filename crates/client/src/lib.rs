//! strait-client: an embeddable async Kafka client.
//!
//! (crate docs are written at the end)

pub mod backoff;
mod broker;
mod client;
mod connection;
pub mod consumer;
pub mod error;
mod frame;
pub mod metadata;
pub mod producer;
pub mod rpc;
pub mod versions;

pub use broker::Purpose;
pub use client::{Client, ClientConfig, CoordinatorType};
pub use consumer::{ConsumedRecord, PartitionConsumer};
pub use error::{Error, ErrorKind, Result};
pub use producer::{
    Ack, AckFuture, IdempotentProducer, ProducerConfig, ProducerRecord, RecordProducer,
};
pub use rpc::Request;
pub use rpc::admin::{
    AlterConfigOp, ConfigEntry, NewTopic, ResourceConfigs, ResourceType, TopicResult,
};
pub use rpc::fetch::{
    AbortedTxn, FetchOptions, FetchPosition, FetchResult, FetchSession, FetchedPartition,
    IsolationLevel,
};
pub use rpc::groups::ListedGroup;
pub use rpc::offsets::{CommitOffset, CommittedOffset, GroupMember, ListedOffset, OffsetSpec};
pub use rpc::produce::{Acks, PartitionProduceResult, ProduceRequest, RawBatch, TopicBatches};
pub use rpc::txn::ProducerIdentity;

/// The kafka-protocol crate this client is built on, re-exported so that callers can name
/// its message types (used by [`Client::send_request`] and the group/transaction calls).
pub use kafka_protocol as protocol;
