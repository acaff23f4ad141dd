//! The sink driver of an [`IdempotentProducer`](super::idempotent::IdempotentProducer): one task per
//! producer, one sink (request pipeline) per leader broker (see the `idempotent` module
//! doc). It never waits on one broker: leaders come from the metadata cache (a refresh
//! runs as a task of its own), each broker's produce connection is set up by a task of its
//! own while that broker's partitions wait, and a throttled broker is skipped until its
//! throttle ends, so a hung or slow broker delays only the partitions it leads.
//!
//! Its concerns beyond the main loop are child files: `connect` (the metadata refresh and
//! produce connection tasks), `send` (assembling and sending a sink's requests), `outcome`
//! (responses and outcomes fed back to the sequencer), `epoch` (a new producer epoch).

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

use kafka_protocol::messages::ProduceResponse;
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::state::{Inner, deliver};
use crate::backoff::Backoff;
use crate::broker::Broker;
use crate::connection::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::sequencer::{Ack, Token, TopicPartition, Transmit};

mod connect;
mod epoch;
mod outcome;
mod send;

type ResponseFut = Pin<Box<dyn Future<Output = Result<Option<ProduceResponse>>> + Send>>;

/// A Produce request awaiting its response.
struct InFlight {
    broker: i32,
    batches: Vec<(TopicPartition, Transmit)>,
    fut: ResponseFut,
}

/// Per-partition retry timing.
struct Retry {
    backoff: Backoff,
    at: Instant,
}

/// Clears [`State::driver`](super::state::State::driver) however the driver ends (also
/// when its runtime shuts down), so the next send starts a new one.
struct DriverGuard(Arc<Inner>);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        self.0.state.lock().driver = false;
    }
}

/// The sink driver: one task per producer, one sink (request pipeline) per leader broker.
pub(super) struct Driver {
    inner: Arc<Inner>,
    /// Outstanding requests, oldest first.
    in_flight: Vec<InFlight>,
    /// Outstanding requests per broker.
    per_broker: FxHashMap<i32, usize>,
    retries: FxHashMap<TopicPartition, Retry>,
    linger_until: Option<Instant>,
    /// When [`Driver::expire`] next has something to do: the earliest delivery deadline
    /// it saw (batches enqueued later have later deadlines).
    next_expiry: Option<Instant>,
    // Reused buffers.
    cands: VecDeque<TopicPartition>,
    routed: Vec<(Arc<Broker>, VecDeque<TopicPartition>)>,
    aside: Vec<TopicPartition>,
    again: Vec<TopicPartition>,
    results: Vec<(TopicPartition, Transmit, Result<Ack>)>,
    /// Produce connections being set up, by broker, by tasks of their own.
    links: Arc<Mutex<HashMap<i32, Link>>>,
    /// A metadata refresh task is running.
    refreshing: Arc<AtomicBool>,
    /// Spaces failed metadata refreshes.
    refresh_backoff: Arc<Mutex<Backoff>>,
    /// When a throttled broker may be sent to again.
    wake_at: Option<Instant>,
}

/// A broker's produce connection as the driver sees it.
enum Link {
    /// Open (until it closes: then a task connects again).
    Ready(Arc<Connection>),
    /// A task is connecting.
    Connecting,
    /// The last attempt failed (at this time): its partitions' next batches fail with this
    /// (and retry), unless it is older than a retry would be.
    Failed(Error, Instant),
}

/// What [`Driver::connection`] found.
enum Conn {
    Ready(Arc<Connection>),
    Pending,
    Failed(Error),
}

enum Event {
    Wake,
    Timer,
    Response(usize, Result<Option<ProduceResponse>>),
}

impl Driver {
    pub(super) fn new(inner: Arc<Inner>) -> Self {
        Driver {
            in_flight: Vec::new(),
            per_broker: FxHashMap::default(),
            retries: FxHashMap::default(),
            linger_until: None,
            next_expiry: None,
            cands: VecDeque::new(),
            routed: Vec::new(),
            aside: Vec::new(),
            again: Vec::new(),
            results: Vec::new(),
            links: Arc::default(),
            refreshing: Arc::default(),
            refresh_backoff: Arc::new(Mutex::new(Backoff::new(inner.client.config().backoff))),
            wake_at: None,
            inner,
        }
    }

    pub(super) async fn run(mut self) {
        let _guard = DriverGuard(self.inner.clone());
        loop {
            self.expire();
            // `Sequencer::in_flight` walks every partition: only asked for when it
            // decides something (a new epoch waits for 0), not on every turn.
            let (needs_identity, in_flight, aborted) = {
                let st = self.inner.state.lock();
                let needs = st.seq.needs_identity();
                let in_flight = if needs { st.seq.in_flight() } else { 0 };
                (needs, in_flight, st.aborted.is_some())
            };
            if aborted {
                // Only the answers to what is in flight are awaited.
            } else if needs_identity {
                // Sending stops; a new epoch goes in once every request is answered.
                if in_flight == 0 && self.in_flight.is_empty() {
                    if self.inner.transactional_id.is_none() {
                        epoch::reinit(&self.inner).await;
                        continue;
                    }
                    // Transactional: the caller aborts and bumps the epoch itself.
                    epoch::fail_unsent(&self.inner);
                }
            } else {
                self.dispatch().await;
            }
            {
                let mut st = self.inner.state.lock();
                if self.in_flight.is_empty()
                    && st.seq.unresolved() == 0
                    && self.inner.closed.load(Ordering::Acquire)
                {
                    st.driver = false;
                    return;
                }
            }
            let timer = self.next_timer();
            match next_event(&self.inner.wake, &mut self.in_flight, timer).await {
                Event::Wake | Event::Timer => {}
                Event::Response(i, r) => {
                    let req = self.in_flight.remove(i);
                    self.on_response(req, r);
                    // Handle every other response that is already in before sending more.
                    while let Some((i, r)) = ready_response(&mut self.in_flight).await {
                        let req = self.in_flight.remove(i);
                        self.on_response(req, r);
                    }
                }
            }
        }
    }

    /// When the loop looks again without an event: the earliest future retry, linger end,
    /// delivery deadline or throttle end. Retry entries stay (their backoff keeps growing)
    /// until the partition succeeds; only future retry times count.
    fn next_timer(&self) -> Option<Instant> {
        let now = Instant::now();
        self.retries
            .values()
            .map(|r| r.at)
            .filter(|&t| t > now)
            .chain(self.linger_until)
            .chain(self.next_expiry)
            .chain(self.wake_at.filter(|&t| t > now))
            .min()
    }

    /// Fails the batches whose delivery deadline passed while they were not in flight
    /// (waiting for a retry, a leader or a new epoch: no response would ever check their
    /// deadline), and notes when to look again. A batch in flight is left to its request,
    /// which ends within the request timeout and is checked then.
    fn expire(&mut self) {
        let now = Instant::now();
        let aborted = self.inner.state.lock().aborted.clone();
        if aborted.is_none() && self.next_expiry.is_some_and(|t| now < t) {
            return;
        }
        let in_flight: FxHashSet<Token> = self
            .in_flight
            .iter()
            .flat_map(|r| r.batches.iter().map(|(_, t)| t.token))
            .collect();
        let timeout = self.inner.cfg.delivery_timeout;
        let mut expired = Vec::new();
        let mut next = now + timeout;
        {
            let mut st = self.inner.state.lock();
            let st = &mut *st;
            for (token, slot) in &st.slots {
                if aborted.is_none() && slot.deadline > now {
                    next = next.min(slot.deadline);
                } else if !in_flight.contains(token) {
                    expired.push((slot.tp.clone(), *token));
                }
            }
            if expired.is_empty() {
                self.next_expiry = Some(next);
                return;
            }
            expired.sort_by_key(|(_, t)| *t);
            for (tp, token) in &expired {
                let e = aborted.clone().unwrap_or_else(|| {
                    Error::new(ErrorKind::Timeout).message(format!(
                        "delivery timeout: not acknowledged within {timeout:?}"
                    ))
                });
                st.seq.fail(tp, *token, e);
            }
            for (tp, _) in &expired {
                deliver(st, tp);
            }
        }
        // In flight or not, look again soon: the expired batches' partitions may have
        // more to fail once their requests are answered.
        self.next_expiry = Some(next.min(now + Duration::from_millis(100)));
        self.inner.changed.notify_waiters();
    }

    /// Routes the ready partitions to their leaders and sends what each sink has room for.
    async fn dispatch(&mut self) {
        let now = Instant::now();
        {
            let mut st = self.inner.state.lock();
            if !self.inner.cfg.linger.is_zero() {
                match self.linger_until {
                    _ if !st.seq.has_ready() => return,
                    None => {
                        self.linger_until = Some(now + self.inner.cfg.linger);
                        return;
                    }
                    Some(t) if now < t => return,
                    Some(_) => self.linger_until = None,
                }
            }
            st.seq.take_ready(&mut self.cands);
        }
        if self.cands.is_empty() {
            return;
        }
        self.wake_at = None;
        if self.inner.client.metadata_is_stale() {
            self.start_refresh();
        }
        while let Some(tp) = self.cands.pop_front() {
            if self.retries.get(&tp).is_some_and(|r| r.at > now) {
                self.aside.push(tp);
                continue;
            }
            match self.inner.client.cached_leader_broker(&tp.0, tp.1) {
                Some(Ok(b)) => match self.routed.iter_mut().find(|(x, _)| x.id == b.id) {
                    Some((_, q)) => q.push_back(tp),
                    None => self.routed.push((b, VecDeque::from([tp]))),
                },
                Some(Err(e)) => self.route_failed(tp, e),
                // Unknown until the refresh: it wakes the driver when done.
                None => {
                    self.start_refresh();
                    self.aside.push(tp);
                }
            }
        }
        let mut routed = std::mem::take(&mut self.routed);
        for (broker, q) in routed.iter_mut() {
            self.send_to(broker, q).await;
            self.aside.extend(q.drain(..));
        }
        routed.clear();
        self.routed = routed;
        let mut st = self.inner.state.lock();
        for tp in self.aside.drain(..) {
            st.seq.mark_ready(&tp);
        }
    }

    /// A partition's leader could not be found: its next batch fails this attempt.
    fn route_failed(&mut self, tp: TopicPartition, e: Error) {
        let t = self.inner.state.lock().seq.next_transmit(&tp);
        match t {
            Some(t) => {
                self.results.push((tp, t, Err(e)));
                self.apply_results();
            }
            None => self.aside.push(tp),
        }
    }
}

/// Waits for a new batch, a response, or `timer`.
async fn next_event(wake: &Notify, in_flight: &mut [InFlight], timer: Option<Instant>) -> Event {
    let response = poll_fn(|cx| {
        for (i, r) in in_flight.iter_mut().enumerate() {
            if let Poll::Ready(x) = r.fut.as_mut().poll(cx) {
                return Poll::Ready((i, x));
            }
        }
        Poll::Pending
    });
    let sleep = async {
        match timer {
            Some(t) => tokio::time::sleep_until(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        (i, r) = response => Event::Response(i, r),
        _ = wake.notified() => Event::Wake,
        _ = sleep => Event::Timer,
    }
}

/// The first response that is already in, if any (never waits).
async fn ready_response(
    in_flight: &mut [InFlight],
) -> Option<(usize, Result<Option<ProduceResponse>>)> {
    poll_fn(|cx| {
        for (i, r) in in_flight.iter_mut().enumerate() {
            if let Poll::Ready(x) = r.fut.as_mut().poll(cx) {
                return Poll::Ready(Some((i, x)));
            }
        }
        Poll::Ready(None)
    })
    .await
}
