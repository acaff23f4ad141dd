//! The load generator: a pool of synthetic, semi-compressible JSON-like payloads made once,
//! and producers that write them at full speed (drain) or at a set rate (live, in
//! [`super::live`]) with strait-client's [`RecordProducer`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use strait_client::{AckFuture, Client, NewTopic, ProducerRecord, RecordProducer};
use strait_records::Compression;

/// Distinct payloads in the pool: enough that batches are not trivially repetitive, few
/// enough that generating them costs nothing next to the load.
pub const POOL_SIZE: usize = 4096;

/// Name of the header every bench record carries.
pub const HEADER: &str = "strait-bench";

/// Per-record bytes the estimate adds for the v2 record framing (lengths, deltas, attrs).
const RECORD_OVERHEAD: usize = 12;

/// Acks kept unresolved per partition before the generator waits for the oldest.
const MAX_PENDING_ACKS: usize = 16;

/// A small deterministic PRNG (splitmix64): the same pool on every run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "checkout",
    "session",
    "click",
    "view",
    "cart",
    "payment",
    "search",
    "login",
    "logout",
    "product",
    "category",
    "banner",
    "promo",
    "shipping",
    "refund",
    "review",
    "rating",
    "android",
    "ios",
    "web",
    "desktop",
    "mobile",
    "tablet",
    "eu-west-1",
    "us-east-1",
    "ap-south-1",
    "premium",
    "basic",
    "trial",
    "visa",
    "mastercard",
    "paypal",
    "EUR",
    "USD",
];
const EVENTS: &[&str] = &[
    "page_view",
    "add_to_cart",
    "purchase",
    "signup",
    "search",
    "logout",
];
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Record keys and values made once and reused round-robin by the generators.
#[derive(Debug, Clone)]
pub struct PayloadPool {
    values: Vec<Bytes>,
    keys: Vec<Bytes>,
}

impl PayloadPool {
    /// `count` distinct JSON-like values of exactly `value_size` bytes and as many keys.
    ///
    /// A value is a JSON object with an id, a user, an event type, a timestamp, a few
    /// attributes, then a `"data"` string of dictionary words (compressible) interleaved
    /// with random base64-alphabet runs (not compressible), padded to the size. lz4 and
    /// zstd shrink it to roughly a half to a third, like typical event streams.
    pub fn new(value_size: usize, count: usize, seed: u64) -> PayloadPool {
        let mut rng = Rng::new(seed);
        let mut values = Vec::with_capacity(count);
        let mut keys = Vec::with_capacity(count);
        for i in 0..count {
            let user = rng.below(50_000);
            keys.push(Bytes::from(format!("user-{user:05}")));
            let mut v = format!(
                "{{\"id\":\"{:016x}\",\"user\":\"user-{user:05}\",\"event\":\"{}\",\"ts\":{},\
                 \"region\":\"{}\",\"device\":{{\"os\":\"{}\",\"build\":{}}},\"amount\":{}.{:02},\
                 \"seq\":{i},\"data\":\"",
                rng.next_u64(),
                EVENTS[rng.below(EVENTS.len() as u64) as usize],
                1_700_000_000_000u64 + rng.below(1_000_000_000),
                WORDS[23 + rng.below(3) as usize],
                WORDS[17 + rng.below(6) as usize],
                rng.below(10_000),
                rng.below(1000),
                rng.below(100),
            )
            .into_bytes();
            while v.len() + 2 < value_size {
                if rng.below(2) == 0 {
                    v.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
                    v.push(b' ');
                } else {
                    for _ in 0..(4 + rng.below(8)) {
                        v.push(ALNUM[rng.below(ALNUM.len() as u64) as usize]);
                    }
                }
            }
            v.truncate(value_size.saturating_sub(2));
            v.extend_from_slice(b"\"}");
            v.truncate(value_size);
            values.push(Bytes::from(v));
        }
        PayloadPool { values, keys }
    }

    /// The `i`-th key and value (round-robin).
    pub fn get(&self, i: u64) -> (Bytes, Bytes) {
        let n = self.values.len().max(1) as u64;
        let j = (i % n) as usize;
        (self.keys[j].clone(), self.values[j].clone())
    }

    /// Average key length.
    pub fn avg_key_len(&self) -> usize {
        self.keys.iter().map(Bytes::len).sum::<usize>() / self.keys.len().max(1)
    }
}

/// Creates `topic` with `partitions` partitions; fails if it exists already.
pub async fn create_topic(client: &Client, topic: &str, partitions: i32) -> Result<()> {
    let results = client
        .create_topics(&[NewTopic::new(topic, partitions)], Duration::from_secs(30))
        .await
        .with_context(|| format!("creating topic {topic}"))?;
    for (name, r) in results {
        r.with_context(|| {
            format!(
                "creating topic {name} (it must not exist: use another --topic or fresh brokers)"
            )
        })?;
    }
    // Wait until the metadata names a leader for every partition.
    let deadline = Instant::now() + Duration::from_secs(30);
    for p in 0..partitions {
        loop {
            match client.leader_for(topic, p).await {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!("waiting for {topic}-{p}: {e}");
                    client.invalidate_metadata();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("no leader for {topic}-{p}")),
            }
        }
    }
    Ok(())
}

/// Counters the progress display reads while a generator runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Value bytes acknowledged.
    pub bytes: AtomicU64,
    /// Records acknowledged.
    pub records: AtomicU64,
}

/// What a drain load wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadStats {
    /// Records acknowledged.
    pub records: u64,
    /// Bytes of record values.
    pub value_bytes: u64,
    /// Bytes of keys + values + header names and values (the records' uncompressed payload).
    pub payload_bytes: u64,
    /// Batches produced.
    pub batches: u64,
    /// From the first send to the last acknowledgement.
    pub elapsed: Duration,
}

/// Drain load: writes `total` bytes of values to `partitions` partitions of `topic` (spread
/// evenly) as fast as the broker acknowledges them, in batches of about `batch_size`
/// uncompressed bytes with `compression`. Every record carries one header,
/// [`HEADER`] = its per-partition sequence number (8 bytes, big-endian), and timestamp
/// `base_ts + sequence`.
#[allow(clippy::too_many_arguments)]
pub async fn drain_load(
    client: &Client,
    topic: &str,
    partitions: i32,
    pool: Arc<PayloadPool>,
    total: u64,
    record_size: u64,
    batch_size: u64,
    compression: Compression,
    progress: Arc<Progress>,
) -> Result<LoadStats> {
    let producer = RecordProducer::new(client.clone(), compression)
        .await
        .context("starting the load producer")?
        .with_max_batch_bytes(usize::MAX / 2);
    let records_total = total.div_ceil(record_size.max(1));
    let per_record = pool.avg_key_len() + record_size as usize + HEADER.len() + 8;
    let per_batch = (batch_size as usize / (per_record + RECORD_OVERHEAD)).max(1) as u64;
    let base_ts = now_ms();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for p in 0..partitions {
        let n = records_total / partitions as u64
            + u64::from((p as u64) < records_total % partitions as u64);
        tasks.spawn(load_partition(
            producer.clone(),
            pool.clone(),
            topic.to_string(),
            p,
            n,
            per_batch,
            base_ts,
            progress.clone(),
        ));
    }
    let mut total_stats = LoadStats::default();
    while let Some(joined) = tasks.join_next().await {
        let s = joined.context("load task panicked")??;
        total_stats.records += s.records;
        total_stats.value_bytes += s.value_bytes;
        total_stats.payload_bytes += s.payload_bytes;
        total_stats.batches += s.batches;
    }
    total_stats.elapsed = started.elapsed();
    Ok(total_stats)
}

/// One partition's share of a drain load: `n` records in batches of `per_batch`, at most
/// [`MAX_PENDING_ACKS`] acknowledgements outstanding.
#[allow(clippy::too_many_arguments)]
async fn load_partition(
    producer: RecordProducer,
    pool: Arc<PayloadPool>,
    topic: String,
    p: i32,
    n: u64,
    per_batch: u64,
    base_ts: i64,
    progress: Arc<Progress>,
) -> Result<LoadStats> {
    let mut pending: VecDeque<(AckFuture, u64, u64)> = VecDeque::new();
    let mut stats = LoadStats::default();
    let mut seq = 0u64;
    while seq < n {
        let end = (seq + per_batch).min(n);
        let mut batch = Vec::with_capacity((end - seq) as usize);
        let mut vbytes = 0u64;
        for s in seq..end {
            let (k, v) = pool.get(s.wrapping_mul(7919).wrapping_add(p as u64));
            stats.payload_bytes += (k.len() + v.len() + HEADER.len() + 8) as u64;
            vbytes += v.len() as u64;
            batch.push(
                ProducerRecord::new(k, v)
                    .with_header(HEADER, Bytes::copy_from_slice(&s.to_be_bytes()))
                    .with_timestamp(base_ts + s as i64),
            );
        }
        let count = end - seq;
        for ack in producer
            .send(&topic, p, &batch)
            .await
            .with_context(|| format!("producing to {topic}-{p}"))?
        {
            stats.batches += 1;
            // One batch per call (the producer's cut is set out of reach), so the
            // call's counts belong to its one ack.
            pending.push_back((ack, count, vbytes));
        }
        while pending.len() > MAX_PENDING_ACKS {
            settle(pending.pop_front(), &topic, p, &mut stats, &progress).await?;
        }
        seq = end;
    }
    while !pending.is_empty() {
        settle(pending.pop_front(), &topic, p, &mut stats, &progress).await?;
    }
    Ok(stats)
}

async fn settle(
    entry: Option<(AckFuture, u64, u64)>,
    topic: &str,
    p: i32,
    stats: &mut LoadStats,
    progress: &Progress,
) -> Result<()> {
    let Some((ack, count, vbytes)) = entry else {
        return Ok(());
    };
    ack.wait()
        .await
        .with_context(|| format!("acknowledgement from {topic}-{p}"))?;
    stats.records += count;
    stats.value_bytes += vbytes;
    progress.records.fetch_add(count, Ordering::Relaxed);
    progress.bytes.fetch_add(vbytes, Ordering::Relaxed);
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Fails unless `records` is non-zero (a bench that moved nothing measured nothing).
pub fn ensure_loaded(stats: &LoadStats) -> Result<()> {
    if stats.records == 0 {
        bail!("the load generator wrote no records");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
