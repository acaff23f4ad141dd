//! The metadata cache of [`Client`]: refreshing it (on demand, when stale, and in the
//! background) and routing by it (a partition's leader, the topics routed to).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use kafka_protocol::messages::{
    MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use super::{Client, Inner};
use crate::broker::Broker;
use crate::error::{Error, ErrorKind, Result};
use crate::metadata::ClusterMetadata;

impl Client {
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
}

/// Refreshes the metadata every `metadata_max_age` until the last [`Client`] clone is dropped.
pub(super) async fn refresh_loop(inner: Weak<Inner>) {
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
