//! Fetch, with records as zero-copy slices of the response frame, and fetch sessions
//! (KIP-227) with fallback to full fetches.
//!
//! The response frame is read into one buffer, frozen, and decoded from `Bytes`, so each
//! partition's `records` points into that buffer. A slice pins the whole response buffer until
//! dropped: copy it (`Bytes::copy_from_slice`) if you keep one partition's data for long.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Purpose;
use crate::client::Client;
use crate::error::{Error, Result};

/// Which records a fetch may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Everything up to the high watermark.
    #[default]
    ReadUncommitted,
    /// Only up to the last stable offset; aborted transactions are listed.
    ReadCommitted,
}

impl IsolationLevel {
    pub(crate) fn code(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

/// Fetch limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// How long the broker may wait for `min_bytes` (Tansu returns nothing for 0: use ≥ 5 ms).
    pub max_wait: Duration,
    /// Bytes the broker waits for before answering.
    pub min_bytes: i32,
    /// Soft cap on the response size (at least one batch is always returned).
    pub max_bytes: i32,
    /// Isolation level.
    pub isolation: IsolationLevel,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            max_wait: Duration::from_millis(500),
            min_bytes: 1,
            max_bytes: 50 * 1024 * 1024,
            isolation: IsolationLevel::ReadUncommitted,
        }
    }
}

/// One partition to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPosition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Offset to read from.
    pub offset: i64,
    /// Soft cap on this partition's bytes.
    pub max_bytes: i32,
    /// Our view of the leader epoch (-1 = don't check); lets the broker fence stale leaders.
    pub current_leader_epoch: i32,
}

impl FetchPosition {
    /// Fetch `topic`/`partition` from `offset`, 1 MiB per partition, no epoch check.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> Self {
        FetchPosition {
            topic: topic.into(),
            partition,
            offset,
            max_bytes: 1024 * 1024,
            current_leader_epoch: -1,
        }
    }
}

/// An aborted transaction in a read-committed fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer id whose transaction aborted.
    pub producer_id: i64,
    /// The first offset of the aborted transaction.
    pub first_offset: i64,
}

/// One partition of a fetch response.
#[derive(Debug, Clone)]
pub struct FetchedPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Kafka error code (0 = none).
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset (-1 if unknown).
    pub last_stable_offset: i64,
    /// Log start offset (-1 if unknown).
    pub log_start_offset: i64,
    /// Aborted transactions overlapping the returned data (read-committed only).
    pub aborted_transactions: Vec<AbortedTxn>,
    /// Preferred read replica (-1 = the leader).
    pub preferred_read_replica: i32,
    /// The leader hint the broker sent with a leadership error (KIP-951): `(id, epoch)`.
    pub current_leader: Option<(i32, i32)>,
    /// The raw record batches, a zero-copy slice of the response. May end with a partial
    /// batch (trim it, and re-fetch from the last complete batch's next offset).
    pub records: Bytes,
}

impl FetchedPartition {
    /// The partition's error, with context.
    pub fn error(&self) -> Option<Error> {
        Error::from_code(self.error_code)
            .map(|e| e.topic(self.topic.clone()).partition(self.partition))
    }
}

/// A whole fetch response.
#[derive(Debug, Clone)]
pub struct FetchResult {
    /// The partitions the broker answered for (with a session: only changed ones).
    pub partitions: Vec<FetchedPartition>,
    /// The session id the broker assigned (0 = no session).
    pub session_id: i32,
    /// Broker throttle time (already honoured by the client).
    pub throttle_time_ms: i32,
}

fn group_by_topic<'a>(
    positions: impl Iterator<Item = &'a FetchPosition>,
    version: i16,
) -> Vec<FetchTopic> {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for p in positions {
        let part = FetchPartition::default()
            .with_partition(p.partition)
            .with_current_leader_epoch(if version >= 9 {
                p.current_leader_epoch
            } else {
                -1
            })
            .with_fetch_offset(p.offset)
            .with_last_fetched_epoch(-1)
            .with_log_start_offset(-1)
            .with_partition_max_bytes(p.max_bytes);
        match topics.iter_mut().find(|t| *t.topic.0 == *p.topic) {
            Some(t) => t.partitions.push(part),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(p.topic.clone())))
                    .with_partitions(vec![part]),
            ),
        }
    }
    topics
}

fn build_request(
    version: i16,
    opts: &FetchOptions,
    session: (i32, i32),
    topics: Vec<FetchTopic>,
    forgotten: Vec<ForgottenTopic>,
) -> FetchRequest {
    let mut r = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(i32::try_from(opts.max_wait.as_millis()).unwrap_or(i32::MAX))
        .with_min_bytes(opts.min_bytes)
        .with_max_bytes(opts.max_bytes)
        .with_isolation_level(opts.isolation.code())
        .with_topics(topics);
    if version >= 7 {
        r.session_id = session.0;
        r.session_epoch = session.1;
        r.forgotten_topics_data = forgotten;
    }
    r
}

fn convert(resp: FetchResponse) -> FetchResult {
    let mut partitions = Vec::new();
    for t in resp.responses {
        let topic = t.topic.0.to_string();
        for p in t.partitions {
            let leader = p.current_leader;
            partitions.push(FetchedPartition {
                topic: topic.clone(),
                partition: p.partition_index,
                error_code: p.error_code,
                high_watermark: p.high_watermark,
                last_stable_offset: p.last_stable_offset,
                log_start_offset: p.log_start_offset,
                aborted_transactions: p
                    .aborted_transactions
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| AbortedTxn {
                        producer_id: a.producer_id.0,
                        first_offset: a.first_offset,
                    })
                    .collect(),
                preferred_read_replica: p.preferred_read_replica.0,
                current_leader: (leader.leader_id.0 >= 0)
                    .then_some((leader.leader_id.0, leader.leader_epoch)),
                records: p.records.unwrap_or_default(),
            });
        }
    }
    FetchResult {
        partitions,
        session_id: resp.session_id,
        throttle_time_ms: resp.throttle_time_ms,
    }
}

impl Client {
    async fn fetch_once(
        &self,
        broker_id: i32,
        opts: &FetchOptions,
        session: (i32, i32),
        positions: &[&FetchPosition],
        forgotten: &[(String, i32)],
    ) -> Result<FetchResponse> {
        let b = self.broker(broker_id)?;
        let timeout = b.request_timeout() + opts.max_wait;
        let (_, resp) = self
            .send_built(&b, Purpose::Fetch, timeout, |v| {
                let mut ft: Vec<ForgottenTopic> = Vec::new();
                for (t, p) in forgotten {
                    match ft.iter_mut().find(|f| *f.topic.0 == **t) {
                        Some(f) => f.partitions.push(*p),
                        None => ft.push(
                            ForgottenTopic::default()
                                .with_topic(TopicName(StrBytes::from_string(t.clone())))
                                .with_partitions(vec![*p]),
                        ),
                    }
                }
                Ok(build_request(
                    v,
                    opts,
                    session,
                    group_by_topic(positions.iter().copied(), v),
                    ft,
                ))
            })
            .await?;
        Ok(resp)
    }

    /// One sessionless Fetch from broker `broker_id` (which should lead every partition
    /// asked for). Per-partition errors are in the result; the `Err` is for the request.
    pub async fn fetch(
        &self,
        broker_id: i32,
        positions: &[FetchPosition],
        opts: &FetchOptions,
    ) -> Result<FetchResult> {
        let refs: Vec<&FetchPosition> = positions.iter().collect();
        // Session id 0 with epoch -1 (FINAL_EPOCH): a full fetch that creates no session.
        let resp = self
            .fetch_once(broker_id, opts, (0, -1), &refs, &[])
            .await?;
        Error::check_code(resp.error_code, None).map_err(|e| e.broker(broker_id))?;
        Ok(convert(resp))
    }

    /// A fetch session with broker `broker_id` (KIP-227).
    pub fn fetch_session(&self, broker_id: i32) -> FetchSession {
        FetchSession {
            client: self.clone(),
            broker_id,
            id: 0,
            epoch: 0,
            sent: HashMap::new(),
        }
    }
}

/// An incremental fetch session with one broker (KIP-227).
///
/// Give [`FetchSession::fetch`] the full set of positions you want each time; the session
/// sends only what changed since the last request and tells the broker which partitions to
/// forget. In incremental mode the broker answers only for partitions with news, so the
/// result may omit partitions. On FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH,
/// or after a network error, the session falls back to a full fetch. Brokers that do not
/// support sessions (session id 0 in the answer) get a full fetch every time.
#[derive(Debug)]
pub struct FetchSession {
    client: Client,
    broker_id: i32,
    id: i32,
    epoch: i32,
    sent: HashMap<(String, i32), FetchPosition>,
}

impl FetchSession {
    /// The broker this session is with.
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// The session id (0 = none established).
    pub fn session_id(&self) -> i32 {
        self.id
    }

    /// Forgets the session; the next fetch is a full one.
    pub fn reset(&mut self) {
        self.id = 0;
        self.epoch = 0;
        self.sent.clear();
    }

    /// Fetches `positions` (the complete set wanted), incrementally when a session exists.
    pub async fn fetch(
        &mut self,
        positions: &[FetchPosition],
        opts: &FetchOptions,
    ) -> Result<FetchResult> {
        for attempt in 0..2 {
            let full = self.id == 0;
            let (send, forgotten): (Vec<&FetchPosition>, Vec<(String, i32)>) = if full {
                (positions.iter().collect(), Vec::new())
            } else {
                let wanted: HashMap<(&str, i32), &FetchPosition> = positions
                    .iter()
                    .map(|p| ((p.topic.as_str(), p.partition), p))
                    .collect();
                let send = positions
                    .iter()
                    .filter(|p| self.sent.get(&(p.topic.clone(), p.partition)) != Some(*p))
                    .collect();
                let forgotten = self
                    .sent
                    .keys()
                    .filter(|(t, p)| !wanted.contains_key(&(t.as_str(), *p)))
                    .cloned()
                    .collect();
                (send, forgotten)
            };
            let epoch = if full { 0 } else { self.epoch };
            let resp = match self
                .client
                .fetch_once(self.broker_id, opts, (self.id, epoch), &send, &forgotten)
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    // We cannot know whether the broker saw this epoch: start over.
                    self.reset();
                    return Err(e);
                }
            };
            if matches!(resp.error_code, 70 | 71) && attempt == 0 {
                tracing::debug!(
                    broker = self.broker_id,
                    code = resp.error_code,
                    "fetch session reset"
                );
                self.reset();
                continue;
            }
            if let Err(e) = Error::check_code(resp.error_code, None) {
                self.reset();
                return Err(e.broker(self.broker_id));
            }
            if full {
                self.id = resp.session_id;
                self.epoch = 1;
            } else {
                // Epochs wrap to 1 (0 would mean "new session").
                self.epoch = if self.epoch == i32::MAX {
                    1
                } else {
                    self.epoch + 1
                };
            }
            if self.id != 0 {
                self.sent = positions
                    .iter()
                    .map(|p| ((p.topic.clone(), p.partition), p.clone()))
                    .collect();
            }
            return Ok(convert(resp));
        }
        Err(Error::protocol("fetch session could not be re-established"))
    }
}

#[cfg(test)]
mod tests {
    //! Fetch sessions against an in-process fake broker (Tansu does not do sessions).

    use super::*;
    use crate::ClientConfig;
    use crate::connection::tests::{answer_api_versions, read_request, write_response};
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{ApiKey, MetadataResponse};
    use kafka_protocol::protocol::Decodable;
    use tokio::net::TcpListener;

    /// (session_id, epoch, partitions sent, forgotten) of each Fetch the fake received.
    type Seen = (i32, i32, Vec<(String, i32, i64)>, Vec<(String, i32)>);

    async fn fake_broker(answers: Vec<(i16, i32)>) -> (String, tokio::task::JoinHandle<Vec<Seen>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let answers = std::sync::Arc::new(parking_lot::Mutex::new(answers.into_iter()));
        let h = tokio::spawn(async move {
            let mut conns = Vec::new();
            while let Ok(Ok((mut s, _))) =
                tokio::time::timeout(std::time::Duration::from_secs(1), l.accept()).await
            {
                let (seen, answers) = (seen.clone(), answers.clone());
                conns.push(tokio::spawn(async move {
                    answer_api_versions(
                        &mut s,
                        &[(ApiKey::Metadata, 0, 12), (ApiKey::Fetch, 4, 12)],
                    )
                    .await;
                    while let Some((h, mut body)) = read_request(&mut s).await {
                        let v = h.request_api_version;
                        if h.request_api_key == ApiKey::Metadata as i16 {
                            let r = MetadataResponse::default()
                                .with_controller_id(BrokerId(1))
                                .with_brokers(vec![
                                    MetadataResponseBroker::default()
                                        .with_node_id(BrokerId(1))
                                        .with_host(StrBytes::from_static_str("127.0.0.1"))
                                        .with_port(addr.port() as i32),
                                ])
                                .with_topics(vec![
                                    MetadataResponseTopic::default()
                                        .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                                        .with_partitions(
                                            (0..3)
                                                .map(|p| {
                                                    MetadataResponsePartition::default()
                                                        .with_partition_index(p)
                                                        .with_leader_id(BrokerId(1))
                                                })
                                                .collect(),
                                        ),
                                ]);
                            write_response(&mut s, &h, &r).await;
                            continue;
                        }
                        let req = FetchRequest::decode(&mut body, v).unwrap();
                        seen.lock().push((
                            req.session_id,
                            req.session_epoch,
                            req.topics
                                .iter()
                                .flat_map(|t| {
                                    t.partitions.iter().map(|p| {
                                        (t.topic.0.to_string(), p.partition, p.fetch_offset)
                                    })
                                })
                                .collect(),
                            req.forgotten_topics_data
                                .iter()
                                .flat_map(|t| {
                                    t.partitions.iter().map(|p| (t.topic.0.to_string(), *p))
                                })
                                .collect(),
                        ));
                        let (code, id) = answers.lock().next().unwrap_or((0, 77));
                        let r = FetchResponse::default()
                            .with_error_code(code)
                            .with_session_id(id);
                        write_response(&mut s, &h, &r).await;
                    }
                }));
            }
            for c in conns {
                let _ = c.await;
            }
            std::mem::take(&mut *seen.lock())
        });
        (addr.to_string(), h)
    }

    #[tokio::test]
    async fn incremental_fetches_send_only_changes_and_fall_back_on_session_errors() {
        let (addr, fake) = fake_broker(vec![(0, 77), (0, 77), (0, 77), (70, 0), (0, 78)]).await;
        let c = crate::Client::connect(ClientConfig::new([addr]))
            .await
            .unwrap();
        let mut s = c.fetch_session(1);
        let opts = FetchOptions::default();
        let a = FetchPosition::new("t", 0, 10);
        let b = FetchPosition::new("t", 1, 20);
        let c2 = FetchPosition::new("t", 2, 30);
        // 1: full fetch creating a session.
        s.fetch(&[a.clone(), b.clone()], &opts).await.unwrap();
        assert_eq!(s.session_id(), 77);
        // 2: only partition 0 moved.
        let a2 = FetchPosition::new("t", 0, 15);
        s.fetch(&[a2.clone(), b.clone()], &opts).await.unwrap();
        // 3: partition 1 dropped, partition 2 added.
        s.fetch(&[a2.clone(), c2.clone()], &opts).await.unwrap();
        // 4: FETCH_SESSION_ID_NOT_FOUND → 5: a full fetch, new session.
        s.fetch(&[a2.clone(), c2.clone()], &opts).await.unwrap();
        assert_eq!(s.session_id(), 78);
        drop(s);
        drop(c);
        let seen = fake.await.unwrap();
        let t = |p: i32, o: i64| ("t".to_string(), p, o);
        assert_eq!(seen[0], (0, 0, vec![t(0, 10), t(1, 20)], vec![]));
        assert_eq!(seen[1], (77, 1, vec![t(0, 15)], vec![]));
        assert_eq!(seen[2], (77, 2, vec![t(2, 30)], vec![("t".to_string(), 1)]));
        assert_eq!(seen[3], (77, 3, vec![], vec![]));
        assert_eq!(seen[4], (0, 0, vec![t(0, 15), t(2, 30)], vec![]));
    }
}
