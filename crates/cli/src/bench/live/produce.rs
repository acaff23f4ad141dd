//! The source's producers: one per partition, sending what the rate owes each tick.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use strait_client::{Client, ProducerRecord, RecordProducer};

use super::slots::Table;
use super::{Clock, HEADER, LiveParams, PayloadPool, Progress, TICK, encode_header, send_end};

/// An acknowledgement to wait for: its future, the sequence range it covers, and the
/// bytes of record values it carries.
type PendingAck = (strait_client::AckFuture, u64, u64, u64);

/// What every partition's producer shares: the producer, the payloads, the rate owed
/// per partition, and the tables and counters it fills.
#[derive(Clone)]
pub(super) struct Producing {
    producer: RecordProducer,
    pool: Arc<PayloadPool>,
    topic: String,
    sent: Arc<Table>,
    acked: Arc<Table>,
    pub(super) produced: Arc<AtomicU64>,
    progress: Arc<Progress>,
    duration: Duration,
    record_size: u64,
    /// Records per second owed by each partition.
    per_partition: f64,
    pub(super) start: Instant,
    clock: Clock,
}

impl Producing {
    /// Starts the live producer; the rate is owed from now on, `rate / partitions` each.
    pub(super) async fn start(
        source: &Client,
        params: &LiveParams,
        pool: Arc<PayloadPool>,
        progress: Arc<Progress>,
        clock: Clock,
        sent: &Arc<Table>,
        acked: &Arc<Table>,
    ) -> Result<Producing> {
        let producer = RecordProducer::new(source.clone(), params.compression)
            .await
            .context("starting the live producer")?
            // One batch per send; MAX_SEND_VALUE_BYTES bounds what one send carries.
            .with_max_batch_bytes(usize::MAX / 2);
        let records_per_sec = params.rate_mib * 1024.0 * 1024.0 / params.record_size.max(1) as f64;
        Ok(Producing {
            producer,
            pool,
            topic: params.topic.clone(),
            sent: sent.clone(),
            acked: acked.clone(),
            produced: Arc::new(AtomicU64::new(0)),
            progress,
            duration: params.duration,
            record_size: params.record_size,
            per_partition: records_per_sec / params.partitions as f64,
            start: Instant::now(),
            clock,
        })
    }

    /// Produces what the rate owes partition `p`, tick by tick, for the duration; then
    /// waits for every acknowledgement.
    pub(super) async fn produce(self, p: i32) -> Result<()> {
        let (ack_tx, ack_rx) = tokio::sync::mpsc::unbounded_channel::<PendingAck>();
        let waiter = tokio::spawn(self.clone().note_acks(p, ack_rx));
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut seq = 0u64;
        loop {
            ticker.tick().await;
            let elapsed = self.start.elapsed().min(self.duration);
            let owed = (elapsed.as_secs_f64() * self.per_partition) as u64;
            seq = self.send_owed(p, seq, owed, &ack_tx).await?;
            if elapsed >= self.duration {
                break;
            }
        }
        drop(ack_tx);
        waiter.await.context("ack waiter panicked")??;
        anyhow::Ok(())
    }

    /// Waits for partition `p`'s acknowledgements in order, noting when each arrived.
    async fn note_acks(
        self,
        p: i32,
        mut ack_rx: tokio::sync::mpsc::UnboundedReceiver<PendingAck>,
    ) -> Result<()> {
        while let Some((ack, from, to, vbytes)) = ack_rx.recv().await {
            ack.wait()
                .await
                .with_context(|| format!("acknowledgement from partition {p}"))?;
            self.acked
                .set_range(p as usize, from, to, self.clock.now_us());
            self.produced.fetch_add(to - from, Ordering::Relaxed);
            self.progress
                .records
                .fetch_add(to - from, Ordering::Relaxed);
            self.progress.bytes.fetch_add(vbytes, Ordering::Relaxed);
        }
        anyhow::Ok(())
    }

    /// Sends partition `p`'s records `seq..owed`, in sends of at most MAX_SEND_VALUE_BYTES
    /// of values, each one batch with an acknowledgement of its own; returns the next
    /// sequence number.
    async fn send_owed(
        &self,
        p: i32,
        mut seq: u64,
        owed: u64,
        ack_tx: &tokio::sync::mpsc::UnboundedSender<PendingAck>,
    ) -> Result<u64> {
        while owed > seq {
            let to = send_end(seq, owed, self.record_size);
            let t = self.clock.now_us();
            let mut batch = Vec::with_capacity((to - seq) as usize);
            let mut vbytes = 0;
            for s in seq..to {
                let (k, v) = self.pool.get(s.wrapping_mul(7919).wrapping_add(p as u64));
                vbytes += v.len() as u64;
                batch.push(ProducerRecord::new(k, v).with_header(HEADER, encode_header(s, t)));
            }
            self.sent.set_range(p as usize, seq, to, t);
            for ack in self
                .producer
                .send(&self.topic, p, &batch)
                .await
                .with_context(|| format!("producing to {}-{p}", self.topic))?
            {
                ack_tx
                    .send((ack, seq, to, vbytes))
                    .map_err(|_| anyhow::anyhow!("ack waiter stopped"))?;
            }
            seq = to;
        }
        Ok(seq)
    }
}
