//! One source broker's fetch loop ([`run_fetcher`]): each round takes the partitions
//! the router assigned to it, asks for those whose pipeline has room and whose account may
//! fetch, reserves the response's bytes from the budget first, and hands each partition
//! its record set ([`deliver::deliver`]), or routes it again after a leader change. A failed fetch
//! is retried with backoff; after three in a row (or stale metadata) every partition is
//! routed again.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::backoff::{Backoff, BackoffConfig};
use strait_client::{FetchOptions, FetchPosition, FetchResult, FetchSession};
use tokio::sync::{mpsc, watch};
use uuid::Uuid;

use super::{Cursor, Feed, PartitionFeed, RecordSet, Router};
use crate::datapath::budget::Reservation;
use crate::datapath::stability::Stability;

/// The fetch wait used while the last response left more data behind than it brought
/// (falling behind, or catching up): Kafka answers at once
/// when data is there, so it costs nothing; Tansu gathers data for about half the wait and
/// returns what it has, so a short `fetch_max_wait` (tuned for latency at the end of the
/// log) would starve a fetcher that is catching up (docs/compatibility.md).
const CATCH_UP_MAX_WAIT: Duration = Duration::from_millis(500);

/// Retry timing after a failed fetch (jittered, so the fetchers of a cluster that came back
/// do not all ask at once).
const FETCH_BACKOFF: BackoffConfig = BackoffConfig {
    initial: Duration::from_millis(100),
    max: Duration::from_secs(3),
};

/// Runs the fetch loop of `broker` for the partitions the router sends on `assigned`,
/// until the router stops or drops the sender.
pub(super) async fn run_fetcher(
    router: Arc<Router>,
    broker: i32,
    assigned: mpsc::UnboundedReceiver<Arc<PartitionFeed>>,
) {
    let stability = Stability::default();
    stability.check_advertised(&router.client, broker);
    let mut fetcher = BrokerFetcher {
        stop: router.stop.clone(),
        session: router.client.fetch_session(broker),
        fetch_max: usize::try_from(router.opts.max_bytes).unwrap_or(0),
        router,
        broker,
        assigned,
        parts: Vec::new(),
        failures: 0,
        backoff: Backoff::new(FETCH_BACKOFF),
        stability,
        behind: false,
    };
    fetcher.run().await;
}

/// A partition asked for in one fetch: its feed, the cursor it was asked at, and the
/// topic id it was asked by.
type Wanted = (Arc<PartitionFeed>, Cursor, Uuid);

/// The state of one broker's fetch loop.
struct BrokerFetcher {
    router: Arc<Router>,
    broker: i32,
    assigned: mpsc::UnboundedReceiver<Arc<PartitionFeed>>,
    stop: watch::Receiver<bool>,
    session: FetchSession,
    /// The partitions this broker leads, as far as this fetcher knows.
    parts: Vec<Arc<PartitionFeed>>,
    /// Failed fetches in a row.
    failures: u32,
    backoff: Backoff,
    stability: Stability,
    /// The most one response may bring (`fetch_max_bytes`).
    fetch_max: usize,
    /// Whether the last response stopped short of some partition's end.
    behind: bool,
}

impl BrokerFetcher {
    /// Fetches round after round until told to stop.
    async fn run(&mut self) {
        loop {
            if *self.stop.borrow() {
                return;
            }
            self.take_assigned();
            let min_room = self.router.min_fetch_room();
            let wanted = self.wanted(min_room);
            let round = if wanted.is_empty() {
                self.wait_for_work().await
            } else {
                self.fetch(wanted, min_room).await
            };
            if round.is_break() {
                return;
            }
        }
    }

    /// Takes the partitions newly assigned, forgets the stopped ones, and nudges those
    /// another partition's account asked to look at what they hold.
    fn take_assigned(&mut self) {
        while let Ok(p) = self.assigned.try_recv() {
            self.parts.push(p);
        }
        self.parts.retain(|p| !p.stopped());
        // Another partition found this one holding the most bytes over the held limit:
        // make its pipeline look (an empty record set), which spills or fails it.
        for p in &self.parts {
            if p.share(&self.router.budget, &self.router.flow).take_nudge() {
                nudge(&self.router, p);
            }
        }
    }

    /// The partitions to ask for now: not paused, with room in their pipeline's inbox,
    /// and allowed by their account to fetch at least `min_room`.
    fn wanted(&self, min_room: usize) -> Vec<Wanted> {
        let mut wanted = Vec::new();
        for p in &self.parts {
            // The id before the cursor: the flow sets a new id before it moves the cursor.
            let id = p.topic_id();
            let c = p.with_cursor(|c| *c);
            let share = p.share(&self.router.budget, &self.router.flow);
            if !c.paused && p.inbox.has_room() && self.router.budget.may_fetch(share, min_room) {
                wanted.push((Arc::clone(p), c, id));
            }
        }
        wanted
    }

    /// Nothing to ask for: waits for a new partition, a stop, or 10 ms.
    async fn wait_for_work(&mut self) -> ControlFlow<()> {
        tokio::select! {
            p = self.assigned.recv() => match p {
                Some(p) => self.parts.push(p),
                None => return ControlFlow::Break(()),
            },
            _ = self.stop.changed() => return ControlFlow::Break(()),
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        ControlFlow::Continue(())
    }

    /// One fetch for `wanted`: reserves the response's bytes, asks, and hands the answer
    /// on (or counts the failure).
    async fn fetch(&mut self, wanted: Vec<Wanted>, min_room: usize) -> ControlFlow<()> {
        // Reserve before asking: the response is read into memory the budget has.
        let asked_at = Instant::now();
        let upfront = tokio::select! {
            r = self.router.budget.reserve_response(min_room, self.fetch_max) => r,
            _ = self.stop.changed() => return ControlFlow::Break(()),
        };
        let room = i32::try_from(upfront.bytes()).unwrap_or(i32::MAX).max(1);
        let opts = self.options(room);
        let positions = self.positions(&wanted, room);
        let sent_at = Instant::now();
        let result = tokio::select! {
            r = self.session.fetch(&positions, &opts) => r,
            _ = self.stop.changed() => return ControlFlow::Break(()),
        };
        let received = Instant::now();
        tracing::trace!(flow = %self.router.flow, broker = self.broker,
            partitions = positions.len(), room,
            waited_for_budget = ?(sent_at - asked_at), took = ?(received - sent_at),
            bytes = result.as_ref().map_or(0, |r| {
                r.partitions.iter().map(|p| p.records.len()).sum::<usize>()
            }),
            "fetch");
        match result {
            Err(e) => {
                self.failed(&wanted, &e).await;
                ControlFlow::Continue(())
            }
            Ok(result) => {
                self.router
                    .fetch_wait
                    .observe((received - sent_at).as_secs_f64());
                self.failures = 0;
                self.backoff = Backoff::new(FETCH_BACKOFF);
                self.behind = false;
                self.stability.observe(&result.partitions);
                self.hand_on(&wanted, result, upfront, received).await
            }
        }
    }

    /// The fetch's options for a response of at most `room` bytes: a longer wait while
    /// catching up.
    fn options(&self, room: i32) -> FetchOptions {
        let opts = &self.router.opts;
        FetchOptions {
            max_bytes: room,
            max_wait: if self.behind {
                opts.max_wait.max(CATCH_UP_MAX_WAIT)
            } else {
                opts.max_wait
            },
            ..*opts
        }
    }

    /// Where each wanted partition is read from, and how much it may bring.
    fn positions(&self, wanted: &[Wanted], room: i32) -> Vec<FetchPosition> {
        wanted
            .iter()
            .map(|(p, c, id)| {
                let mut pos =
                    FetchPosition::new(&*p.topic, p.partition, c.position).with_topic_id(*id);
                let partial = p.partial.load(std::sync::atomic::Ordering::Relaxed);
                pos.max_bytes = partition_limit(self.router.partition_max_bytes, partial, room);
                pos
            })
            .collect()
    }

    /// A failed fetch: counted, logged now and then, every partition routed again after
    /// three in a row or on stale metadata, then the backoff waited out.
    async fn failed(&mut self, wanted: &[Wanted], e: &strait_client::Error) {
        self.failures += 1;
        for (p, _, _) in wanted {
            p.metrics.fetch_error();
        }
        if self.failures == 1 || self.failures.is_multiple_of(20) {
            tracing::warn!(flow = %self.router.flow, cluster = %self.router.cluster,
                broker = self.broker, error = %e, failures = self.failures,
                "fetch failed; retrying");
        }
        if self.failures >= 3 || e.is_stale_metadata() {
            // The broker may be gone: let the router find the leaders again.
            self.router.client.invalidate_metadata();
            for p in self.parts.drain(..) {
                self.router.assign(p);
            }
        }
        tokio::time::sleep(self.backoff.next_delay()).await;
    }

    /// Hands each partition of the response its record set, forgetting those that must
    /// be routed again or failed.
    async fn hand_on(
        &mut self,
        wanted: &[Wanted],
        result: FetchResult,
        mut upfront: Reservation,
        received: Instant,
    ) -> ControlFlow<()> {
        // A response may name 10,000 partitions: look each up, not scan for it.
        let index: HashMap<(&str, i32), usize> = wanted
            .iter()
            .enumerate()
            .map(|(i, (p, _, _))| ((&*p.topic, p.partition), i))
            .collect();
        for fp in result.partitions {
            // Answered by id: only for the id asked for.
            let Some((p, c, _)) = index
                .get(&(fp.topic.as_str(), fp.partition))
                .map(|&i| &wanted[i])
                .filter(|(_, _, id)| fp.topic_id.is_none_or(|got| got == *id))
            else {
                continue;
            };
            let delivered = tokio::select! {
                d = deliver::deliver(&self.router, p, *c, fp, &mut upfront, &mut self.behind, &self.stability, received) => d,
                // Waiting for budget that pipelines blocked on the target hold: a stop
                // must not wait for it.
                _ = self.stop.changed() => return ControlFlow::Break(()),
            };
            if let Some(drop) = delivered {
                if drop {
                    self.parts.retain(|x| !Arc::ptr_eq(x, p));
                }
                if *self.stop.borrow() {
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Hands the pipeline an empty record set at its cursor, so that it plans (and checks what
/// it holds) without new data.
fn nudge(router: &Router, p: &PartitionFeed) {
    let end = *p.last_end.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(zero) = router.budget.try_reserve(0) else {
        return;
    };
    p.with_cursor(|c| {
        let feed = Feed::Data(Box::new(RecordSet {
            generation: c.generation,
            position: c.position,
            records: Bytes::new(),
            aborted: Vec::new(),
            end: end.max(c.position),
            stable: None,
            reservation: Arc::new(zero),
            received: Instant::now(),
        }));
        // A full inbox: the pipeline has data to plan anyway, and sees the eviction then.
        let _ = p.inbox.offer(feed);
    });
}

/// The most a partition may bring in one fetch: the configured limit, doubled for each
/// consecutive response that held only part of its next batch, within the fetch's room.
pub(super) fn partition_limit(configured: i32, partial_streak: u32, room: i32) -> i32 {
    configured
        .saturating_mul(1i32 << partial_streak.min(16))
        .min(room.max(configured))
        .max(1)
}

/// What to do about a response that held only the start of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Partial {
    /// Ask for more next time.
    Grow,
    /// The batch (this many bytes, from its header) can never fit in the budget.
    TooLarge(u64),
}

/// Decides on a record set that holds no whole batch: the batch's length is in its first
/// 12 bytes (offset, length), when they came.
pub(super) fn partial(records: &[u8], budget: u64) -> Partial {
    let size = records
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes)
        .and_then(|len| u64::try_from(len).ok())
        .map(|len| len + 12);
    match size {
        Some(n) if n > budget => Partial::TooLarge(n),
        _ => Partial::Grow,
    }
}

/// A first batch the budget can never hold, though Kafka returned it whole (it does past
/// the fetch's limits, KIP-74): its size from its header, or `None` when it fits.
pub(super) fn beyond_budget(records: &[u8], budget: u64) -> Option<u64> {
    match partial(records, budget) {
        Partial::TooLarge(first) => Some(first),
        Partial::Grow => None,
    }
}

mod deliver;
