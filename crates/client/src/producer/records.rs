//! Records in → batches (strait-records) → [`IdempotentProducer`].

use bytes::Bytes;
use strait_records::{Batch, BatchBuilder, Compression, Header};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::producer::idempotent::{AckFuture, IdempotentProducer};
use crate::producer::state::ProducerConfig;

/// One record to produce.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    /// Key (`None` = null).
    pub key: Option<Bytes>,
    /// Value (`None` = null, a tombstone).
    pub value: Option<Bytes>,
    /// Headers in order: `(name, value)`.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// CreateTime in ms since the epoch (`None` = now).
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a key and value.
    pub fn new(key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            key: Some(key.into()),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push((name.into(), Some(value.into())));
        self
    }

    /// Sets the timestamp.
    pub fn with_timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }
}

/// A record-level idempotent producer: builds v2 batches with the chosen codec and sends
/// them through an [`IdempotentProducer`].
#[derive(Debug, Clone)]
pub struct RecordProducer {
    producer: IdempotentProducer,
    compression: Compression,
    max_batch_bytes: usize,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl RecordProducer {
    /// A producer writing `compression` batches of at most ~1 MiB of uncompressed records.
    pub async fn new(client: Client, compression: Compression) -> Result<Self> {
        Self::with_config(client, compression, ProducerConfig::default()).await
    }

    /// As [`RecordProducer::new`], with the producer's timeouts and limits from `config`.
    pub async fn with_config(
        client: Client,
        compression: Compression,
        config: ProducerConfig,
    ) -> Result<Self> {
        Ok(RecordProducer {
            producer: IdempotentProducer::new(client, config).await?,
            compression,
            max_batch_bytes: 1024 * 1024,
        })
    }

    /// Sets the uncompressed size at which a batch is cut.
    pub fn with_max_batch_bytes(mut self, bytes: usize) -> Self {
        self.max_batch_bytes = bytes.max(1);
        self
    }

    /// The underlying raw-batch producer.
    pub fn raw(&self) -> &IdempotentProducer {
        &self.producer
    }

    /// Batches `records` for `topic`/`partition` and queues them; one [`AckFuture`] per
    /// batch, in order. The ack's `base_offset` is that of the batch's first record.
    pub async fn send(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProducerRecord],
    ) -> Result<Vec<AckFuture>> {
        let mut acks = Vec::new();
        for batch in build_batches(records, self.compression, self.max_batch_bytes)? {
            acks.push(self.producer.send(topic, partition, batch).await?);
        }
        Ok(acks)
    }
}

/// Cuts `records` into v2 batches of about `max_batch_bytes` uncompressed record bytes
/// each, compressed with `compression` (no producer stamp yet). Every record is checked
/// before anything is sent.
pub(crate) fn build_batches(
    records: &[ProducerRecord],
    compression: Compression,
    max_batch_bytes: usize,
) -> Result<Vec<Batch>> {
    let now = now_ms();
    let mut out = Vec::new();
    let mut builder = BatchBuilder::new(compression);
    let build = |b: BatchBuilder| {
        b.build()
            .map_err(|e| Error::invalid(format!("building a batch: {e}")))
    };
    for r in records {
        let headers: Vec<Header> = r
            .headers
            .iter()
            .map(|(k, v)| Header {
                key: Bytes::from(k.clone().into_bytes()),
                value: v.clone(),
            })
            .collect();
        builder
            .push(
                r.timestamp.unwrap_or(now),
                r.key.as_deref(),
                r.value.as_deref(),
                &headers,
            )
            .map_err(|e| Error::invalid(format!("record: {e}")))?;
        if builder.records_size() >= max_batch_bytes {
            let full = std::mem::replace(&mut builder, BatchBuilder::new(compression));
            out.push(build(full)?);
        }
    }
    if !builder.is_empty() {
        out.push(build(builder)?);
    }
    Ok(out)
}
