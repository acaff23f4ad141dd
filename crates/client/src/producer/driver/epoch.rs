//! The driver when the sequence needs a new producer epoch and nothing is in flight:
//! bumping the epoch (idempotent), or failing what is unsent (transactional).

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, ErrorKind};
use crate::producer::sequencer::{Token, TopicPartition};
use crate::producer::state::{Inner, deliver};

/// Transactional mode, a new epoch needed and nothing in flight: every batch not yet
/// resolved fails (the transaction must be aborted; its caller bumps the epoch).
pub(super) fn fail_unsent(inner: &Arc<Inner>) {
    {
        let mut st = inner.state.lock();
        let st = &mut *st;
        let mut unsent: Vec<(TopicPartition, Token)> =
            st.slots.iter().map(|(t, s)| (s.tp.clone(), *t)).collect();
        if unsent.is_empty() {
            return;
        }
        unsent.sort_by_key(|(_, t)| *t);
        let e = Error::new(ErrorKind::TransactionAbortable(
            "the sequence broke: the transaction must be aborted and the epoch bumped".into(),
        ));
        for (tp, token) in &unsent {
            st.seq.fail(tp, *token, e.clone());
        }
        for (tp, _) in &unsent {
            deliver(st, tp);
        }
    }
    inner.changed.notify_waiters();
}

/// Bumps the epoch (or gets a fresh id if the broker refuses the bump) and renumbers.
pub(super) async fn reinit(inner: &Arc<Inner>) {
    let current = {
        let st = inner.state.lock();
        if !st.seq.needs_identity() || st.seq.in_flight() != 0 {
            return;
        }
        st.seq.identity()
    };
    let client = &inner.client;
    let tmo = Duration::from_secs(60);
    let new = match client.init_producer_id(None, tmo, current).await {
        Ok(id) => Ok(id),
        Err(e) if current.is_some() => {
            tracing::debug!(error = %e, "epoch bump refused; getting a new producer id");
            client.init_producer_id(None, tmo, None).await
        }
        Err(e) => Err(e),
    };
    match new {
        Ok(id) => {
            tracing::info!(producer_id = id.id, epoch = id.epoch, "new producer epoch");
            inner.state.lock().seq.set_identity(id);
            inner.changed.notify_waiters();
        }
        Err(e) => {
            tracing::warn!(error = %e, "InitProducerId failed; will retry");
            tokio::time::sleep(client.config().backoff.max).await;
        }
    }
}
