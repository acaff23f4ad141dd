//! Writing the state topic: [`StateWriter`], with the producer it starts on its first
//! write, or the flow's transaction (exactly-once).

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use bytes::Bytes;
use strait_client::{
    Client, ProducerConfig, ProducerRecord, RecordProducer, TransactionalProducer,
};
use strait_records::Compression;

use super::ensure_state_topic;
use crate::config::Flow;
use crate::error::MirrorError;
use crate::state::codec::{PartitionState, encode_key, encode_value};

/// Writes partition states to the state topic. Each write first makes sure the topic
/// exists (one Metadata request; CreateTopics when it is missing), so a target that lost
/// it — a broker restarted empty, an operator's mistake — gets it back with the current
/// state instead of state writes that wait on a topic nobody re-creates.
pub struct StateWriter {
    target: Client,
    flow: Flow,
    cluster: String,
    topic: String,
    producer: Option<RecordProducer>,
    /// Exactly-once: states are written in the flow's open transaction instead.
    txn: Option<TransactionalProducer>,
    /// Timeouts of the producer (created on first write): the flow's delivery and request
    /// timeouts, so a state write gives up on the same schedule as the data it describes.
    producer_config: ProducerConfig,
    /// Scale-out: the group generation stamped on every record ([`crate::state::stamp`]); no
    /// stamp while it is negative.
    generation: Option<Arc<AtomicI32>>,
}

impl std::fmt::Debug for StateWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWriter")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl StateWriter {
    /// A writer for `flow`'s state topic (which [`ensure_state_topic`] created).
    pub fn new(target: Client, flow: &Flow) -> Self {
        StateWriter {
            target,
            flow: flow.clone(),
            cluster: flow.target.clone(),
            topic: flow.state_topic.clone(),
            producer: None,
            txn: None,
            producer_config: ProducerConfig::default(),
            generation: None,
        }
    }

    /// Stamps every record with the generation `generation` holds when it is written
    /// (scale-out).
    pub fn with_generation(mut self, generation: Arc<AtomicI32>) -> Self {
        self.generation = Some(generation);
        self
    }

    /// Writes into `producer`'s open transaction (exactly-once): the states become
    /// visible when the flow's committer commits it, together with the batches they
    /// describe.
    pub fn in_transactions(mut self, producer: TransactionalProducer) -> Self {
        self.txn = Some(producer);
        self
    }

    /// Sets the timeouts of the producer the writer starts on its first write.
    pub fn with_producer_config(mut self, config: ProducerConfig) -> Self {
        self.producer_config = config;
        self
    }

    /// Appends the states and waits until the target acknowledged them.
    pub async fn write(
        &mut self,
        states: &[((String, i32), PartitionState)],
    ) -> Result<(), MirrorError> {
        let records: Vec<(Vec<u8>, Vec<u8>)> = states
            .iter()
            .map(|((topic, partition), s)| (encode_key(topic, *partition), encode_value(s)))
            .collect();
        self.write_encoded(records).await
    }

    /// Appends encoded (key, value) records — flow or replay records — and waits until the
    /// target acknowledged them.
    pub async fn write_encoded(
        &mut self,
        records: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<(), MirrorError> {
        self.write_raw(records.into_iter().map(|(k, v)| (k, Some(v))).collect())
            .await
    }

    /// [`StateWriter::write_encoded`] with tombstones (`None` values).
    pub async fn write_raw(
        &mut self,
        records: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), MirrorError> {
        if records.is_empty() {
            return Ok(());
        }
        ensure_state_topic(&self.target, &self.flow).await?;
        let records = self.stamped(records);
        if let Some(txn) = &self.txn {
            let result = async {
                for ack in txn.send_records(&self.topic, 0, &records).await? {
                    ack.wait().await?;
                }
                Ok(())
            }
            .await;
            return result.map_err(|e| self.err("write in the transaction", e));
        }
        // Taken out for the write and put back only when it succeeds: a write that fails,
        // or is cancelled half-way, leaves no producer with a stuck batch behind.
        let producer = match self.producer.take() {
            Some(p) => p,
            None => RecordProducer::with_config(
                self.target.clone(),
                Compression::Lz4,
                self.producer_config,
            )
            .await
            .map_err(|e| self.err("start producer", e))?,
        };
        let result = async {
            for ack in producer.send(&self.topic, 0, &records).await? {
                ack.wait().await?;
            }
            Ok(())
        }
        .await;
        if result.is_ok() {
            self.producer = Some(producer);
        }
        result.map_err(|e| self.err("write", e))
    }

    /// The records to produce, each stamped with the generation the writer holds now
    /// (scale-out; none while it is negative).
    fn stamped(&self, records: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Vec<ProducerRecord> {
        let stamp = self
            .generation
            .as_ref()
            .map(|g| g.load(Ordering::Acquire))
            .filter(|g| *g >= 0);
        records
            .into_iter()
            .map(|(k, v)| {
                let mut r = ProducerRecord::new(Bytes::from(k), Bytes::new());
                r.value = v.map(Bytes::from);
                if let Some(g) = stamp {
                    let value = Bytes::copy_from_slice(&crate::state::stamp::encode(g));
                    r.headers.push((
                        crate::state::stamp::GENERATION_HEADER.to_owned(),
                        Some(value),
                    ));
                }
                r
            })
            .collect()
    }

    fn err(&self, what: &str, e: strait_client::Error) -> MirrorError {
        MirrorError::kafka(format!("state topic {}: {what}", self.topic), e)
            .flow(&self.flow.name)
            .cluster(&self.cluster)
    }
}
