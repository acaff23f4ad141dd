//! The sink driver of an [`IdempotentProducer`](super::idempotent::IdempotentProducer): one task per
//! producer, one sink (request pipeline) per leader broker (see the `idempotent` module
//! doc). It never waits on one broker: leaders come from the metadata cache (a refresh
//! runs as a task of its own), each broker's produce connection is set up by a task of its
//! own while that broker's partitions wait, and a throttled broker is skipped until its
//! throttle ends, so a hung or slow broker delays only the partitions it leads.

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

use super::merge;
use super::state::{Inner, deliver, stamp};
use crate::backoff::Backoff;
use crate::broker::{Broker, Purpose};
use crate::connection::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::sequencer::{Ack, Token, TopicPartition, Transmit};
use crate::rpc::produce::{Acks, ProduceRequest, RawBatch};

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
                        reinit(&self.inner).await;
                        continue;
                    }
                    // Transactional: the caller aborts and bumps the epoch itself.
                    fail_unsent(&self.inner);
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
            // Retry entries stay (their backoff keeps growing) until the partition succeeds;
            // only future retry times count.
            let now = Instant::now();
            let timer = self
                .retries
                .values()
                .map(|r| r.at)
                .filter(|&t| t > now)
                .chain(self.linger_until)
                .chain(self.next_expiry)
                .chain(self.wake_at.filter(|&t| t > now))
                .min();
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

    /// Refreshes the metadata in a task of its own (one at a time), which wakes the driver
    /// when done; failures are spaced by a backoff.
    fn start_refresh(&self) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = self.inner.clone();
        let (flag, backoff) = (self.refreshing.clone(), self.refresh_backoff.clone());
        tokio::spawn(async move {
            match inner.client.refresh_if_stale().await {
                Ok(()) => *backoff.lock() = Backoff::new(inner.client.config().backoff),
                Err(e) => {
                    tracing::debug!(error = %e, "producer metadata refresh failed; will retry");
                    let delay = backoff.lock().next_delay();
                    tokio::time::sleep(delay).await;
                }
            }
            flag.store(false, Ordering::Release);
            inner.wake.notify_one();
        });
    }

    /// `broker`'s open produce connection; otherwise starts setting one up in a task of its
    /// own (which wakes the driver when done) and reports it pending, or the error of the
    /// last attempt (once).
    fn connection(&self, broker: &Arc<Broker>) -> Conn {
        let mut links = self.links.lock();
        match links.remove(&broker.id) {
            Some(Link::Ready(c)) if !c.is_closed() => {
                links.insert(broker.id, Link::Ready(c.clone()));
                return Conn::Ready(c);
            }
            Some(Link::Connecting) => {
                links.insert(broker.id, Link::Connecting);
                return Conn::Pending;
            }
            Some(Link::Failed(e, at)) if at.elapsed() < self.inner.client.config().backoff.max => {
                return Conn::Failed(e);
            }
            Some(Link::Ready(_) | Link::Failed(..)) | None => {}
        }
        links.insert(broker.id, Link::Connecting);
        drop(links);
        let (inner, links, broker) = (self.inner.clone(), self.links.clone(), broker.clone());
        tokio::spawn(async move {
            let r = broker.connection(Purpose::Produce).await;
            {
                let mut links = links.lock();
                let link = match r {
                    Ok(c) => Link::Ready(c),
                    Err(e) => Link::Failed(e.broker(broker.id), Instant::now()),
                };
                links.insert(broker.id, link);
            }
            inner.wake.notify_one();
        });
        Conn::Pending
    }

    /// Sends requests to `broker` from the partitions in `q` while its sink has room; the
    /// partitions left in `q` wait (for room, a connection, the end of a throttle).
    async fn send_to(&mut self, broker: &Arc<Broker>, q: &mut VecDeque<TopicPartition>) {
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
            let bytes = {
                let mut st = self.inner.state.lock();
                let st = &mut *st;
                let bytes =
                    st.seq
                        .assemble(q, cfg.max_request_bytes, &mut batches, &mut self.again);
                for (tp, t) in &batches {
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
            };
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

    fn on_response(&mut self, req: InFlight, r: Result<Option<ProduceResponse>>) {
        if let Some(n) = self.per_broker.get_mut(&req.broker) {
            *n = n.saturating_sub(1);
        }
        let broker = req.broker;
        match r {
            Err(e) => {
                for (tp, t) in req.batches {
                    self.results.push((tp, t, Err(e.clone())));
                }
            }
            Ok(resp) => {
                let mut acks: Vec<Option<Result<Ack>>> = req.batches.iter().map(|_| None).collect();
                let mut cursor = 0;
                for topic in resp.iter().flat_map(|r| &r.responses) {
                    for p in &topic.partition_responses {
                        let n = req.batches.len();
                        let found = (0..n).map(|k| (cursor + k) % n).find(|&k| {
                            let (tp, _) = &req.batches[k];
                            tp.1 == p.index && *tp.0 == *topic.name.0.as_str()
                        });
                        let Some(k) = found else { continue };
                        cursor = k + 1;
                        acks[k] = Some(match Error::from_code(p.error_code) {
                            Some(e) => {
                                let e = match &p.error_message {
                                    Some(m) => e.message(m.to_string()),
                                    None => e,
                                };
                                Err(e.broker(broker))
                            }
                            None => Ok(Ack {
                                base_offset: p.base_offset,
                                log_append_time_ms: p.log_append_time_ms,
                                duplicate: false,
                            }),
                        });
                    }
                }
                for ((tp, t), a) in req.batches.into_iter().zip(acks) {
                    let a = a.unwrap_or_else(|| {
                        Err(Error::protocol("Produce response without the partition")
                            .broker(broker))
                    });
                    self.results.push((tp, t, a));
                }
            }
        }
        self.apply_results();
    }

    /// Feeds the collected outcomes to the sequencer, delivers acks, schedules retries.
    fn apply_results(&mut self) {
        if self.results.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut invalidate = false;
        {
            let mut st = self.inner.state.lock();
            let st = &mut *st;
            for (tp, t, result) in self.results.drain(..) {
                let retry = result.as_ref().err().filter(|e| e.is_retriable()).cloned();
                let failed = result.as_ref().err().cloned();
                st.seq.on_result(&tp, t.token, t.attempt, result);
                if let Some(e) = &failed
                    && self.inner.transactional_id.is_some()
                    && st.seq.needs_identity()
                {
                    // Transactional: no renumbering under a new epoch inside the
                    // transaction; the batch fails with its own error (the caller aborts).
                    st.seq.fail(&tp, t.token, e.clone());
                }
                let failed = failed.is_some();
                if failed && let Some(abort) = &st.aborted {
                    st.seq.fail(&tp, t.token, abort.clone());
                }
                match retry {
                    Some(e) => {
                        if st.slots.get(&t.token).is_some_and(|s| now >= s.deadline) {
                            let timeout = self.inner.cfg.delivery_timeout;
                            st.seq.fail(
                                &tp,
                                t.token,
                                e.clone().message(format!(
                                    "delivery timeout: not acknowledged within {timeout:?}"
                                )),
                            );
                        }
                        invalidate |= e.is_stale_metadata() || e.is_network();
                        let backoff = self.inner.client.config().backoff;
                        let r = self.retries.entry(tp.clone()).or_insert_with(|| Retry {
                            backoff: Backoff::new(backoff),
                            at: now,
                        });
                        r.at = now + r.backoff.next_delay();
                    }
                    None => {
                        self.retries.remove(&tp);
                    }
                }
                deliver(st, &tp);
            }
        }
        if invalidate {
            self.inner.client.invalidate_metadata();
        }
        self.inner.changed.notify_waiters();
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

/// Transactional mode, a new epoch needed and nothing in flight: every batch not yet
/// resolved fails (the transaction must be aborted; its caller bumps the epoch).
fn fail_unsent(inner: &Arc<Inner>) {
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
async fn reinit(inner: &Arc<Inner>) {
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
