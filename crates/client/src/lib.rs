//! strait-client: an embeddable async Kafka client (tokio).
//!
//! Pipelined connections (many requests in flight per connection, separate connections for
//! fetch, produce and control traffic), per-connection ApiVersions negotiation, a metadata
//! cache with leader routing and coordinator lookup, typed RPCs, Fetch responses decoded
//! zero-copy (each partition's records are a slice of the response frame), Produce written
//! with vectored I/O around the caller's batch bytes, and an idempotent producer for raw
//! record batches. Built on [`kafka-protocol`](protocol) 0.18 for message encoding.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use strait_client::{Client, ClientConfig, FetchOptions, NewTopic, PartitionConsumer,
//!     ProducerRecord, RecordProducer};
//! use strait_records::Compression;
//!
//! # async fn run() -> strait_client::Result<()> {
//! let client = Client::connect(ClientConfig::new(["127.0.0.1:9092"])).await?;
//! client.create_topics(&[NewTopic::new("events", 3)], Duration::from_secs(10)).await?;
//!
//! // Records in: batched with lz4, idempotent, acknowledged in order.
//! let producer = RecordProducer::new(client.clone(), Compression::Lz4).await?;
//! let recs = vec![ProducerRecord::new("key", "value").with_header("h", "1")];
//! for ack in producer.send("events", 0, &recs).await? {
//!     println!("written at offset {}", ack.wait().await?.base_offset);
//! }
//!
//! // Records out.
//! let mut consumer = PartitionConsumer::new(client.clone(), "events", 0, 0);
//! for r in consumer.poll().await? {
//!     println!("{} {:?}", r.offset, r.value);
//! }
//!
//! // Raw batches (the forwarding path): fetch, then produce the same bytes elsewhere.
//! let (leader, _epoch) = client.leader_for("events", 0).await?;
//! let fetched = client
//!     .fetch(leader, &[strait_client::FetchPosition::new("events", 0, 0)], &FetchOptions::default())
//!     .await?;
//! for p in fetched.partitions {
//!     println!("{}-{}: {} bytes, hw {}", p.topic, p.partition, p.records.len(), p.high_watermark);
//! }
//! # Ok(()) }
//! ```
//!
//! # Errors
//!
//! Every call returns [`Result`] with the one [`Error`] type: predicates
//! ([`Error::is_retriable`], [`Error::is_stale_metadata`], [`Error::is_unsupported`]…), the
//! Kafka error code ([`Error::kafka_code`]) and the context (broker, API, topic, partition,
//! offset). Calls routed by the client retry retriable errors with exponential backoff and
//! jitter until [`ClientConfig::retry_timeout`]; broker throttling (`throttle_time_ms`) is
//! honoured per broker, separately from the backoff. Single-shot calls
//! ([`Client::produce_to`], [`Client::fetch`]) leave retrying to the caller.
//!
//! # Module layout
//!
//! | module | what |
//! |---|---|
//! | `frame` | [`Request`] (a request type's API key and response), `[size][header][body]` framing, the frame-size cap, the frame reader |
//! | `connection` | one pipelined connection: writer task, reader task, pending queue, poisoning, the re-authentication gate |
//! | [`versions`] | ApiVersions negotiation and the versions this crate uses |
//! | `broker` | one broker: connections by [`Purpose`], reconnect, SASL on each new connection and before its session expires, throttling |
//! | `client` | [`Client`], [`ClientConfig`]: bootstrap, metadata refresh, routing, coordinators, retries |
//! | [`metadata`] | the metadata snapshot types |
//! | [`backoff`] | exponential backoff with jitter |
//! | [`rpc`] | one module per API group: `produce`, `fetch` (+ sessions), `offsets`, `groups`, `admin`, `acls`, `authz`, `txn` |
//! | [`producer`] | the pure sequencing state machine, the idempotent raw-batch producer, the record producer, the transactional producer |
//! | [`consumer`] | the record-level partition consumer |
//! | [`group`] | a consumer-group member (join, sync, heartbeat, self-fence) and its pure state machine |
//! | [`error`] | [`Error`], [`ErrorKind`], what a rustls failure means in words |
//! | [`security`] | the TLS and SASL settings, TLS (rustls), SASL PLAIN / SCRAM / OAUTHBEARER, re-authentication |
//! | `decode` | (hidden) every response decoder behind one entry point, for fuzzing and hostile-input tests |
//!
//! Versions, Tansu differences and what was tested are in `docs/compatibility.md`; the
//! connection model is described in `docs/architecture.md`.

pub mod backoff;
mod broker;
mod client;
mod connection;
pub mod consumer;
#[doc(hidden)]
pub mod decode;
pub mod error;
mod frame;
pub mod group;
pub mod metadata;
pub mod producer;
pub mod rpc;
pub mod security;
pub mod versions;

pub use broker::Purpose;
pub use client::{Client, ClientConfig, CoordinatorType};
pub use consumer::{ConsumedRecord, PartitionConsumer};
pub use error::{Error, ErrorKind, Result};
pub use frame::Request;
pub use producer::{
    Ack, AckFuture, IdempotentProducer, ProducerConfig, ProducerRecord, ProducerStats,
    RecordProducer, TransactionStats, TransactionalConfig, TransactionalProducer, TrySend,
};
pub use rpc::acls::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};
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
pub use security::{CaRoots, ClientCert, SaslConfig, ScramHash, Secret, Security, TlsConfig};

/// The kafka-protocol crate this client is built on, re-exported so that callers can name
/// its message types (used by [`Client::send_request`] and the group/transaction calls).
pub use kafka_protocol as protocol;
