//! The I/O around [`Sequencer`]: an idempotent producer for raw record batches.
//!
//! [`IdempotentProducer::send`] stamps a batch, hands it to the pure [`Sequencer`] and wakes
//! the producer's **sink driver**: one long-lived task per producer (started on the first
//! send, gone once every handle is dropped and nothing is left to deliver) that keeps one
//! sink per target broker. Each time it wakes it routes the partitions that have a batch
//! ready to their leaders and, per broker with room (at most
//! [`ProducerConfig::max_requests_in_flight`] Produce requests outstanding), builds requests
//! with [`Sequencer::assemble`]: at most one batch per partition per request, up to
//! [`ProducerConfig::max_request_bytes`]. Requests are queued on the broker's produce
//! connection in assembly order (so every partition's batches reach the wire in sequence
//! order) and their responses are awaited by the same task, without a task or a timer per
//! batch. While a broker has its maximum of requests outstanding, ready batches accumulate
//! and leave together in the next request: under load, requests carry many partitions.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use kafka_protocol::messages::ProduceResponse;
use parking_lot::Mutex;
use strait_records::{Batch, PatchedBatch, ProducerStamp};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::broker::Broker;
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::sequencer::{Ack, Sequencer, Token, TopicPartition, Transmit};
use crate::rpc::produce::{Acks, ProduceRequest, RawBatch};
use crate::rpc::txn::ProducerIdentity;

/// Idempotent producer settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Unresolved batches per partition (Kafka allows at most 5 with idempotence).
    pub max_in_flight: usize,
    /// How long one batch may keep being retried before it fails (which forces an epoch bump).
    pub delivery_timeout: Duration,
    /// The broker-side Produce timeout.
    pub request_timeout: Duration,
    /// Produce requests outstanding per broker (Kafka's
    /// `max.in.flight.requests.per.connection`). While a broker has this many, ready batches
    /// wait and leave together in the next request.
    pub max_requests_in_flight: usize,
    /// Cap on the batch bytes of one Produce request; a single larger batch goes alone.
    pub max_request_bytes: usize,
    /// How long the sink waits for more batches before sending what is ready (Kafka's
    /// `linger.ms`). Zero (the default): a request leaves as soon as a batch is ready.
    pub linger: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            max_in_flight: 5,
            delivery_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            max_requests_in_flight: 5,
            max_request_bytes: 4 * 1024 * 1024,
            linger: Duration::ZERO,
        }
    }
}

/// Counters of an [`IdempotentProducer`] since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Produce requests sent.
    pub requests: u64,
    /// Batch transmissions (a retried batch counts once per attempt).
    pub batches: u64,
    /// Batch bytes sent (retries included).
    pub bytes: u64,
}

struct Slot {
    /// Its partition (to fail the batches after one that failed for good).
    tp: TopicPartition,
    batch: Batch,
    /// The batch as last stamped (re-stamped only when the stamp changes).
    patched: Option<(ProducerStamp, PatchedBatch)>,
    tx: Option<oneshot::Sender<Result<Ack>>>,
    deadline: Instant,
}

struct State {
    seq: Sequencer,
    slots: HashMap<Token, Slot>,
    /// Interned topic names, so that a partition key never allocates.
    topics: HashSet<Arc<str>>,
    /// The sink driver task is running (or about to).
    driver: bool,
    /// Set by [`IdempotentProducer::abort`]: nothing is sent any more.
    aborted: Option<Error>,
    /// Transactional mode: told every batch outcome as it is delivered.
    observer: Option<Observer>,
}

/// Called (under the producer's lock) with each batch outcome, in delivery order.
pub(crate) type Observer = Arc<dyn Fn(&Result<Ack>) + Send + Sync>;

struct Inner {
    client: Client,
    cfg: ProducerConfig,
    /// Transactional mode: batches carry the transactional bit, Produce requests the id,
    /// and a broken sequence fails the batches instead of bumping the epoch here.
    transactional_id: Option<String>,
    state: Mutex<State>,
    /// Woken when batches are delivered: senders waiting for room re-check.
    changed: Notify,
    /// Wakes the sink driver (new batch, last handle dropped).
    wake: Notify,
    /// Every [`IdempotentProducer`] handle is gone.
    closed: AtomicBool,
    requests: AtomicU64,
    batches: AtomicU64,
    bytes: AtomicU64,
}

/// The user-facing handle; dropping the last one lets the driver stop once idle.
struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.wake.notify_one();
    }
}

/// An idempotent producer for raw v2 record batches (forwarded or built).
///
/// [`IdempotentProducer::send`] takes a batch, stamps producer id, epoch and base sequence
/// into its header (recomputing the CRC with strait-records; the payload is not copied),
/// and returns an [`AckFuture`] once the batch is queued. Per partition at most 5 batches
/// are unresolved, batches are sent in sequence order, retried with the same sequence (also
/// to a new leader) and their acks are delivered strictly in order. DUPLICATE_SEQUENCE_NUMBER
/// counts as success; OUT_OF_ORDER_SEQUENCE_NUMBER at the head, UNKNOWN_PRODUCER_ID or a
/// batch failing for good make the producer bump its epoch (KIP-360) and renumber every
/// unresolved batch from 0. The sequencing rules live in the pure
/// [`crate::producer::Sequencer`].
///
/// One sink per leader broker gathers the ready batches of all partitions it leads into
/// one Produce request (at most one batch per partition, up to
/// [`ProducerConfig::max_request_bytes`]) and pipelines up to
/// [`ProducerConfig::max_requests_in_flight`] requests on the broker's produce connection;
/// [`IdempotentProducer::stats`] counts requests and batches.
#[derive(Clone)]
pub struct IdempotentProducer {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for IdempotentProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotentProducer")
            .field("identity", &self.identity())
            .finish_non_exhaustive()
    }
}

/// Resolves to the batch's [`Ack`] (in order per partition).
#[derive(Debug)]
pub struct AckFuture {
    rx: oneshot::Receiver<Result<Ack>>,
}

impl AckFuture {
    /// Waits for the acknowledgement.
    pub async fn wait(self) -> Result<Ack> {
        self.rx.await.unwrap_or_else(|_| {
            Err(Error::new(ErrorKind::ConnectionClosed).message("producer dropped"))
        })
    }
}

impl IdempotentProducer {
    /// Gets a producer id (InitProducerId without a transactional id) and returns the
    /// producer.
    pub async fn new(client: Client, cfg: ProducerConfig) -> Result<Self> {
        let identity = client
            .init_producer_id(None, Duration::from_secs(60), None)
            .await?;
        Ok(Self::start(client, cfg, identity, None, None))
    }

    /// A producer with `identity` already obtained; with `transactional_id` it writes
    /// transactional batches and leaves epoch bumps to its caller (the transactional
    /// producer), and `observer` sees every batch outcome.
    pub(crate) fn start(
        client: Client,
        cfg: ProducerConfig,
        identity: ProducerIdentity,
        transactional_id: Option<String>,
        observer: Option<Observer>,
    ) -> Self {
        let mut seq = Sequencer::new(cfg.max_in_flight);
        seq.set_identity(identity);
        let inner = Arc::new(Inner {
            client,
            cfg,
            transactional_id,
            state: Mutex::new(State {
                seq,
                slots: HashMap::new(),
                topics: HashSet::new(),
                driver: false,
                aborted: None,
                observer,
            }),
            changed: Notify::new(),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        });
        IdempotentProducer {
            handle: Arc::new(Handle { inner }),
        }
    }

    /// True when the sequencer needs a new epoch (transactional mode: a batch broke the
    /// sequence; the caller bumps the epoch after its abort).
    pub(crate) fn needs_identity(&self) -> bool {
        self.inner().state.lock().seq.needs_identity()
    }

    /// Installs a new epoch from the caller's KIP-360 bump: sequences restart from 0 and
    /// every partition takes batches again.
    pub(crate) fn install_identity(&self, identity: ProducerIdentity) {
        let inner = self.inner();
        {
            let mut st = inner.state.lock();
            st.seq.set_identity(identity);
            st.seq.reset_all();
        }
        inner.wake.notify_one();
        inner.changed.notify_waiters();
    }

    /// Waits until every batch queued so far has its outcome.
    pub(crate) async fn flush(&self) {
        let inner = self.inner();
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if inner.state.lock().seq.unresolved() == 0 {
                return;
            }
            notified.await;
        }
    }

    fn inner(&self) -> &Arc<Inner> {
        &self.handle.inner
    }

    /// The current producer id and epoch.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.inner().state.lock().seq.identity()
    }

    /// Requests, batch transmissions and bytes sent so far.
    pub fn stats(&self) -> ProducerStats {
        let i = self.inner();
        ProducerStats {
            requests: i.requests.load(Ordering::Relaxed),
            batches: i.batches.load(Ordering::Relaxed),
            bytes: i.bytes.load(Ordering::Relaxed),
        }
    }

    /// Lets a partition take batches again after one of its batches failed for good (see
    /// the sequencer's rules: until then every send to it fails). Call once the caller has
    /// recovered the partition's position from what the target holds.
    pub fn reset_partition(&self, topic: &str, partition: i32) {
        let inner = self.inner();
        let mut st = inner.state.lock();
        let tp = (intern(&mut st.topics, topic), partition);
        st.seq.reset_partition(&tp);
    }

    /// Stops sending for good: every batch not in flight fails now with `reason`, a batch
    /// in flight gets the outcome of its request (and fails rather than being retried),
    /// and later sends fail. For a caller that gives up on the batches it queued (its
    /// process stops after an error): nothing is written after that, so no batch lands
    /// after one that failed, nor is re-sent under a new epoch (a possible duplicate of a
    /// request whose fate a timeout left unknown).
    pub fn abort(&self, reason: &str) {
        let inner = self.inner();
        {
            let mut st = inner.state.lock();
            if st.aborted.is_some() {
                return;
            }
            st.aborted = Some(
                Error::new(ErrorKind::ConnectionClosed)
                    .message(format!("the producer was aborted: {reason}")),
            );
        }
        inner.wake.notify_one();
        inner.changed.notify_waiters();
    }

    /// Queues `batch` for `topic`/`partition`. Waits while the partition has 5 unresolved
    /// batches. The batch's CRC is verified (`Err` if corrupt, nothing queued). Call `send`
    /// for one partition from one task at a time: the call order is the sequence order.
    /// After a batch of the partition failed for good, `Err` until
    /// [`IdempotentProducer::reset_partition`].
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let inner = self.inner();
        let count = batch.header().last_offset_delta.saturating_add(1);
        if count <= 0 || batch.header().records_count <= 0 {
            return Err(Error::invalid(
                "an idempotent batch needs at least one record",
            ));
        }
        let mut tp: Option<TopicPartition> = None;
        // Wait for room.
        let (tp, identity, seq) = loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = inner.state.lock();
                if let Some(e) = &st.aborted {
                    return Err(e.clone());
                }
                let tp = tp.get_or_insert_with(|| (intern(&mut st.topics, topic), partition));
                if let Some(e) = st.seq.partition_failure(tp) {
                    // An earlier batch failed for good: nothing is written past it until
                    // the caller resets the partition.
                    return Err(e.clone().topic(topic).partition(partition));
                }
                if st.seq.has_room(tp) {
                    let (id, seq) = (st.seq.identity(), st.seq.peek_sequence(tp));
                    drop(st);
                    break (tp.clone(), id, seq);
                }
            }
            notified.await;
        };
        // Verify and stamp with the sequence we expect to get, outside the lock (one pass
        // over the payload). If it changes before transmission it is stamped again.
        let patched = identity
            .map(|id| {
                let stamp = stamp(id, seq);
                batch
                    .verify_and_patch(stamp)
                    .map(|p| {
                        (
                            stamp,
                            p.with_transactional(inner.transactional_id.is_some()),
                        )
                    })
                    .map_err(|e| Error::invalid(format!("batch rejected: {e}")))
            })
            .transpose()?;
        let (tx, rx) = oneshot::channel();
        let bytes = batch.as_bytes().len();
        let start = {
            let mut st = inner.state.lock();
            let (token, _) = st.seq.enqueue(&tp, count, bytes);
            st.slots.insert(
                token,
                Slot {
                    tp: tp.clone(),
                    batch,
                    patched,
                    tx: Some(tx),
                    deadline: Instant::now() + inner.cfg.delivery_timeout,
                },
            );
            // A partition that failed meanwhile resolves the batch at once.
            deliver(&mut st, &tp);
            !std::mem::replace(&mut st.driver, true)
        };
        if start {
            tokio::spawn(Driver::new(inner.clone()).run());
        } else {
            inner.wake.notify_one();
        }
        Ok(AckFuture { rx })
    }
}

fn intern(topics: &mut HashSet<Arc<str>>, topic: &str) -> Arc<str> {
    if let Some(t) = topics.get(topic) {
        return t.clone();
    }
    let t: Arc<str> = Arc::from(topic);
    topics.insert(t.clone());
    t
}

fn stamp(id: ProducerIdentity, seq: i32) -> ProducerStamp {
    ProducerStamp {
        producer_id: id.id,
        producer_epoch: id.epoch,
        base_sequence: seq,
    }
}

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

/// Clears [`State::driver`] however the driver ends (also when its runtime shuts down), so
/// the next send starts a new one.
struct DriverGuard(Arc<Inner>);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        self.0.state.lock().driver = false;
    }
}

/// The sink driver: one task per producer, one sink (request pipeline) per leader broker.
struct Driver {
    inner: Arc<Inner>,
    /// Outstanding requests, oldest first.
    in_flight: Vec<InFlight>,
    /// Outstanding requests per broker.
    per_broker: HashMap<i32, usize>,
    retries: HashMap<TopicPartition, Retry>,
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
}

enum Event {
    Wake,
    Timer,
    Response(usize, Result<Option<ProduceResponse>>),
}

impl Driver {
    fn new(inner: Arc<Inner>) -> Self {
        Driver {
            inner,
            in_flight: Vec::new(),
            per_broker: HashMap::new(),
            retries: HashMap::new(),
            linger_until: None,
            next_expiry: None,
            cands: VecDeque::new(),
            routed: Vec::new(),
            aside: Vec::new(),
            again: Vec::new(),
            results: Vec::new(),
        }
    }

    async fn run(mut self) {
        let _guard = DriverGuard(self.inner.clone());
        loop {
            self.expire();
            let (needs_identity, in_flight, aborted) = {
                let st = self.inner.state.lock();
                (
                    st.seq.needs_identity(),
                    st.seq.in_flight(),
                    st.aborted.is_some(),
                )
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
        let in_flight: HashSet<Token> = self
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
        while let Some(tp) = self.cands.pop_front() {
            if self.retries.get(&tp).is_some_and(|r| r.at > now) {
                self.aside.push(tp);
                continue;
            }
            let lookup = self.inner.client.leader_broker(&tp.0, tp.1);
            match until_expiry(self.next_expiry, "leader lookup", lookup).await {
                Ok(b) => match self.routed.iter_mut().find(|(x, _)| x.id == b.id) {
                    Some((_, q)) => q.push_back(tp),
                    None => self.routed.push((b, VecDeque::from([tp]))),
                },
                Err(e) => self.route_failed(tp, e),
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

    /// Sends requests to `broker` from the partitions in `q` while its sink has room.
    async fn send_to(&mut self, broker: &Arc<Broker>, q: &mut VecDeque<TopicPartition>) {
        let cfg = self.inner.cfg;
        loop {
            let outstanding = self.per_broker.get(&broker.id).copied().unwrap_or(0);
            if q.is_empty() || outstanding >= cfg.max_requests_in_flight.max(1) {
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
            let submit = self.inner.client.submit_produce(broker, &req);
            match until_expiry(self.next_expiry, "connecting", submit).await {
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

/// Runs `fut` (a leader lookup, a connection to a broker: each may take a request timeout
/// on a stalled network) until the earliest delivery deadline at most: the driver waits in
/// it, and batches past their deadline must fail then, not a few request timeouts later.
/// A cut-short step is a retriable timeout (nothing was queued: a request is queued
/// without waiting, as the last step of a submit).
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

/// Hands the resolved batches at the front of `tp` to their senders. After a batch that
/// failed for good, every later batch of the partition fails too: written after it (under
/// the new epoch, renumbered) they would leave a gap in the partition that its writer
/// could not tell from a complete log.
fn deliver(st: &mut State, tp: &TopicPartition) {
    loop {
        let mut failed = None;
        for (token, r) in st.seq.take_delivered(tp) {
            if let Some(observe) = &st.observer {
                observe(&r);
            }
            if let Err(e) = &r {
                failed = Some(e.clone());
            }
            if let Some(mut slot) = st.slots.remove(&token)
                && let Some(tx) = slot.tx.take()
            {
                let _ = tx.send(r.map_err(|e| e.topic(tp.0.to_string()).partition(tp.1)));
            }
        }
        let Some(cause) = failed else { return };
        let mut later: Vec<Token> = st
            .slots
            .iter()
            .filter(|(_, s)| s.tp == *tp)
            .map(|(t, _)| *t)
            .collect();
        if later.is_empty() {
            return;
        }
        later.sort_unstable();
        for token in later {
            let e = cause
                .clone()
                .message("an earlier batch of the partition failed (not sent after it)");
            st.seq.fail(tp, token, e);
        }
    }
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
