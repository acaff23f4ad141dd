//! Live mode: the engine replicates continuously (`Engine::run`) while a producer writes to
//! the source at a fixed rate and a consumer tails every partition of the target.
//!
//! Every record carries the header [`super::load::HEADER`] = 16 bytes: its per-partition
//! sequence number and its send time (µs since the bench's start, monotonic clock), both
//! big-endian. The producer notes when each batch's acknowledgement arrives; the tailer
//! notes when each record becomes readable on the target (the fetch that returned it
//! completed). Latency = readable on the target − acknowledged by the source, per record.
//!
//! Decomposed: the source's produce acknowledgement (send → ack, per record), the
//! engine's fetch wait and its fetch response → target acknowledgement (per Fetch and per
//! batch produced, from the engine's own histograms, read in-process by the caller), and
//! the tailer's fetch wait (per poll).
//!
//! [`produce`] holds the per-partition producers, [`tail`] the target's tailers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::{BufMut, Bytes, BytesMut};
use slots::Table;
use strait_client::{Client, FetchOptions};
use strait_mirror::metrics::HistogramSnapshot;
use strait_records::Compression;

use super::load::{HEADER, PayloadPool, Progress};
use produce::Producing;
use tail::Tailing;

mod produce;
mod tail;

/// How often the producer wakes to send what the rate owes.
const TICK: Duration = Duration::from_millis(5);
/// Largest batch the live producer sends, in bytes of record values: what one tick owes
/// grows when a tick comes late (at 50,000 records/s of 1 KiB, a 200 ms stall owes a
/// partition 1.6 MiB), and Kafka refuses a batch over its `message.max.bytes` (1 MiB by
/// default) for good. Half of that leaves room for keys, headers and a codec's overhead on
/// values that do not compress.
const MAX_SEND_VALUE_BYTES: u64 = 512 * 1024;
/// The target tailer's fetch max wait (Tansu answers a parked fetch after max_wait/2).
pub const TAIL_MAX_WAIT: Duration = Duration::from_millis(10);
/// The tailer's fetch max wait while it is behind the target's high watermark.
const TAIL_CATCH_UP_MAX_WAIT: Duration = Duration::from_millis(500);
/// How long after the last acknowledgement the target may take to catch up before the
/// remaining records count as missing.
const GRACE: Duration = Duration::from_secs(30);
/// "Kept up": everything arrived, and within this long of the last acknowledgement.
const KEPT_UP_WITHIN: Duration = Duration::from_secs(1);

/// Per-partition times (µs since the bench epoch) indexed by sequence number.
mod slots {
    use std::sync::Mutex;

    /// A grow-on-write table of `u64` slots per partition; `u64::MAX` = not seen.
    #[derive(Debug)]
    pub struct Table(Vec<Mutex<Vec<u64>>>);

    impl Table {
        /// One empty table per partition.
        pub fn new(partitions: usize) -> Table {
            Table((0..partitions).map(|_| Mutex::new(Vec::new())).collect())
        }

        /// Sets slots `from..to` of partition `p` to `t`; returns how many were already set.
        pub fn set_range(&self, p: usize, from: u64, to: u64, t: u64) -> u64 {
            let mut v = self.0[p].lock().unwrap_or_else(|e| e.into_inner());
            if v.len() < to as usize {
                v.resize(to as usize, u64::MAX);
            }
            let mut dup = 0;
            for slot in &mut v[from as usize..to as usize] {
                if *slot != u64::MAX {
                    dup += 1;
                } else {
                    *slot = t;
                }
            }
            dup
        }

        /// A copy of partition `p`'s slots.
        pub fn snapshot(&self, p: usize) -> Vec<u64> {
            self.0[p].lock().unwrap_or_else(|e| e.into_inner()).clone()
        }
    }
}

/// What live mode measured.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LiveResult {
    /// Records acknowledged by the source.
    pub produced: u64,
    /// Distinct records seen on the target.
    pub received: u64,
    /// Records seen on the target more than once.
    pub duplicates: u64,
    /// Records acknowledged by the source and never seen on the target (after the grace).
    pub missing: u64,
    /// Produced bytes of values per second over the production window, MiB/s.
    pub achieved_mib_per_sec: f64,
    /// Records the tailer had not yet read from the target when the last acknowledgement
    /// arrived.
    pub lag_at_end_records: u64,
    /// Of those, records not yet *written* to the target then (source acks minus the
    /// target's high watermarks, read right after the last ack): the engine's share of the
    /// lag; the rest is the tailer's (it runs in this process, as does the producer).
    pub engine_lag_at_end_records: u64,
    /// From the last acknowledgement until the target had everything (or the grace ran out), s.
    pub catch_up_secs: f64,
    /// Everything arrived within 1 s of the last acknowledgement.
    pub kept_up: bool,
    /// Source ack → readable on target, ms: p50, p90, p99, max.
    pub ack_to_readable_ms: Percentiles,
    /// Send (before the produce request) → readable on target, ms.
    pub send_to_readable_ms: Percentiles,
    /// Send → source ack, ms (the source broker's produce latency).
    pub send_to_ack_ms: Percentiles,
    /// The engine's Fetch request sent → response received, per Fetch, ms (from its
    /// `strait_fetch_wait_seconds` histogram: percentiles interpolated in its buckets).
    pub engine_fetch_wait_ms: Percentiles,
    /// The engine's Fetch response received → target acknowledgement, per batch
    /// produced, ms (`strait_replication_engine_latency_seconds`, likewise).
    pub engine_fetch_to_ack_ms: Percentiles,
    /// Of that, handed to the producer → target acknowledgement, per batch, ms
    /// (`strait_produce_ack_seconds`).
    pub engine_produce_to_ack_ms: Percentiles,
    /// The tailer's Fetch request sent → response received, per poll, ms.
    pub tail_wait_ms: Percentiles,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Percentiles {
    /// Samples.
    pub samples: u64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

impl Percentiles {
    /// Percentiles (nearest rank) of `us` (microseconds); sorts it.
    pub fn of_micros(us: &mut [u64]) -> Percentiles {
        if us.is_empty() {
            return Percentiles::default();
        }
        us.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * us.len() as f64).ceil() as usize).clamp(1, us.len());
            us[rank - 1] as f64 / 1000.0
        };
        Percentiles {
            samples: us.len() as u64,
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: us[us.len() - 1] as f64 / 1000.0,
        }
    }

    /// Percentiles of a histogram of seconds (interpolated inside its buckets; the maximum
    /// is exact).
    pub fn of_histogram(h: &HistogramSnapshot) -> Percentiles {
        let ms = |q: f64| h.quantile(q).unwrap_or(0.0) * 1000.0;
        Percentiles {
            samples: h.count,
            p50: ms(0.50),
            p90: ms(0.90),
            p99: ms(0.99),
            max: h.max * 1000.0,
        }
    }
}

/// The sum of `topic`'s high watermarks on `client`, one small Fetch per partition (Tansu's
/// ListOffsets LATEST is wrong for multi-record batches; the Fetch high watermark is right).
async fn target_end(client: &Client, topic: &str, partitions: i32) -> Result<u64> {
    let opts = FetchOptions {
        max_wait: Duration::from_millis(5),
        max_bytes: 1,
        ..FetchOptions::default()
    };
    let mut end = 0;
    for p in 0..partitions {
        let mut c =
            strait_client::PartitionConsumer::new(client.clone(), topic, p, 0).with_options(opts);
        c.poll()
            .await
            .with_context(|| format!("reading the high watermark of {topic}-{p}"))?;
        end += u64::try_from(c.high_watermark()).unwrap_or(0);
    }
    Ok(end)
}

fn encode_header(seq: u64, send_us: u64) -> Bytes {
    let mut b = BytesMut::with_capacity(16);
    b.put_u64(seq);
    b.put_u64(send_us);
    b.freeze()
}

/// `(sequence, send time µs)` from a bench header value.
pub fn decode_header(v: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_be_bytes(v.get(0..8)?.try_into().ok()?);
    let send = u64::from_be_bytes(v.get(8..16)?.try_into().ok()?);
    Some((seq, send))
}

/// Everything live mode needs.
#[derive(Debug, Clone)]
pub struct LiveParams {
    /// Source topic.
    pub topic: String,
    /// Target topic the engine writes.
    pub target_topic: String,
    /// Partitions.
    pub partitions: i32,
    /// Value size.
    pub record_size: u64,
    /// Produce rate, MiB/s of values.
    pub rate_mib: f64,
    /// Production window.
    pub duration: Duration,
    /// Batch codec.
    pub compression: Compression,
}

/// Produces at the rate for the duration, tails the target, and measures. The engine must
/// already be running (the caller owns it).
pub async fn run(
    source: &Client,
    target: &Client,
    params: &LiveParams,
    pool: Arc<PayloadPool>,
    progress: Arc<Progress>,
    engine_alive: &(dyn Fn() -> bool + Sync),
) -> Result<LiveResult> {
    let n = params.partitions as usize;
    let clock = Clock(Instant::now());
    let sent = Arc::new(Table::new(n));
    let acked = Arc::new(Table::new(n));
    let tailing = Tailing {
        client: target.clone(),
        topic: params.target_topic.clone(),
        clock,
        seen: Arc::new(Table::new(n)),
        received: Arc::new(AtomicU64::new(0)),
        duplicates: Arc::new(AtomicU64::new(0)),
        stop: Arc::new(AtomicBool::new(false)),
    };

    wait_for_topic(target, &params.target_topic, params.partitions).await?;

    // Tailers on the target.
    let mut tailers = tokio::task::JoinSet::new();
    for p in 0..params.partitions {
        tailers.spawn(tailing.clone().tail(p));
    }

    let producing = Producing::start(source, params, pool, progress, clock, &sent, &acked).await?;
    let mut producers = tokio::task::JoinSet::new();
    for p in 0..params.partitions {
        producers.spawn(producing.clone().produce(p));
    }
    while let Some(j) = producers.join_next().await {
        j.context("producer task panicked")??;
        if !engine_alive() {
            bail!("the engine stopped during the run");
        }
    }
    let window = producing.start.elapsed();
    let total = producing.produced.load(Ordering::Relaxed);
    let end = catch_up(target, params, &tailing, tailers, total, engine_alive).await?;
    let latencies = Latencies::of(n, &sent, &acked, &tailing.seen);
    Ok(live_result(params, &tailing, window, total, end, latencies))
}

/// The bench's clock: µs since its start (monotonic).
#[derive(Debug, Clone, Copy)]
struct Clock(Instant);

impl Clock {
    /// µs since the bench's start.
    fn now_us(self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// How the run ended, measured from the last acknowledgement.
struct Ending {
    /// Records produced but not yet read on the target at the last acknowledgement.
    lag_at_end: u64,
    /// Records produced but not yet on the target (its high watermarks) at that moment.
    engine_lag_at_end: u64,
    /// How long the target took to catch up (or until the grace ran out).
    catch_up: Duration,
    /// Each tailer poll's wait, µs.
    tail_waits: Vec<u64>,
}

/// Once every acknowledgement is in: measures the lag, waits (up to GRACE) for the
/// tailers to read all `total` records, then stops them.
async fn catch_up(
    target: &Client,
    params: &LiveParams,
    tailing: &Tailing,
    mut tailers: tokio::task::JoinSet<Result<Vec<u64>>>,
    total: u64,
    engine_alive: &(dyn Fn() -> bool + Sync),
) -> Result<Ending> {
    let last_ack = Instant::now();
    let received = &tailing.received;
    let lag_at_end = total.saturating_sub(received.load(Ordering::Relaxed));
    let engine_lag_at_end =
        total.saturating_sub(target_end(target, &params.target_topic, params.partitions).await?);
    while received.load(Ordering::Relaxed) < total && last_ack.elapsed() < GRACE && engine_alive() {
        if let Some(Some(Err(e))) = tailers.try_join_next().map(|r| r.ok()) {
            return Err(e);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let catch_up = last_ack.elapsed();
    tailing.stop.store(true, Ordering::Relaxed);
    let mut tail_waits = Vec::new();
    while let Some(j) = tailers.join_next().await {
        tail_waits.extend(j.context("tailer panicked")??);
    }
    Ok(Ending {
        lag_at_end,
        engine_lag_at_end,
        catch_up,
        tail_waits,
    })
}

/// Per-record latencies (µs) of the acknowledged records, and how many never arrived.
struct Latencies {
    ack_to_read: Vec<u64>,
    send_to_read: Vec<u64>,
    send_to_ack: Vec<u64>,
    missing: u64,
}

impl Latencies {
    /// Pairs each acknowledged record's send, acknowledgement and read times.
    fn of(partitions: usize, sent: &Table, acked: &Table, seen: &Table) -> Latencies {
        let mut l = Latencies {
            ack_to_read: Vec::new(),
            send_to_read: Vec::new(),
            send_to_ack: Vec::new(),
            missing: 0,
        };
        for p in 0..partitions {
            let (s, a, r) = (sent.snapshot(p), acked.snapshot(p), seen.snapshot(p));
            for (i, &ack) in a.iter().enumerate() {
                if ack == u64::MAX {
                    continue;
                }
                let snd = s.get(i).copied().unwrap_or(u64::MAX);
                if snd != u64::MAX {
                    l.send_to_ack.push(ack.saturating_sub(snd));
                }
                match r.get(i).copied() {
                    Some(rd) if rd != u64::MAX => {
                        l.ack_to_read.push(rd.saturating_sub(ack));
                        if snd != u64::MAX {
                            l.send_to_read.push(rd.saturating_sub(snd));
                        }
                    }
                    _ => l.missing += 1,
                }
            }
        }
        l
    }
}

/// The run's result; the engine's own timings are left for the caller to fill in.
fn live_result(
    params: &LiveParams,
    tailing: &Tailing,
    window: Duration,
    total: u64,
    mut end: Ending,
    mut l: Latencies,
) -> LiveResult {
    let value_bytes = total as f64 * params.record_size as f64;
    let missing = l.missing;
    LiveResult {
        produced: total,
        received: tailing.received.load(Ordering::Relaxed),
        duplicates: tailing.duplicates.load(Ordering::Relaxed),
        missing,
        achieved_mib_per_sec: value_bytes / (1024.0 * 1024.0) / window.as_secs_f64().max(1e-9),
        lag_at_end_records: end.lag_at_end,
        engine_lag_at_end_records: end.engine_lag_at_end,
        catch_up_secs: end.catch_up.as_secs_f64(),
        kept_up: missing == 0 && end.catch_up <= KEPT_UP_WITHIN,
        ack_to_readable_ms: Percentiles::of_micros(&mut l.ack_to_read),
        send_to_readable_ms: Percentiles::of_micros(&mut l.send_to_read),
        send_to_ack_ms: Percentiles::of_micros(&mut l.send_to_ack),
        // The engine's: filled in by the caller from the engine's registry.
        engine_fetch_wait_ms: Percentiles::default(),
        engine_fetch_to_ack_ms: Percentiles::default(),
        engine_produce_to_ack_ms: Percentiles::default(),
        tail_wait_ms: Percentiles::of_micros(&mut end.tail_waits),
    }
}

/// Waits until the engine has created `topic` on the target with every partition led.
async fn wait_for_topic(client: &Client, topic: &str, partitions: i32) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for p in 0..partitions {
        loop {
            client.invalidate_metadata();
            match client.leader_for(topic, p).await {
                Ok(_) => break,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("the engine did not create {topic}-{p} on the target within 60 s")
                    });
                }
            }
        }
    }
    Ok(())
}

/// The end of the next send from sequence `seq` when `owed` records are due: at most
/// [`MAX_SEND_VALUE_BYTES`] of values, and at least one record.
fn send_end(seq: u64, owed: u64, record_size: u64) -> u64 {
    let per_send = (MAX_SEND_VALUE_BYTES / record_size.max(1)).max(1);
    owed.min(seq.saturating_add(per_send))
}

#[cfg(test)]
mod tests;
