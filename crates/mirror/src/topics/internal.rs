//! Writing small records to a single-partition compacted topic on the target (MM2's
//! `heartbeats` and `<alias>.checkpoints.internal`), creating it on first use, and
//! reading such a topic (or the flow's state topic) back to its end ([`read_to_end`]).

use std::time::Duration;

use bytes::Bytes;
use strait_client::{
    Client, ConsumedRecord, FetchOptions, IsolationLevel, NewTopic, OffsetSpec, PartitionConsumer,
    ProducerRecord, RecordProducer,
};
use strait_records::Compression;

use crate::error::MirrorError;

/// Kafka's TOPIC_ALREADY_EXISTS: another writer created it first, which is fine.
const TOPIC_ALREADY_EXISTS: i16 = 36;

/// How long CreateTopics may take on the broker.
const CREATE_TIMEOUT: Duration = Duration::from_secs(30);

/// The order a reader of a transactionally written topic takes committed records in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Committed {
    /// Offset order: everything after an undecided transaction waits for it.
    InOffsetOrder,
    /// The order transactions committed in, past other writers' open transactions
    /// ([`strait_client::PartitionConsumer::resolving_markers_in_commit_order`]).
    InCommitOrder,
}

/// Reads `topic`/`partition` from its log start to its end (the Fetch high watermark),
/// handing every record whose transaction committed (or that was written outside one) to
/// `each`, in `order`. `kafka` names a failed request (`what`: "list offsets", "read").
pub(crate) async fn read_to_end(
    client: &Client,
    topic: &str,
    partition: i32,
    order: Committed,
    kafka: impl Fn(&str, strait_client::Error) -> MirrorError,
    each: impl FnMut(ConsumedRecord) -> Result<(), MirrorError>,
) -> Result<(), MirrorError> {
    TopicTail::new(topic, partition, order)
        .read_to_end(client, kafka, || {}, each)
        .await
}

/// A reader of one partition of an internal topic that keeps its place between reads:
/// the first [`TopicTail::read_to_end`] reads from the log start, every later one only
/// what was appended since (a transaction still open at the last end is held by the
/// consumer's resolver and handed on when its marker is read). Its caller keeps what it
/// folded from the records so far, and starts over when a read calls its `from_start`.
///
/// It starts over from the log start (the caller's fold with it) after a failed read and
/// when the log start moved past its place (records deleted under it).
#[derive(Debug)]
pub(crate) struct TopicTail {
    topic: String,
    partition: i32,
    order: Committed,
    consumer: Option<PartitionConsumer>,
}

impl TopicTail {
    /// A reader of `topic`/`partition` taking committed records in `order`.
    pub(crate) fn new(topic: &str, partition: i32, order: Committed) -> Self {
        TopicTail {
            topic: topic.to_owned(),
            partition,
            order,
            consumer: None,
        }
    }

    /// Forgets its place: the next read starts at the log start.
    pub(crate) fn restart(&mut self) {
        self.consumer = None;
    }

    /// Reads to the partition's end (the Fetch high watermark), handing records to `each`
    /// as [`read_to_end`] does, from where the last read ended; or from the log start,
    /// calling `from_start` first. After an error the next read starts at the log start.
    pub(crate) async fn read_to_end(
        &mut self,
        client: &Client,
        kafka: impl Fn(&str, strait_client::Error) -> MirrorError,
        from_start: impl FnOnce(),
        mut each: impl FnMut(ConsumedRecord) -> Result<(), MirrorError>,
    ) -> Result<(), MirrorError> {
        let result = self.read(client, &kafka, from_start, &mut each).await;
        if result.is_err() {
            self.restart();
        }
        result
    }

    async fn read(
        &mut self,
        client: &Client,
        kafka: &impl Fn(&str, strait_client::Error) -> MirrorError,
        from_start: impl FnOnce(),
        each: &mut impl FnMut(ConsumedRecord) -> Result<(), MirrorError>,
    ) -> Result<(), MirrorError> {
        let start = client
            .list_offsets(
                &self.topic,
                &[(self.partition, OffsetSpec::Earliest)],
                IsolationLevel::ReadUncommitted,
            )
            .await
            .map_err(|e| kafka("list offsets", e))?
            .first()
            .map_or(0, |o| o.offset.max(0));
        if self.consumer.as_ref().is_some_and(|c| c.position() < start) {
            // Records were deleted under the place reached.
            self.restart();
        }
        let consumer = match self.consumer.as_mut() {
            Some(c) => {
                // The caller's connection: an earlier one may be gone (a restarted flow).
                c.set_client(client.clone());
                c
            }
            None => {
                from_start();
                let opts = FetchOptions {
                    // Tansu answers nothing for 0; an empty topic costs one wait.
                    max_wait: Duration::from_millis(50),
                    ..FetchOptions::default()
                };
                let consumer =
                    PartitionConsumer::new(client.clone(), &self.topic, self.partition, start)
                        .with_options(opts);
                self.consumer.insert(match self.order {
                    Committed::InOffsetOrder => consumer.resolving_markers(),
                    Committed::InCommitOrder => consumer.resolving_markers_in_commit_order(),
                })
            }
        };
        loop {
            for r in consumer.poll().await.map_err(|e| kafka("read", e))? {
                each(r)?;
            }
            if consumer.high_watermark() >= 0 && consumer.position() >= consumer.high_watermark() {
                return Ok(());
            }
        }
    }
}

/// Writes `(key, value)` records to partition 0 of one compacted topic.
#[derive(Debug)]
pub(crate) struct InternalTopicWriter {
    client: Client,
    topic: String,
    replication_factor: i16,
    /// Created lazily: an idempotent producer costs an InitProducerId round trip.
    producer: Option<RecordProducer>,
    ensured: bool,
}

impl InternalTopicWriter {
    /// A writer for `topic`; `replication_factor` `None` = the broker's default.
    pub(crate) fn new(client: Client, topic: &str, replication_factor: Option<i16>) -> Self {
        InternalTopicWriter {
            client,
            topic: topic.to_owned(),
            replication_factor: replication_factor.unwrap_or(-1),
            producer: None,
            ensured: false,
        }
    }

    /// Appends `records` in one batch and waits for the acknowledgement.
    pub(crate) async fn write(
        &mut self,
        records: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<(), MirrorError> {
        if records.is_empty() {
            return Ok(());
        }
        self.ensure_topic().await?;
        let producer = match &self.producer {
            Some(p) => p,
            None => {
                let p = RecordProducer::new(self.client.clone(), Compression::None)
                    .await
                    .map_err(|e| self.err("start producer", e))?;
                self.producer.insert(p)
            }
        };
        let batch: Vec<ProducerRecord> = records
            .iter()
            .map(|(k, v)| ProducerRecord::new(Bytes::from(k.clone()), Bytes::from(v.clone())))
            .collect();
        let result = async {
            for ack in producer.send(&self.topic, 0, &batch).await? {
                ack.wait().await?;
            }
            Ok(())
        }
        .await;
        if result.is_err() {
            // A fresh producer id next time: whatever broke this one stays behind.
            self.producer = None;
        }
        result.map_err(|e| self.err("produce", e))
    }

    async fn ensure_topic(&mut self) -> Result<(), MirrorError> {
        if self.ensured {
            return Ok(());
        }
        let meta = self
            .client
            .metadata(Some(&[self.topic.as_str()]))
            .await
            .map_err(|e| self.err("metadata", e))?;
        if !meta.topics.contains_key(&self.topic) {
            let spec = NewTopic::new(&self.topic, 1)
                .with_replication_factor(self.replication_factor)
                .with_config("cleanup.policy", "compact");
            let results = self
                .client
                .create_topics(&[spec], CREATE_TIMEOUT)
                .await
                .map_err(|e| self.err("create topic", e))?;
            for (_, r) in results {
                match r {
                    Err(e) if e.kafka_code() == Some(TOPIC_ALREADY_EXISTS) => {}
                    Err(e) => return Err(self.err("create topic", e)),
                    Ok(()) => tracing::info!(topic = %self.topic, "created compacted topic"),
                }
            }
        }
        self.ensured = true;
        Ok(())
    }

    fn err(&self, what: &str, e: strait_client::Error) -> MirrorError {
        MirrorError::kafka(what, e).topic(self.topic.clone())
    }
}
