//! The sending side of the driver: a sink's Produce requests assembled from its ready
//! partitions while it has room, and when one more request is worth sending.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustc_hash::FxHashMap;
use tokio::time::Instant;

use super::{Conn, Driver, InFlight};
use crate::broker::Broker;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::merge;
use crate::producer::sequencer::{TopicPartition, Transmit};
use crate::producer::state::stamp;
use crate::rpc::produce::{Acks, ProduceRequest, RawBatch};

impl Driver {
    /// Sends requests to `broker` from the partitions in `q` while its sink has room; the
    /// partitions left in `q` wait (for room, a connection, the end of a throttle).
    pub(super) async fn send_to(&mut self, broker: &Arc<Broker>, q: &mut VecDeque<TopicPartition>) {
        let cfg = self.inner.cfg;
        if let Some(t) = broker.throttled_until() {
            self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
            return;
        }
        let conn = match self.connection(broker) {
            Conn::Ready(c) => c,
            Conn::Pending => return,
            Conn::Failed(e) => {
                for tp in q.drain(..) {
                    self.route_failed(tp, e.clone());
                }
                return;
            }
        };
        loop {
            let outstanding = self.per_broker.get(&broker.id).copied().unwrap_or(0);
            if q.is_empty() || outstanding >= cfg.max_requests_in_flight.max(1) {
                return;
            }
            if !send_now(&self.in_flight, broker.id, q) {
                return;
            }
            let mut batches = Vec::new();
            let mut req = ProduceRequest::new(Acks::All);
            req.timeout = cfg.request_timeout;
            req.transactional_id = self.inner.transactional_id.clone();
            let bytes = self.assemble(q, &mut batches, &mut req);
            q.extend(self.again.drain(..));
            if batches.is_empty() {
                return;
            }
            let submit = self.inner.client.submit_produce_on(broker, &conn, &req);
            match until_expiry(self.next_expiry, "queueing", submit).await {
                Ok((pending, _)) => {
                    self.inner.requests.fetch_add(1, Ordering::Relaxed);
                    self.inner
                        .batches
                        .fetch_add(batches.len() as u64, Ordering::Relaxed);
                    self.inner.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
                    *self.per_broker.entry(broker.id).or_default() += 1;
                    self.in_flight.push(InFlight {
                        broker: broker.id,
                        batches,
                        fut: Box::pin(pending.wait_raw()),
                    });
                }
                Err(e) => {
                    let e = e.broker(broker.id);
                    for (tp, t) in batches {
                        self.results.push((tp, t, Err(e.clone())));
                    }
                    self.apply_results();
                    // The sink is broken; its partitions are routed again next time.
                    return;
                }
            }
        }
    }

    /// Takes one request's batches for the partitions in `q` off the sequencer (those to
    /// come back to go in `again`), each patched with its producer id, epoch and sequence
    /// (and the transactional bit), into `req`. Returns the request's bytes.
    fn assemble(
        &mut self,
        q: &mut VecDeque<TopicPartition>,
        batches: &mut Vec<(TopicPartition, Transmit)>,
        req: &mut ProduceRequest,
    ) -> usize {
        let cfg = self.inner.cfg;
        let mut st = self.inner.state.lock();
        let st = &mut *st;
        let bytes = st
            .seq
            .assemble(q, cfg.max_request_bytes, batches, &mut self.again);
        for (tp, t) in batches.iter() {
            let Some(slot) = st.slots.get_mut(&t.token) else {
                continue;
            };
            let want = stamp(t.identity, t.base_sequence);
            if slot.patched.as_ref().is_none_or(|(s, _)| *s != want) {
                let txn = self.inner.transactional_id.is_some();
                slot.patched = Some((want, slot.batch.patch(want).with_transactional(txn)));
            }
            let parts = slot.patched.as_ref().map(|(_, p)| p.parts().to_vec());
            req.push(&tp.0, tp.1, RawBatch::from_parts(parts.unwrap_or_default()));
        }
        bytes
    }
}

/// Whether a broker's sink sends a request for the `ready` partitions now: the facts
/// [`merge::send_now`] decides on, from every outstanding request (`in_flight`).
fn send_now(in_flight: &[InFlight], broker: i32, ready: &VecDeque<TopicPartition>) -> bool {
    let to_broker = || in_flight.iter().filter(|r| r.broker == broker);
    let largest = to_broker().map(|r| r.batches.len()).max().unwrap_or(0);
    // Counted once over the outstanding batches (linear in them, also with thousands of
    // partitions), and only when the other rules do not decide.
    let all_backlogged = || {
        let mut n: FxHashMap<&TopicPartition, usize> = FxHashMap::default();
        for (tp, _) in to_broker().flat_map(|r| &r.batches) {
            *n.entry(tp).or_default() += 1;
        }
        ready
            .iter()
            .all(|tp| n.get(tp).copied().unwrap_or(0) >= merge::BACKLOGGED)
    };
    merge::send_now(to_broker().count(), ready.len(), largest, all_backlogged)
}

/// Runs `fut` (queueing a request on an open connection: it waits only while the
/// connection re-authenticates) until the earliest delivery deadline at most: the driver
/// waits in it, and batches past their deadline must fail then. A cut-short step is a
/// retriable timeout (nothing was queued: a request is queued without waiting, as the last
/// step of a submit).
async fn until_expiry<T>(
    deadline: Option<Instant>,
    what: &str,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match deadline {
        Some(t) => tokio::time::timeout_at(t, fut).await.unwrap_or_else(|_| {
            Err(Error::new(ErrorKind::Timeout)
                .message(format!("{what}: cut short at a delivery deadline")))
        }),
        None => fut.await,
    }
}
