//! [`Client`]: bootstrap, broker registry, sending at the negotiated version, retries.
//!
//! Its other concerns are child files: `config` ([`ClientConfig`]), `routing` (the metadata
//! cache: refresh and leader routing), `coordinators` (FindCoordinator, coordinator and
//! controller calls).

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::broker::{Broker, ConnSettings, Purpose};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::Request;
use crate::metadata::ClusterMetadata;
use crate::security::Prepared;

mod config;
mod coordinators;
mod routing;

pub use config::ClientConfig;

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
        tokio::spawn(routing::refresh_loop(Arc::downgrade(&client.inner)));
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
}

#[cfg(test)]
mod tests;
