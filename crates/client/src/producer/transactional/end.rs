//! Ending the open transaction: settling the sends under way, then EndTxn(commit) or
//! EndTxn(abort), and the epoch bump (KIP-360) an abort needs when a batch broke the
//! sequence.

use std::sync::atomic::Ordering;

use tokio::time::Instant;

use super::{TransactionalProducer, retrying};
use crate::error::Result;
use crate::producer::transaction::{End, TxnApi};

impl TransactionalProducer {
    /// Waits until no send is between admission and queueing, then until every queued
    /// batch has its outcome.
    async fn settle(&self) {
        let inner = &*self.inner;
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if inner.txn.lock().sending() == 0 {
                break;
            }
            notified.await;
        }
        inner.producer.flush().await;
    }

    /// Commits the open transaction: waits for every batch to be acknowledged, then sends
    /// EndTxn(commit). A failed batch makes it fail with an abortable error (call
    /// [`abort`](Self::abort)); a retriable EndTxn failure leaves the outcome unknown and
    /// `commit` must be called again.
    pub async fn commit(&self) -> Result<()> {
        let inner = &*self.inner;
        let started = Instant::now();
        inner.txn.lock().begin_commit()?;
        self.settle().await;
        let end = inner.txn.lock().end()?;
        if let End::Send { commit } = end {
            let id = self.current_identity()?;
            let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
            let r = retrying(client, TxnApi::EndTxn, || client.end_txn(tid, id, commit)).await;
            let mut t = inner.txn.lock();
            t.on_ended(r.clone(), false);
            if let Err(e) = r {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        inner.committed.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(elapsed = ?started.elapsed(), "transaction committed");
        Ok(())
    }

    /// Aborts the open transaction (or does nothing when none is open): waits until every
    /// queued batch has its outcome, sends EndTxn(abort), and bumps the epoch (KIP-360)
    /// when a batch broke the sequence. Call it again after a retriable failure.
    pub async fn abort(&self) -> Result<()> {
        let inner = &*self.inner;
        if !inner.txn.lock().begin_abort()? {
            return Ok(());
        }
        self.settle().await;
        let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
        let bump = inner.txn.lock().needs_epoch_bump();
        if !bump {
            let end = inner.txn.lock().end()?;
            let r = match end {
                End::Done => Ok(()),
                End::Send { commit } => {
                    let id = self.current_identity()?;
                    retrying(client, TxnApi::EndTxn, || client.end_txn(tid, id, commit)).await
                }
            };
            let needs_new_epoch = inner.producer.needs_identity();
            let mut t = inner.txn.lock();
            t.on_ended(r.clone(), needs_new_epoch);
            if let Err(e) = r
                && !t.needs_epoch_bump()
            {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        if inner.txn.lock().needs_epoch_bump() {
            let current = self.current_identity()?;
            let tmo = inner.cfg.transaction_timeout;
            let r = retrying(client, TxnApi::InitProducerId, || {
                client.init_producer_id(Some(tid), tmo, Some(current))
            })
            .await;
            match r {
                Ok(id) => {
                    tracing::info!(producer_id = id.id, epoch = id.epoch, "epoch bumped");
                    inner.producer.install_identity(id);
                    inner.txn.lock().on_bumped(Ok(()));
                }
                Err(e) => {
                    let mut t = inner.txn.lock();
                    t.on_bumped(Err(e.clone()));
                    return Err(t.cause().cloned().unwrap_or(e));
                }
            }
        }
        inner.aborted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
