//! Partition bounds from Fetch: log start, high watermark, last stable offset.
//!
//! ListOffsets(latest) is wrong on Tansu (it answers the last batch's base offset + 1),
//! so ends come from a Fetch response's high watermark / last stable offset, fetched at
//! the log start (ListOffsets(earliest), right everywhere). This is right on Kafka too.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::backoff::{Backoff, BackoffConfig};
use strait_client::{
    Client, ConsumedRecord, FetchOptions, FetchPosition, FetchedPartition, IsolationLevel,
    OffsetSpec, PartitionConsumer,
};

/// A partition's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// First offset in the log.
    pub log_start: i64,
    /// The end a reader at `isolation` can reach: the last stable offset for
    /// read-committed (when the broker reports one), else the high watermark.
    pub end: i64,
}

const ATTEMPTS: u32 = 20;

/// Bounds of `partitions` of `topic`, retrying leader moves and log-start races.
pub async fn bounds(
    client: &Client,
    topic: &str,
    partitions: &[i32],
    isolation: IsolationLevel,
) -> Result<BTreeMap<i32, Bounds>, strait_client::Error> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<i32> = partitions.to_vec();
    let mut last_err = None;
    let mut backoff = Backoff::new(BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
    });
    for attempt in 0..ATTEMPTS {
        if todo.is_empty() {
            break;
        }
        if attempt > 0 {
            client.invalidate_metadata();
            tokio::time::sleep(backoff.next_delay()).await;
        }
        let by_leader = starts_by_leader(client, topic, &todo, isolation).await?;
        let opts = FetchOptions {
            // Not 0: Tansu answers nothing at all for max_wait = 0.
            max_wait: Duration::from_millis(10),
            min_bytes: 1,
            max_bytes: 1,
            isolation,
        };
        for (leader, positions) in by_leader {
            let result = match client.fetch(leader, &positions, &opts).await {
                Ok(r) => r,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            for p in result.partitions {
                if let Some(e) = p.error() {
                    last_err = Some(e);
                    continue;
                }
                let Some(start) = positions.iter().find(|x| x.partition == p.partition) else {
                    continue;
                };
                out.insert(p.partition, bounds_of(&p, start.offset, isolation));
            }
        }
        todo.retain(|p| !out.contains_key(p));
    }
    if todo.is_empty() {
        Ok(out)
    } else {
        Err(last_err.unwrap_or_else(|| {
            strait_client::Error::new(strait_client::ErrorKind::NoBrokerAvailable)
                .topic(topic)
                .message(format!("no Fetch answer for partitions {todo:?}"))
        }))
    }
}

/// Where each of `partitions` starts (ListOffsets earliest), as one-byte fetch positions
/// grouped by the partition's leader.
async fn starts_by_leader(
    client: &Client,
    topic: &str,
    partitions: &[i32],
    isolation: IsolationLevel,
) -> Result<BTreeMap<i32, Vec<FetchPosition>>, strait_client::Error> {
    let specs: Vec<(i32, OffsetSpec)> = partitions
        .iter()
        .map(|p| (*p, OffsetSpec::Earliest))
        .collect();
    let starts = client.list_offsets(topic, &specs, isolation).await?;
    let mut by_leader: BTreeMap<i32, Vec<FetchPosition>> = BTreeMap::new();
    for s in &starts {
        let (leader, _) = client.leader_for(topic, s.partition).await?;
        let mut pos = FetchPosition::new(topic, s.partition, s.offset.max(0));
        pos.max_bytes = 1;
        by_leader.entry(leader).or_default().push(pos);
    }
    Ok(by_leader)
}

/// A partition's bounds from its Fetch answer: the last stable offset (read_committed,
/// when known) or the high watermark, and the log start (else where it was read from,
/// `start`).
fn bounds_of(p: &FetchedPartition, start: i64, isolation: IsolationLevel) -> Bounds {
    let end = if isolation == IsolationLevel::ReadCommitted && p.last_stable_offset >= 0 {
        p.last_stable_offset
    } else {
        p.high_watermark
    };
    let log_start = if p.log_start_offset >= 0 {
        p.log_start_offset
    } else {
        start
    };
    Bounds { log_start, end }
}

/// The first record at or after `offset` of `topic`/`partition` (read_committed, a few
/// short fetches): `None` at the end of the log.
pub async fn first_record_at(
    client: &Client,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<Option<ConsumedRecord>, strait_client::Error> {
    let opts = FetchOptions {
        max_wait: Duration::from_millis(100),
        isolation: IsolationLevel::ReadCommitted,
        ..FetchOptions::default()
    };
    let mut consumer =
        PartitionConsumer::new(client.clone(), topic, partition, offset).with_options(opts);
    for _ in 0..3 {
        let records = consumer.poll().await?;
        if let Some(r) = records.into_iter().find(|r| r.offset >= offset) {
            return Ok(Some(r));
        }
        if consumer.high_watermark() >= 0 && consumer.position() >= consumer.high_watermark() {
            break;
        }
    }
    Ok(None)
}

/// The proof that a broker's answer `offset` to ListOffsets by timestamp `ms` for
/// `partition` is wrong: the first record at or after `offset` when it is older than `ms`
/// (Kafka returns the first offset whose timestamp is ≥ it; Tansu 0.6 answers offset 0 for
/// every timestamp). `None`: the answer holds (nothing at or after the offset yet holds
/// too).
pub async fn older_record_at(
    client: &Client,
    topic: &str,
    partition: i32,
    offset: i64,
    ms: i64,
) -> Result<Option<ConsumedRecord>, strait_client::Error> {
    let record = first_record_at(client, topic, partition, offset).await?;
    Ok(record.filter(|r| r.timestamp < ms))
}

/// Kafka's default `max.message.bytes` (used when the target topic does not say).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

/// The target topic's `max.message.bytes`, or Kafka's default: the largest batch written
/// to it (bigger source batches are re-encoded to fit).
pub async fn max_message_bytes(target: &Client, topic: &str) -> usize {
    match target
        .describe_configs(
            strait_client::ResourceType::Topic,
            &[topic],
            Some(&["max.message.bytes"]),
        )
        .await
    {
        Ok(configs) => configs
            .iter()
            .flat_map(|c| &c.entries)
            .find(|e| e.name == "max.message.bytes")
            .and_then(|e| e.value.as_deref()?.parse().ok())
            .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
        Err(e) => {
            tracing::debug!(topic, error = %e,
                "describe configs; assuming Kafka's default max.message.bytes");
            DEFAULT_MAX_MESSAGE_BYTES
        }
    }
}
