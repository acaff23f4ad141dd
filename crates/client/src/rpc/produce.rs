//! Produce: raw record batches in, base offsets and errors out.
//!
//! The request body is hand-encoded around the caller's batch parts so that forwarded batch
//! payloads go to the socket by vectored write without being copied into a request buffer.
//! The encoding is checked byte-for-byte against kafka-protocol's encoder in the tests.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ProduceResponse};

use crate::broker::{Broker, Purpose};
use crate::client::Client;
use crate::connection::{Connection, ResponseFuture};
use crate::error::{Error, Result};
use crate::frame;

/// One v2 record batch given as parts whose concatenation is the batch (for example a
/// patched 61-byte header followed by the untouched payload slice of a fetched batch).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawBatch {
    /// The parts, in order.
    pub parts: Vec<Bytes>,
}

impl RawBatch {
    /// A batch in one piece.
    pub fn new(batch: Bytes) -> Self {
        RawBatch { parts: vec![batch] }
    }

    /// A batch from parts.
    pub fn from_parts(parts: Vec<Bytes>) -> Self {
        RawBatch { parts }
    }

    /// Total length in bytes.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// True when the batch has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Acknowledgement level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// No response at all (fire and forget).
    None,
    /// The leader wrote it.
    Leader,
    /// All in-sync replicas wrote it (required for idempotence).
    All,
}

impl Acks {
    fn code(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

/// The batches of one topic in a Produce request.
#[derive(Debug, Clone)]
pub struct TopicBatches {
    /// Topic name.
    pub topic: String,
    /// `(partition, batch)`: at most one batch per partition (broker rule).
    pub partitions: Vec<(i32, RawBatch)>,
}

/// A Produce request: many partitions, one batch each.
#[derive(Debug, Clone)]
pub struct ProduceRequest {
    /// Acknowledgement level.
    pub acks: Acks,
    /// How long the broker may wait for replication.
    pub timeout: Duration,
    /// Set when producing inside a transaction.
    pub transactional_id: Option<String>,
    /// The batches.
    pub topics: Vec<TopicBatches>,
}

impl ProduceRequest {
    /// A request with `acks` and a 30 s broker timeout.
    pub fn new(acks: Acks) -> Self {
        ProduceRequest {
            acks,
            timeout: Duration::from_secs(30),
            transactional_id: None,
            topics: Vec::new(),
        }
    }

    /// Adds one batch for `topic`/`partition`.
    pub fn push(&mut self, topic: &str, partition: i32, batch: RawBatch) {
        match self.topics.iter_mut().find(|t| t.topic == topic) {
            Some(t) => t.partitions.push((partition, batch)),
            None => self.topics.push(TopicBatches {
                topic: topic.to_string(),
                partitions: vec![(partition, batch)],
            }),
        }
    }

    fn validate(&self) -> Result<()> {
        for t in &self.topics {
            let mut seen: Vec<i32> = t.partitions.iter().map(|(p, _)| *p).collect();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::invalid(format!(
                    "more than one batch for a partition of {} in one Produce request",
                    t.topic
                )));
            }
        }
        Ok(())
    }
}

/// The outcome for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionProduceResult {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Kafka error code (0 = success).
    pub error_code: i16,
    /// Offset of the first record of the batch (-1 on error).
    pub base_offset: i64,
    /// Broker append time when the topic uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    /// The partition's log start offset (-1 if not reported).
    pub log_start_offset: i64,
    /// The broker's error message, if any.
    pub error_message: Option<String>,
    /// Per-record errors: `(batch index, message)`.
    pub record_errors: Vec<(i32, Option<String>)>,
}

impl PartitionProduceResult {
    /// The error, with context, if the partition failed.
    pub fn error(&self) -> Option<Error> {
        Error::from_code(self.error_code).map(|e| {
            let e = e.topic(self.topic.clone()).partition(self.partition);
            match &self.error_message {
                Some(m) => e.message(m.clone()),
                None => e,
            }
        })
    }
}

// ---- hand encoding -----------------------------------------------------------------------

fn put_uvarint(buf: &mut BytesMut, v: u32) {
    strait_records::put_uvarint(buf, u64::from(v));
}

fn put_string(buf: &mut BytesMut, s: Option<&str>, flexible: bool) -> Result<()> {
    match (s, flexible) {
        (None, false) => buf.put_i16(-1),
        (None, true) => put_uvarint(buf, 0),
        (Some(s), false) => {
            let n = i16::try_from(s.len()).map_err(|_| Error::invalid("string too long"))?;
            buf.put_i16(n);
            buf.put_slice(s.as_bytes());
        }
        (Some(s), true) => {
            put_uvarint(buf, (s.len() as u32) + 1);
            buf.put_slice(s.as_bytes());
        }
    }
    Ok(())
}

fn put_array_len(buf: &mut BytesMut, n: usize, flexible: bool) {
    if flexible {
        put_uvarint(buf, n as u32 + 1);
    } else {
        buf.put_i32(n as i32);
    }
}

/// Encodes a Produce request body for `version` (3..=12): small framing parts interleaved
/// with the callers' batch parts, which are not copied.
pub(crate) fn encode_body(version: i16, req: &ProduceRequest) -> Result<Vec<Bytes>> {
    if !(3..=12).contains(&version) {
        return Err(Error::invalid(format!("Produce v{version} not supported")));
    }
    let flexible = version >= 9;
    let mut parts = Vec::new();
    let mut buf = BytesMut::with_capacity(256);
    put_string(&mut buf, req.transactional_id.as_deref(), flexible)?;
    buf.put_i16(req.acks.code());
    buf.put_i32(i32::try_from(req.timeout.as_millis()).unwrap_or(i32::MAX));
    put_array_len(&mut buf, req.topics.len(), flexible);
    for t in &req.topics {
        put_string(&mut buf, Some(&t.topic), flexible)?;
        put_array_len(&mut buf, t.partitions.len(), flexible);
        for (p, batch) in &t.partitions {
            buf.put_i32(*p);
            let len = batch.len();
            if flexible {
                let n = u32::try_from(len + 1).map_err(|_| Error::invalid("batch too large"))?;
                put_uvarint(&mut buf, n);
            } else {
                let n = i32::try_from(len).map_err(|_| Error::invalid("batch too large"))?;
                buf.put_i32(n);
            }
            parts.push(buf.split().freeze());
            parts.extend(batch.parts.iter().filter(|b| !b.is_empty()).cloned());
            if flexible {
                buf.put_u8(0); // partition tagged fields
            }
        }
        if flexible {
            buf.put_u8(0); // topic tagged fields
        }
    }
    if flexible {
        buf.put_u8(0); // request tagged fields
    }
    parts.push(buf.freeze());
    Ok(parts)
}

fn results(resp: ProduceResponse) -> Vec<PartitionProduceResult> {
    let mut out = Vec::new();
    for t in resp.responses {
        let topic = t.name.0.to_string();
        for p in t.partition_responses {
            out.push(PartitionProduceResult {
                topic: topic.clone(),
                partition: p.index,
                error_code: p.error_code,
                base_offset: p.base_offset,
                log_append_time_ms: p.log_append_time_ms,
                log_start_offset: p.log_start_offset,
                error_message: p.error_message.map(|m| m.to_string()),
                record_errors: p
                    .record_errors
                    .into_iter()
                    .map(|r| {
                        (
                            r.batch_index,
                            r.batch_index_error_message.map(|m| m.to_string()),
                        )
                    })
                    .collect(),
            });
        }
    }
    out
}

/// A Produce request that is on its way; [`PendingProduce::wait`] returns the results.
pub(crate) struct PendingProduce {
    fut: ResponseFuture,
    broker: i32,
    timeout: Duration,
}

impl PendingProduce {
    /// Waits for the decoded response (`None` for acks=0), without converting it (the
    /// idempotent producer matches it to its batches without per-partition allocations).
    pub(crate) async fn wait_raw(self) -> Result<Option<ProduceResponse>> {
        let version = self.fut.version();
        match self.fut.wait(self.timeout).await? {
            None => Ok(None),
            Some(body) => frame::decode_body(ApiKey::Produce, version, body)
                .map(Some)
                .map_err(|e| e.broker(self.broker)),
        }
    }

    /// Waits for the response. Empty for acks=0.
    pub(crate) async fn wait(self) -> Result<Vec<PartitionProduceResult>> {
        let version = self.fut.version();
        match self.fut.wait(self.timeout).await? {
            None => Ok(Vec::new()),
            Some(body) => {
                let resp: ProduceResponse = frame::decode_body(ApiKey::Produce, version, body)
                    .map_err(|e| e.broker(self.broker))?;
                Ok(results(resp))
            }
        }
    }
}

impl Client {
    /// Queues a Produce request on `broker`'s produce connection; returns once it is queued
    /// (requests queued one after another are written in that order).
    pub(crate) async fn submit_produce(
        &self,
        broker: &Broker,
        req: &ProduceRequest,
    ) -> Result<(PendingProduce, i16)> {
        req.validate()?;
        broker.wait_throttle().await;
        let conn = broker.connection(Purpose::Produce).await?;
        self.submit_produce_on(broker, &conn, req).await
    }

    /// [`Client::submit_produce`] on an open produce connection of `broker`: never
    /// connects and never waits out a throttle (the caller does both, so that one slow
    /// broker does not hold up the others).
    pub(crate) async fn submit_produce_on(
        &self,
        broker: &Broker,
        conn: &Connection,
        req: &ProduceRequest,
    ) -> Result<(PendingProduce, i16)> {
        req.validate()?;
        let version = conn
            .versions()
            .pick(ApiKey::Produce)
            .map_err(|e| e.broker(broker.id))?;
        let body = encode_body(version, req)?;
        let corr = conn.next_correlation_id();
        let frame =
            frame::encode_request_parts(ApiKey::Produce, version, corr, conn.client_id(), body)?;
        let expect = req.acks != Acks::None;
        let fut = conn
            .submit(ApiKey::Produce, version, corr, frame, expect)
            .await?;
        // The broker may hold the request for `timeout` waiting for replication.
        let timeout = broker.request_timeout() + req.timeout;
        Ok((
            PendingProduce {
                fut,
                broker: broker.id,
                timeout,
            },
            version,
        ))
    }

    /// Sends one Produce request to broker `broker_id` (one attempt, no retries: the caller
    /// decides what a failure means for its batches). Returns one result per partition, or
    /// nothing for [`Acks::None`]. Per-partition errors are in the results, not the `Err`.
    pub async fn produce_to(
        &self,
        broker_id: i32,
        req: &ProduceRequest,
    ) -> Result<Vec<PartitionProduceResult>> {
        let b = self.broker(broker_id)?;
        let (pending, _) = self.submit_produce(&b, req).await?;
        pending.wait().await
    }

    /// Produces one batch to the partition's leader, retrying retriable errors (refreshing
    /// metadata on leader changes). Without an idempotent producer id a retry can duplicate
    /// the batch; use [`crate::producer::IdempotentProducer`] to avoid that.
    /// Returns the base offset (-1 for [`Acks::None`]).
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        batch: RawBatch,
        acks: Acks,
    ) -> Result<i64> {
        let mut req = ProduceRequest::new(acks);
        req.push(topic, partition, batch);
        self.with_retries("produce", || async {
            let b = self.leader_broker(topic, partition).await?;
            let res = self.produce_to(b.id, &req).await?;
            match res.into_iter().next() {
                None if acks == Acks::None => Ok(-1),
                None => Err(Error::protocol("Produce response without the partition")),
                Some(r) => match r.error() {
                    Some(e) => Err(e.broker(b.id)),
                    None => Ok(r.base_offset),
                },
            }
        })
        .await
        .map_err(|e| e.topic(topic).partition(partition))
    }
}

#[cfg(test)]
mod tests;
