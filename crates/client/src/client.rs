//! [`Client`]: bootstrap, broker registry, metadata cache and routing, retries.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kafka_protocol::messages::{
    FindCoordinatorRequest, MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::backoff::{Backoff, BackoffConfig};
use crate::broker::{Broker, ConnSettings, Purpose};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::{DEFAULT_MAX_FRAME, Request};
use crate::metadata::ClusterMetadata;
use crate::security::Prepared;
use crate::security::config::Security;

/// Whether a bootstrap should stop retrying: once every attempt for `limit` has been refused
/// (nothing listens at any address). Any other error (a timeout: a silent host; a broker
/// error) starts the streak over. Pure.
#[derive(Debug)]
pub(crate) struct RefusedStreak {
    limit: Duration,
    since: Option<Instant>,
    gave_up: bool,
}

impl RefusedStreak {
    pub(crate) fn new(limit: Duration) -> Self {
        RefusedStreak {
            limit,
            since: None,
            gave_up: false,
        }
    }

    /// Records `e` at `now`; true when the streak of refusals has lasted `limit`.
    pub(crate) fn gives_up(&mut self, e: &Error, now: Instant) -> bool {
        if !e.is_refused() {
            self.since = None;
            return false;
        }
        let since = *self.since.get_or_insert(now);
        self.gave_up = now.duration_since(since) >= self.limit;
        self.gave_up
    }

    /// Whether [`gives_up`](Self::gives_up) said so.
    #[cfg(test)]
    pub(crate) fn gave_up(&self) -> bool {
        self.gave_up
    }
}

/// Client settings. Build with [`ClientConfig::new`] and the `with_*` methods.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `host:port` addresses to bootstrap from.
    pub bootstrap: Vec<String>,
    /// Sent as `client_id` in every request header.
    pub client_id: String,
    /// TCP connect + ApiVersions handshake timeout.
    pub connect_timeout: Duration,
    /// How long one request may wait for its response (Fetch adds its `max_wait`).
    pub request_timeout: Duration,
    /// How long a call keeps retrying retriable errors before giving up.
    pub retry_timeout: Duration,
    /// How long [`Client::connect`] keeps trying while every bootstrap address refuses the
    /// connection (nothing listens there: a wrong port, a stopped cluster). A silent host
    /// (no answer at all) is still tried for the whole `retry_timeout`.
    pub refused_timeout: Duration,
    /// Retry backoff.
    pub backoff: BackoffConfig,
    /// Metadata is refreshed in the background this often (and on routing errors).
    pub metadata_max_age: Duration,
    /// Largest response frame accepted.
    pub max_frame: usize,
    /// TLS and SASL for every connection (default: plaintext).
    pub security: Security,
}

impl ClientConfig {
    /// Defaults plus a bootstrap list.
    pub fn new<I, S>(bootstrap: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientConfig {
            bootstrap: bootstrap.into_iter().map(Into::into).collect(),
            client_id: "strait".into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            retry_timeout: Duration::from_secs(60),
            refused_timeout: Duration::from_secs(5),
            backoff: BackoffConfig::default(),
            metadata_max_age: Duration::from_secs(60),
            max_frame: DEFAULT_MAX_FRAME,
            security: Security::default(),
        }
    }

    /// Sets TLS and SASL for every connection.
    pub fn with_security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// Sets the `client_id`.
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = id.into();
        self
    }

    /// Sets the per-request timeout.
    pub fn with_request_timeout(mut self, t: Duration) -> Self {
        self.request_timeout = t;
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }

    /// Sets how long retriable errors are retried.
    pub fn with_retry_timeout(mut self, t: Duration) -> Self {
        self.retry_timeout = t;
        self
    }

    /// Sets how long a bootstrap that is refused everywhere keeps trying.
    pub fn with_refused_timeout(mut self, t: Duration) -> Self {
        self.refused_timeout = t;
        self
    }

    /// Sets the retry backoff.
    pub fn with_backoff(mut self, b: BackoffConfig) -> Self {
        self.backoff = b;
        self
    }

    /// Sets the background metadata refresh interval.
    pub fn with_metadata_max_age(mut self, t: Duration) -> Self {
        self.metadata_max_age = t;
        self
    }

    /// Sets the largest accepted response frame.
    pub fn with_max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }
}

/// The coordinator kinds of FindCoordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoordinatorType {
    /// A consumer group coordinator.
    Group,
    /// A transaction coordinator.
    Transaction,
}

pub(crate) struct Inner {
    pub(crate) cfg: ClientConfig,
    settings: Arc<ConnSettings>,
    bootstrap: Vec<Arc<Broker>>,
    brokers: RwLock<HashMap<i32, Arc<Broker>>>,
    meta: RwLock<Arc<ClusterMetadata>>,
    /// Bumped by every successful refresh; lets concurrent refreshers skip redundant work.
    meta_gen: AtomicU64,
    meta_stale: AtomicBool,
    refresh_lock: tokio::sync::Mutex<()>,
    /// Topics we route to; a refresh asks for these.
    interest: Mutex<BTreeSet<String>>,
    coordinators: Mutex<HashMap<(CoordinatorType, String), i32>>,
}

/// An async Kafka client. Cheap to clone; all clones share connections and metadata.
///
/// Dropping the last clone closes every connection and stops the background refresh.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("bootstrap", &self.inner.cfg.bootstrap)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the cluster: fetches metadata from the first bootstrap broker that answers
    /// and starts the background metadata refresh.
    pub async fn connect(cfg: ClientConfig) -> Result<Client> {
        if cfg.bootstrap.is_empty() {
            return Err(Error::invalid("empty bootstrap list"));
        }
        let settings = Arc::new(ConnSettings {
            client_id: StrBytes::from_string(cfg.client_id.clone()),
            connect_timeout: cfg.connect_timeout,
            request_timeout: cfg.request_timeout,
            max_frame: cfg.max_frame,
            security: Prepared::new(&cfg.security)?,
        });
        let bootstrap = cfg
            .bootstrap
            .iter()
            .map(|a| Arc::new(Broker::new(-1, a.clone(), settings.clone())))
            .collect();
        let client = Client {
            inner: Arc::new(Inner {
                cfg,
                settings,
                bootstrap,
                brokers: RwLock::new(HashMap::new()),
                meta: RwLock::new(Arc::new(ClusterMetadata::default())),
                meta_gen: AtomicU64::new(0),
                meta_stale: AtomicBool::new(true),
                refresh_lock: tokio::sync::Mutex::new(()),
                interest: Mutex::new(BTreeSet::new()),
                coordinators: Mutex::new(HashMap::new()),
            }),
        };
        let mut refused = RefusedStreak::new(client.inner.cfg.refused_timeout);
        client
            .with_retries_or(
                "bootstrap",
                || client.refresh_metadata(),
                |e| refused.gives_up(e, Instant::now()),
            )
            .await
            .map_err(|e| {
                if e.is_refused() {
                    e.message(
                        "every bootstrap address refused the connection: nothing listens \
                         there (a wrong port, or the cluster is down)",
                    )
                } else {
                    e
                }
            })?;
        tokio::spawn(refresh_loop(Arc::downgrade(&client.inner)));
        Ok(client)
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.cfg
    }

    /// The current metadata snapshot (no network call).
    pub fn cached_metadata(&self) -> Arc<ClusterMetadata> {
        self.inner.meta.read().clone()
    }

    // ---- brokers -------------------------------------------------------------------------

    /// The broker with node id `id`, from the metadata cache.
    pub(crate) fn broker(&self, id: i32) -> Result<Arc<Broker>> {
        if let Some(b) = self.inner.brokers.read().get(&id) {
            return Ok(b.clone());
        }
        let meta = self.cached_metadata();
        let Some(bm) = meta.brokers.get(&id) else {
            self.invalidate_metadata();
            return Err(Error::new(ErrorKind::NoBrokerAvailable)
                .broker(id)
                .message("broker not in metadata"));
        };
        let mut brokers = self.inner.brokers.write();
        let b = brokers
            .entry(id)
            .or_insert_with(|| Arc::new(Broker::new(id, bm.addr(), self.inner.settings.clone())));
        Ok(b.clone())
    }

    /// Every broker to try for a call any broker can answer: known brokers first, then the
    /// bootstrap list.
    fn any_brokers(&self) -> Vec<Arc<Broker>> {
        let meta = self.cached_metadata();
        let mut v: Vec<Arc<Broker>> = meta
            .brokers
            .keys()
            .filter_map(|&id| self.broker(id).ok())
            .collect();
        // Spread load; do not always hammer the first broker.
        if !v.is_empty() {
            let k = rand::random_range(0..v.len());
            v.rotate_left(k);
        }
        v.extend(self.inner.bootstrap.iter().cloned());
        v
    }

    /// Sends `build(version)` to `broker` on the `purpose` connection at the negotiated
    /// version, honouring broker throttling. The builder sees the version so it can fill the
    /// fields that version has.
    pub(crate) async fn send_built<R, F>(
        &self,
        broker: &Broker,
        purpose: Purpose,
        timeout: Duration,
        build: F,
    ) -> Result<(i16, R::Response)>
    where
        R: Request,
        F: FnOnce(i16) -> Result<R>,
    {
        self.send_built_below(broker, purpose, timeout, i16::MAX, build)
            .await
    }

    /// [`Client::send_built`] at the negotiated version, but at most `max` (a request whose
    /// content a higher version cannot carry: a Fetch without topic ids stays below v13).
    pub(crate) async fn send_built_below<R, F>(
        &self,
        broker: &Broker,
        purpose: Purpose,
        timeout: Duration,
        max: i16,
        build: F,
    ) -> Result<(i16, R::Response)>
    where
        R: Request,
        F: FnOnce(i16) -> Result<R>,
    {
        broker.wait_throttle().await;
        let conn = broker.connection(purpose).await?;
        let versions = conn.versions();
        let mut version = versions.pick(R::KEY).map_err(|e| e.broker(broker.id))?;
        if version > max {
            match versions.broker_range(R::KEY) {
                Some((lo, _)) if lo <= max => version = max,
                range => {
                    return Err(Error::new(ErrorKind::UnsupportedVersion {
                        api: R::KEY,
                        broker: range,
                        ours: (
                            crate::versions::supported_range(R::KEY).map_or(0, |r| r.0),
                            max,
                        ),
                    })
                    .api(R::KEY)
                    .message(format!("this request cannot be sent above v{max}"))
                    .broker(broker.id));
                }
            }
        }
        let req = build(version)?;
        let resp = conn.call(&req, version, timeout).await?;
        broker.note_throttle(R::throttle_ms(&resp));
        Ok((version, resp))
    }

    /// Sends any request to broker `broker_id` at the negotiated version: the escape hatch for
    /// APIs this crate has no typed method for. `build` receives the version it must encode.
    pub async fn send_request<R, F>(&self, broker_id: i32, build: F) -> Result<(i16, R::Response)>
    where
        R: Request,
        F: FnOnce(i16) -> Result<R>,
    {
        let b = self.broker(broker_id)?;
        self.send_built(&b, Purpose::Control, b.request_timeout(), build)
            .await
    }

    /// The API version that would be used for `api` with broker `broker_id` (connects if
    /// needed).
    pub async fn api_version(
        &self,
        broker_id: i32,
        api: kafka_protocol::messages::ApiKey,
    ) -> Result<i16> {
        let b = self.broker(broker_id)?;
        let c = b.connection(Purpose::Control).await?;
        c.versions().pick(api).map_err(|e| e.broker(broker_id))
    }

    /// Whether broker `broker_id` advertises `api` at all (in its ApiVersions answer),
    /// whether or not this client implements it (connects if needed).
    pub async fn advertises(
        &self,
        broker_id: i32,
        api: kafka_protocol::messages::ApiKey,
    ) -> Result<bool> {
        let b = self.broker(broker_id)?;
        let c = b.connection(Purpose::Control).await?;
        Ok(c.versions().broker_range(api).is_some())
    }

    /// Sends to any reachable broker (control connection), trying each in turn on network
    /// errors.
    pub(crate) async fn send_any<R, F>(&self, build: F) -> Result<(i32, i16, R::Response)>
    where
        R: Request,
        F: Fn(i16) -> Result<R>,
    {
        let mut last = Error::new(ErrorKind::NoBrokerAvailable);
        for b in self.any_brokers() {
            match self
                .send_built(&b, Purpose::Control, b.request_timeout(), &build)
                .await
            {
                Ok((v, r)) => return Ok((b.id, v, r)),
                Err(e) if e.is_network() => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Runs `op` until it succeeds, fails with a non-retriable error, or the retry timeout
    /// passes. Stale-metadata errors mark the cache for refresh; coordinator errors drop the
    /// cached coordinators.
    pub(crate) async fn with_retries<T, F, Fut>(&self, what: &str, op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.with_retries_or(what, op, |_| false).await
    }

    /// [`with_retries`](Self::with_retries) that also gives up on a retriable error when
    /// `give_up` says so.
    pub(crate) async fn with_retries_or<T, F, Fut>(
        &self,
        what: &str,
        mut op: F,
        mut give_up: impl FnMut(&Error) -> bool,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let deadline = Instant::now() + self.inner.cfg.retry_timeout;
        let mut backoff = Backoff::new(self.inner.cfg.backoff);
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retriable() && !give_up(&e) => {
                    if e.is_stale_metadata() || e.is_network() {
                        self.invalidate_metadata();
                    }
                    if e.is_coordinator_error() {
                        self.inner.coordinators.lock().clear();
                    }
                    let delay = backoff.next_delay();
                    if Instant::now() + delay >= deadline {
                        return Err(e);
                    }
                    if what == "bootstrap" {
                        tracing::info!(what, error = %e, ?delay, "retrying");
                    } else {
                        tracing::debug!(what, error = %e, ?delay, "retrying");
                    }
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    // ---- metadata ------------------------------------------------------------------------

    /// Marks the metadata stale; the next routing decision refreshes it.
    pub fn invalidate_metadata(&self) {
        self.inner.meta_stale.store(true, Ordering::Release);
    }

    /// Refreshes the metadata for the topics this client routes to (and the broker list).
    pub async fn refresh_metadata(&self) -> Result<Arc<ClusterMetadata>> {
        let topics: Vec<String> = self.inner.interest.lock().iter().cloned().collect();
        self.fetch_metadata(Some(&topics), false).await
    }

    /// Fetches metadata for `topics` (`None` = every topic) and merges it into the cache.
    /// The returned snapshot includes the topics asked for; unknown ones are absent.
    pub async fn metadata(&self, topics: Option<&[&str]>) -> Result<Arc<ClusterMetadata>> {
        let owned: Option<Vec<String>> = topics.map(|t| t.iter().map(|s| s.to_string()).collect());
        if let Some(t) = &owned {
            self.inner.interest.lock().extend(t.iter().cloned());
        }
        let full = owned.is_none();
        self.with_retries("metadata", || self.fetch_metadata(owned.as_deref(), full))
            .await
    }

    async fn fetch_metadata(
        &self,
        topics: Option<&[String]>,
        full: bool,
    ) -> Result<Arc<ClusterMetadata>> {
        let build = |v: i16| {
            let topics = topics.map(|ts| {
                ts.iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                    })
                    .collect()
            });
            let mut r = MetadataRequest::default().with_topics(topics);
            if v >= 4 {
                r.allow_auto_topic_creation = false;
            }
            Ok(r)
        };
        let (_, _, resp) = self.send_any(build).await?;
        let (next, errors) = self.cached_metadata().merged(&resp, full);
        for (t, code) in errors {
            tracing::debug!(topic = %t, code, "metadata topic error");
        }
        // Close connections to brokers that left the cluster.
        {
            let mut brokers = self.inner.brokers.write();
            brokers.retain(|id, b| {
                let keep = next.brokers.get(id).is_some_and(|m| m.addr() == b.addr);
                if !keep {
                    b.close();
                }
                keep
            });
        }
        let next = Arc::new(next);
        *self.inner.meta.write() = next.clone();
        self.inner.meta_gen.fetch_add(1, Ordering::AcqRel);
        self.inner.meta_stale.store(false, Ordering::Release);
        Ok(next)
    }

    /// Refreshes if the cache is stale; concurrent callers share one refresh.
    pub(crate) async fn refresh_if_stale(&self) -> Result<()> {
        if !self.inner.meta_stale.load(Ordering::Acquire) {
            return Ok(());
        }
        let gen_before = self.inner.meta_gen.load(Ordering::Acquire);
        let _g = self.inner.refresh_lock.lock().await;
        if self.inner.meta_gen.load(Ordering::Acquire) != gen_before {
            return Ok(());
        }
        self.refresh_metadata().await.map(|_| ())
    }

    /// The leader of `topic`/`partition` and its leader epoch, refreshing metadata when the
    /// partition is unknown or the cache is stale.
    pub async fn leader_for(&self, topic: &str, partition: i32) -> Result<(i32, i32)> {
        self.note_interest(topic);
        self.refresh_if_stale().await?;
        self.leader_in_cache(topic, partition)
    }

    /// [`Client::leader_for`] without waiting: `Some` when the metadata cache is fresh and
    /// names the partition's leader; `None` when only `leader_for` can tell (the cache is
    /// stale, or knows no leader for it).
    pub fn fresh_leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        self.note_interest(topic);
        if self.metadata_is_stale() {
            return None;
        }
        match self.cached_metadata().partition(topic, partition) {
            Some(p) if p.leader >= 0 => Some((p.leader, p.leader_epoch)),
            _ => None,
        }
    }

    pub(crate) async fn leader_broker(&self, topic: &str, partition: i32) -> Result<Arc<Broker>> {
        let (id, _) = self.leader_for(topic, partition).await?;
        self.broker(id)
    }

    /// [`Client::leader_broker`] from the metadata cache, never waiting, also while the
    /// cache is stale (a leader that moved answers NOT_LEADER_OR_FOLLOWER, which makes the
    /// caller retry): `None` when the cache does not know the partition and is stale, so
    /// only a refresh ([`Client::refresh_if_stale`]) can tell.
    pub(crate) fn cached_leader_broker(
        &self,
        topic: &str,
        partition: i32,
    ) -> Option<Result<Arc<Broker>>> {
        self.note_interest(topic);
        let meta = self.cached_metadata();
        match meta.partition(topic, partition) {
            Some(p) if p.leader >= 0 => Some(self.broker(p.leader)),
            _ if self.metadata_is_stale() => None,
            _ => Some(
                self.leader_in_cache(topic, partition)
                    .and_then(|(id, _)| self.broker(id)),
            ),
        }
    }

    /// Whether the metadata cache is due for a refresh.
    pub(crate) fn metadata_is_stale(&self) -> bool {
        self.inner.meta_stale.load(Ordering::Acquire)
    }

    /// Routes to `topic` from now on (a topic not routed to yet makes the cache stale).
    fn note_interest(&self, topic: &str) {
        let known = self.inner.interest.lock().contains(topic);
        if !known {
            self.inner.interest.lock().insert(topic.to_string());
            self.invalidate_metadata();
        }
    }

    /// The leader and epoch the metadata cache holds; an error (and a stale cache) when it
    /// has none.
    fn leader_in_cache(&self, topic: &str, partition: i32) -> Result<(i32, i32)> {
        let meta = self.cached_metadata();
        let err = |code: i16| {
            Error::from_code(code)
                .unwrap_or_else(|| Error::new(ErrorKind::NoBrokerAvailable))
                .topic(topic)
                .partition(partition)
        };
        match meta.partition(topic, partition) {
            Some(p) if p.leader >= 0 => Ok((p.leader, p.leader_epoch)),
            Some(_) => {
                self.invalidate_metadata();
                Err(err(5)) // LEADER_NOT_AVAILABLE
            }
            None => {
                self.invalidate_metadata();
                Err(err(3)) // UNKNOWN_TOPIC_OR_PARTITION (retriable)
            }
        }
    }

    /// Replaces the metadata cache with `meta` and marks its topics as routed to (tests
    /// that need a cluster shape a single Tansu broker cannot have: several brokers).
    #[cfg(test)]
    pub(crate) fn set_metadata_for_test(&self, meta: ClusterMetadata) {
        self.inner
            .interest
            .lock()
            .extend(meta.topics.keys().cloned());
        self.inner.brokers.write().clear();
        *self.inner.meta.write() = Arc::new(meta);
        self.inner.meta_gen.fetch_add(1, Ordering::AcqRel);
        self.inner.meta_stale.store(false, Ordering::Release);
    }

    // ---- coordinators --------------------------------------------------------------------

    /// The coordinator for a group or transactional id (FindCoordinator, cached until a
    /// coordinator error).
    pub async fn find_coordinator(&self, kind: CoordinatorType, key: &str) -> Result<i32> {
        let ck = (kind, key.to_string());
        if let Some(&id) = self.inner.coordinators.lock().get(&ck) {
            return Ok(id);
        }
        let id = self
            .with_retries("find_coordinator", || async {
                let build = |v: i16| {
                    let mut r = FindCoordinatorRequest::default()
                        .with_key(StrBytes::from_string(key.to_string()));
                    if v >= 1 {
                        r.key_type = match kind {
                            CoordinatorType::Group => 0,
                            CoordinatorType::Transaction => 1,
                        };
                    } else if kind == CoordinatorType::Transaction {
                        return Err(Error::invalid("transactions need FindCoordinator v1+"));
                    }
                    Ok(r)
                };
                let (_, v, r) = self.send_any(build).await?;
                let _ = v;
                Error::check_code(r.error_code, r.error_message.as_deref())
                    .map_err(|e| e.api(kafka_protocol::messages::ApiKey::FindCoordinator))?;
                // The coordinator may not be in our broker list yet.
                if !self.cached_metadata().brokers.contains_key(&r.node_id.0) {
                    self.refresh_metadata().await?;
                }
                Ok(r.node_id.0)
            })
            .await?;
        self.inner.coordinators.lock().insert(ck, id);
        Ok(id)
    }

    /// Forgets a cached coordinator (after NOT_COORDINATOR and friends).
    pub(crate) fn forget_coordinator(&self, kind: CoordinatorType, key: &str) {
        self.inner
            .coordinators
            .lock()
            .remove(&(kind, key.to_string()));
    }

    /// Sends to the coordinator of `key`, retrying (and re-discovering the coordinator) on
    /// retriable errors. `check` turns an `Ok` response with an error code into an `Err`.
    pub(crate) async fn send_to_coordinator<R, F, C>(
        &self,
        kind: CoordinatorType,
        key: &str,
        extra_timeout: Duration,
        build: F,
        check: C,
    ) -> Result<R::Response>
    where
        R: Request,
        F: Fn(i16) -> Result<R>,
        C: Fn(&R::Response) -> Result<()>,
    {
        self.with_retries("coordinator call", || async {
            let id = self.find_coordinator(kind, key).await?;
            let b = self.broker(id)?;
            let res = self
                .send_built(
                    &b,
                    Purpose::Control,
                    b.request_timeout() + extra_timeout,
                    &build,
                )
                .await
                .and_then(|(_, r)| check(&r).map(|_| r));
            if let Err(e) = &res
                && (e.is_coordinator_error() || e.is_network())
            {
                self.forget_coordinator(kind, key);
            }
            res.map_err(|e| e.broker(id))
        })
        .await
    }

    /// Sends to the controller (admin calls such as CreateTopics).
    pub(crate) async fn send_to_controller<R, F>(&self, build: F) -> Result<R::Response>
    where
        R: Request,
        F: Fn(i16) -> Result<R>,
    {
        self.refresh_if_stale().await?;
        let meta = self.cached_metadata();
        let b = if meta.controller_id >= 0 {
            self.broker(meta.controller_id)?
        } else {
            self.any_brokers()
                .into_iter()
                .next()
                .ok_or_else(|| Error::new(ErrorKind::NoBrokerAvailable))?
        };
        let (_, r) = self
            .send_built(&b, Purpose::Control, b.request_timeout(), build)
            .await?;
        Ok(r)
    }
}

async fn refresh_loop(inner: Weak<Inner>) {
    loop {
        let Some(age) = inner.upgrade().map(|i| i.cfg.metadata_max_age) else {
            return;
        };
        tokio::time::sleep(age).await;
        let Some(inner) = inner.upgrade() else { return };
        let client = Client { inner };
        if let Err(e) = client.refresh_metadata().await {
            tracing::debug!(error = %e, "background metadata refresh failed");
        }
    }
}

#[cfg(test)]
mod tests;
