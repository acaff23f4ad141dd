//! Verification: does the target hold exactly what the source holds?
//!
//! Per partition, both sides are read from their log start to the high watermark of the
//! Fetch response (not ListOffsets, which Tansu gets wrong) with strait-client's
//! [`PartitionConsumer`], and each record's (key, value, headers, timestamp) is fed, in
//! order, into a [`PartitionDigest`]: a record count and a 64-bit SipHash-1-3 checksum
//! (std's `DefaultHasher`, fixed keys; both sides are hashed by the same process).
//! Offsets are not hashed: the target's offsets may legitimately differ from the source's.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use strait_client::{Client, ConsumedRecord, FetchOptions, OffsetSpec, PartitionConsumer};

/// How long a partition read may go without progress before verification gives up.
const STALL: Duration = Duration::from_secs(30);

/// Count and checksum of one partition's records, in order.
#[derive(Debug, Clone)]
pub struct PartitionDigest {
    records: u64,
    hasher: DefaultHasher,
}

impl Default for PartitionDigest {
    fn default() -> Self {
        PartitionDigest {
            records: 0,
            hasher: DefaultHasher::new(),
        }
    }
}

impl PartitionDigest {
    /// Adds the next record.
    pub fn push(&mut self, r: &ConsumedRecord) {
        self.records += 1;
        r.key.hash(&mut self.hasher);
        r.value.hash(&mut self.hasher);
        r.headers.hash(&mut self.hasher);
        r.timestamp.hash(&mut self.hasher);
    }

    /// Records pushed.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The checksum of the records pushed so far.
    pub fn checksum(&self) -> u64 {
        self.hasher.finish()
    }
}

/// The comparison of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionCheck {
    /// Partition index.
    pub partition: i32,
    /// Records on the source.
    pub source_records: u64,
    /// Records on the target.
    pub target_records: u64,
    /// Source checksum (hex).
    pub source_checksum: String,
    /// Target checksum (hex).
    pub target_checksum: String,
    /// Count and checksum equal.
    pub ok: bool,
}

/// The comparison of every partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// True when every partition matches and both sides have the same partitions.
    pub ok: bool,
    /// Per partition.
    pub partitions: Vec<PartitionCheck>,
    /// Problems other than a partition mismatch (a side that could not be read, a
    /// different partition count).
    pub problems: Vec<String>,
}

impl Verification {
    /// Records on the source, all partitions.
    pub fn source_records(&self) -> u64 {
        self.partitions.iter().map(|p| p.source_records).sum()
    }

    /// Records on the target, all partitions.
    pub fn target_records(&self) -> u64 {
        self.partitions.iter().map(|p| p.target_records).sum()
    }

    /// One line: `ok (N records, P partitions)` or what differs.
    pub fn summary(&self) -> String {
        if self.ok {
            return format!(
                "ok: {} records in {} partitions, counts and checksums equal",
                self.source_records(),
                self.partitions.len()
            );
        }
        let mut parts: Vec<String> = self
            .partitions
            .iter()
            .filter(|p| !p.ok)
            .map(|p| {
                if p.source_records != p.target_records {
                    format!(
                        "partition {}: {} records on the source, {} on the target",
                        p.partition, p.source_records, p.target_records
                    )
                } else {
                    format!("partition {}: same count, checksums differ", p.partition)
                }
            })
            .collect();
        parts.extend(self.problems.iter().cloned());
        format!(
            "FAILED ({} records on the source, {} on the target): {}",
            self.source_records(),
            self.target_records(),
            parts.join("; ")
        )
    }
}

/// Compares per-partition digests (index = partition).
pub fn compare(source: &[PartitionDigest], target: &[PartitionDigest]) -> Verification {
    let mut problems = Vec::new();
    if source.len() != target.len() {
        problems.push(format!(
            "{} partitions on the source, {} on the target",
            source.len(),
            target.len()
        ));
    }
    let empty = PartitionDigest::default();
    let partitions: Vec<PartitionCheck> = (0..source.len().max(target.len()))
        .map(|i| {
            let s = source.get(i).unwrap_or(&empty);
            let t = target.get(i).unwrap_or(&empty);
            PartitionCheck {
                partition: i as i32,
                source_records: s.records(),
                target_records: t.records(),
                source_checksum: format!("{:016x}", s.checksum()),
                target_checksum: format!("{:016x}", t.checksum()),
                ok: s.records() == t.records() && s.checksum() == t.checksum(),
            }
        })
        .collect();
    Verification {
        ok: problems.is_empty() && partitions.iter().all(|p| p.ok),
        partitions,
        problems,
    }
}

/// Reads `topic`/`partition` from its log start to the Fetch high watermark.
pub async fn digest_partition(
    client: &Client,
    topic: &str,
    partition: i32,
) -> Result<PartitionDigest> {
    let start = client
        .list_offsets(
            topic,
            &[(partition, OffsetSpec::Earliest)],
            strait_client::IsolationLevel::ReadUncommitted,
        )
        .await
        .with_context(|| format!("log start of {topic}-{partition}"))?
        .first()
        .map(|o| o.offset.max(0))
        .unwrap_or(0);
    // Tansu answers a fetch after about half its max wait with what it gathered by then:
    // with 20 ms, reads of partitions of ~22,000 one-record (1 KiB) batches made no
    // progress for 30 s; with 500 ms they finish in seconds.
    let opts = FetchOptions {
        max_wait: Duration::from_millis(500),
        max_bytes: 4 * 1024 * 1024,
        ..FetchOptions::default()
    };
    // Committed records only, by the transactions' markers (exactly-once flows).
    let mut consumer = PartitionConsumer::new(client.clone(), topic, partition, start)
        .with_options(opts)
        .resolving_markers();
    let mut digest = PartitionDigest::default();
    let mut last_progress = Instant::now();
    loop {
        let records = consumer
            .poll()
            .await
            .with_context(|| format!("reading {topic}-{partition} at {}", consumer.position()))?;
        if !records.is_empty() {
            last_progress = Instant::now();
        }
        for r in &records {
            digest.push(r);
        }
        let hw = consumer.high_watermark();
        if hw >= 0 && consumer.position() >= hw {
            return Ok(digest);
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "reading {topic}-{partition}: no progress for {STALL:?} at offset {} (high watermark {hw})",
                consumer.position()
            );
        }
    }
}

/// Partitions of one side read at once. Each read is a consumer of its own with one Fetch
/// in flight: 10,000 at once queue behind each other at the broker until some time out
/// (seen on Tansu at 10,000 partitions), so they are read [`CONCURRENT_READS`] at a time.
pub const CONCURRENT_READS: i32 = 64;

/// Digests `partitions` partitions of `topic`, [`CONCURRENT_READS`] at a time.
pub async fn digest_topic(
    client: &Client,
    topic: &str,
    partitions: i32,
) -> Result<Vec<PartitionDigest>> {
    let mut set = tokio::task::JoinSet::new();
    let mut out = vec![PartitionDigest::default(); partitions.max(0) as usize];
    let mut next = 0;
    loop {
        while next < partitions && set.len() < CONCURRENT_READS as usize {
            let (client, topic, p) = (client.clone(), topic.to_string(), next);
            set.spawn(async move { (p, digest_partition(&client, &topic, p).await) });
            next += 1;
        }
        let Some(joined) = set.join_next().await else {
            return Ok(out);
        };
        let (p, d) = joined.context("verification task panicked")?;
        out[p as usize] = d?;
    }
}

/// Reads both sides and compares them. A side that cannot be read is a failed
/// verification (with the reason), not an error.
pub async fn verify(
    source: &Client,
    source_topic: &str,
    target: &Client,
    target_topic: &str,
    partitions: i32,
) -> Verification {
    let (s, t) = tokio::join!(
        digest_topic(source, source_topic, partitions),
        digest_topic(target, target_topic, partitions)
    );
    match (s, t) {
        (Ok(s), Ok(t)) => compare(&s, &t),
        (s, t) => {
            let mut problems = Vec::new();
            if let Err(e) = s {
                problems.push(format!("source {source_topic}: {e:#}"));
            }
            if let Err(e) = t {
                problems.push(format!("target {target_topic}: {e:#}"));
            }
            Verification {
                ok: false,
                partitions: Vec::new(),
                problems,
            }
        }
    }
}

#[cfg(test)]
mod tests;
