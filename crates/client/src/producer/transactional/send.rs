//! Sending in the open transaction: admitting a send (adding its partition to the
//! transaction first, or waiting for the add under way), queueing batches and records on
//! the idempotent producer, and committing a group's offsets inside the transaction.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use strait_records::Batch;

use super::{Inner, TransactionalProducer, retrying};
use crate::error::{ErrorKind, Result};
use crate::producer::idempotent::{AckFuture, TrySend};
use crate::producer::records::{ProducerRecord, build_batches};
use crate::producer::sequencer::TopicPartition;
use crate::producer::transaction::{Admission, TxnApi};
use crate::rpc::offsets::{CommitOffset, GroupMember};

/// Marks an admitted send as returned, however it ends.
struct Sending<'a>(&'a Inner);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.0.txn.lock().sent();
        self.0.changed.notify_waiters();
    }
}

/// Gives an AddPartitionsToTxn back to the state machine if its caller is cancelled.
struct Adding<'a> {
    inner: &'a Inner,
    done: bool,
}

impl Drop for Adding<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.inner.txn.lock().on_add_abandoned();
            self.inner.changed.notify_waiters();
        }
    }
}

impl TransactionalProducer {
    /// Queues a raw batch (forwarded or built) for `topic`/`partition` in the open
    /// transaction: stamped with our producer id, epoch and sequence and the transactional
    /// bit, the payload not copied. Adds the partition to the transaction first if needed.
    /// The [`AckFuture`] resolves when the batch is written (not yet committed).
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let tp: TopicPartition = (Arc::from(topic), partition);
        let _sending = self.admit(&tp).await?;
        self.queue(topic, partition, batch).await
    }

    /// [`send`](Self::send) without waiting: the batch back as [`TrySend::Later`] when the
    /// partition is not yet in the transaction (or is being added) or its window is full;
    /// `send` waits for those. Not a future (see
    /// [`IdempotentProducer::try_send`](crate::producer::IdempotentProducer::try_send)).
    pub fn try_send(&self, topic: &str, partition: i32, batch: Batch) -> Result<TrySend> {
        let inner = &*self.inner;
        let tp: TopicPartition = (Arc::from(topic), partition);
        if !inner.txn.lock().try_admit(&tp) {
            return Ok(TrySend::Later(batch));
        }
        let _sending = Sending(inner);
        let sent = inner.producer.try_send(topic, partition, batch);
        self.sent(sent)
    }

    /// Batches `records` (the configured codec and batch size) for `topic`/`partition` and
    /// queues them in the open transaction, through the same producer id as
    /// [`send`](Self::send): e.g. the state records describing the forwarded batches.
    pub async fn send_records(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProducerRecord],
    ) -> Result<Vec<AckFuture>> {
        let cfg = &self.inner.cfg;
        let batches = build_batches(records, cfg.compression, cfg.max_batch_bytes)?;
        let tp: TopicPartition = (Arc::from(topic), partition);
        let _sending = self.admit(&tp).await?;
        let mut acks = Vec::with_capacity(batches.len());
        for b in batches {
            acks.push(self.queue(topic, partition, b).await?);
        }
        Ok(acks)
    }

    async fn queue(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let sent = self.inner.producer.send(topic, partition, batch).await;
        self.sent(sent)
    }

    /// What a send's outcome does to the transaction: a batch not queued fails it, unless
    /// it was a refused input (a corrupt batch is never queued: the transaction is intact).
    fn sent<T>(&self, sent: Result<T>) -> Result<T> {
        match sent {
            Ok(t) => Ok(t),
            Err(e) if matches!(e.kind(), ErrorKind::InvalidInput(_)) => Err(e),
            Err(e) => {
                self.inner.txn.lock().on_batch(&Err(e.clone()));
                Err(e)
            }
        }
    }

    /// Waits until a batch for `tp` may be sent, adding the partition to the transaction
    /// (or waiting for the add under way).
    async fn admit(&self, tp: &TopicPartition) -> Result<Sending<'_>> {
        let inner = &*self.inner;
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let admission = inner.txn.lock().admit(tp)?;
            match admission {
                Admission::Go => return Ok(Sending(inner)),
                Admission::Wait => notified.await,
                Admission::Add(partitions) => {
                    let mut guard = Adding { inner, done: false };
                    // Boxed: the AddPartitionsToTxn round trip is a large future that is
                    // awaited once per partition per transaction; inline, every `send`
                    // future (one per partition in flight, in the caller's task) would
                    // carry its ~5.5 KiB.
                    let r = Box::pin(self.add_partitions(&partitions)).await;
                    guard.done = true;
                    if r.is_ok() {
                        inner.adds.fetch_add(1, Ordering::Relaxed);
                    }
                    inner.txn.lock().on_added(r);
                    inner.changed.notify_waiters();
                }
            }
        }
    }

    async fn add_partitions(&self, partitions: &[TopicPartition]) -> Result<()> {
        let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
        for (t, p) in partitions {
            match by_topic.iter_mut().find(|(x, _)| *x == &**t) {
                Some((_, ps)) => ps.push(*p),
                None => by_topic.push((t, vec![*p])),
            }
        }
        let list: Vec<(&str, &[i32])> = by_topic.iter().map(|(t, ps)| (*t, &ps[..])).collect();
        let id = self.current_identity()?;
        let (client, tid) = (&self.inner.client, &self.inner.cfg.transactional_id);
        retrying(client, TxnApi::AddPartitions, || {
            client.add_partitions_to_txn(tid, id, &list)
        })
        .await
    }

    /// Commits `offsets` of consumer group `group` inside the open transaction
    /// (AddOffsetsToTxn once per group per transaction, then TxnOffsetCommit to the group
    /// coordinator): they become the group's committed offsets only if the transaction
    /// commits. `member` is the group member committing ([`GroupMember::standalone`] for
    /// a group without members).
    pub async fn send_offsets(
        &self,
        group: &str,
        member: &GroupMember,
        offsets: &[CommitOffset],
    ) -> Result<()> {
        let inner = &*self.inner;
        let needs_add = inner.txn.lock().admit_offsets(group)?;
        let _sending = Sending(inner);
        let id = self.current_identity()?;
        let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
        if needs_add {
            let r = retrying(client, TxnApi::AddOffsets, || {
                client.add_offsets_to_txn(tid, id, group)
            })
            .await;
            let mut t = inner.txn.lock();
            t.on_offsets_added(group, r.clone());
            if let Err(e) = r {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        let r = retrying(client, TxnApi::TxnOffsetCommit, || {
            client.txn_offset_commit(tid, group, id, member, offsets)
        })
        .await;
        let mut t = inner.txn.lock();
        t.on_offsets_committed(r.clone());
        r.map_err(|e| t.cause().cloned().unwrap_or(e))
    }
}
