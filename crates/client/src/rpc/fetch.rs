//! Fetch, with records as zero-copy slices of the response frame, and fetch sessions
//! (KIP-227) with fallback to full fetches.
//!
//! Topics are addressed by topic id (KIP-516, Fetch v13) when the broker supports v13 and
//! every position of the request carries an id ([`FetchPosition::with_topic_id`]); then a
//! topic that was deleted and re-created under the same name is never read at the old
//! topic's positions: the broker answers the old id with UNKNOWN_TOPIC_ID (or, in a
//! session, INCONSISTENT_TOPIC_ID), which [`FetchedPartition::topic_id_unknown`] tells. A
//! request with a position without an id, or a broker below v13, is sent by name (v12 at
//! most), and a re-created topic is read like the old one.
//!
//! The response frame is read into one buffer, frozen, and decoded from `Bytes`, so each
//! partition's `records` points into that buffer. A slice pins the whole response buffer until
//! dropped: copy it (`Bytes::copy_from_slice`) if you keep one partition's data for long.
//!
//! The steps of [`FetchSession::fetch`] (what changed, what to send, the next epoch) are in
//! `fetch/session.rs`; the request's encoding in `fetch/request.rs`; the response's
//! conversion to a [`FetchResult`] in `fetch/response.rs`.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::FetchResponse;
use uuid::Uuid;

use crate::broker::Purpose;
use crate::client::Client;
use crate::error::{Error, Result};
use request::{build_request, forgotten_topics, group_by_topic};
use response::convert;
use session::topic_ids;

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
    /// The topic's id (KIP-516), if known: with one for every position of a request, a
    /// broker that supports Fetch v13 is asked by id, and answers UNKNOWN_TOPIC_ID once
    /// the topic of that id is gone (even when one of the same name replaced it).
    pub topic_id: Option<Uuid>,
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
            topic_id: None,
        }
    }

    /// The same position, addressed by topic id `id` where the broker supports it (a nil
    /// id is no id: brokers below KIP-516 report nil ids).
    pub fn with_topic_id(mut self, id: Uuid) -> Self {
        self.topic_id = (!id.is_nil()).then_some(id);
        self
    }
}

/// The highest Fetch version that addresses topics by name.
const LAST_BY_NAME: i16 = 12;
/// The first Fetch version that addresses topics by id.
const FIRST_BY_ID: i16 = 13;
/// UNKNOWN_TOPIC_ID and INCONSISTENT_TOPIC_ID.
const TOPIC_ID_ERRORS: [i16; 2] = [100, 110];
/// FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR:
/// the session is gone or out of step; a full fetch starts a new one.
const SESSION_ERRORS: [i16; 3] = [70, 71, 106];

/// Whether a request for `positions` may go by topic id: every position has one (a request
/// mixing names and ids cannot be encoded at any version).
fn by_id<'a>(mut positions: impl Iterator<Item = &'a FetchPosition>) -> bool {
    positions.all(|p| p.topic_id.is_some())
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
    /// Topic name (of the position asked for, when the broker answered by id).
    pub topic: String,
    /// The topic id the broker answered for (Fetch v13+; `None` below).
    pub topic_id: Option<Uuid>,
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

    /// True when the broker does not know the topic id asked for (UNKNOWN_TOPIC_ID), or
    /// knows the name under another id (INCONSISTENT_TOPIC_ID): the topic of that id was
    /// deleted, and perhaps re-created under the same name. Only a fetch by id gets these.
    pub fn topic_id_unknown(&self) -> bool {
        TOPIC_ID_ERRORS.contains(&self.error_code)
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

/// The topics of a request, in its order: (name, id; nil below v13).
type Asked = Vec<(String, Uuid)>;

impl Client {
    /// One Fetch; by topic id when `by_id` (every position, sent or forgotten, has one),
    /// else at v12 at most. Returns the topics asked for, in request order, with the
    /// response.
    async fn fetch_once(
        &self,
        broker_id: i32,
        opts: &FetchOptions,
        session: (i32, i32),
        positions: &[&FetchPosition],
        forgotten: &[FetchPosition],
        by_id: bool,
    ) -> Result<(Asked, FetchResponse)> {
        let b = self.broker(broker_id)?;
        let timeout = b.request_timeout() + opts.max_wait;
        let max = if by_id { i16::MAX } else { LAST_BY_NAME };
        let mut asked = Asked::new();
        let (_, resp) = self
            .send_built_below(&b, Purpose::Fetch, timeout, max, |v| {
                let topics = group_by_topic(positions.iter().copied(), v);
                asked = topics
                    .iter()
                    .map(|t| (t.topic.0.to_string(), t.topic_id))
                    .collect();
                Ok(build_request(
                    v,
                    opts,
                    session,
                    topics,
                    forgotten_topics(forgotten, v),
                ))
            })
            .await?;
        Ok((asked, resp))
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
        let (asked, resp) = self
            .fetch_once(
                broker_id,
                opts,
                (0, -1),
                &refs,
                &[],
                by_id(positions.iter()),
            )
            .await?;
        Error::check_code(resp.error_code, None).map_err(|e| e.broker(broker_id))?;
        Ok(convert(resp, &asked, &asked))
    }

    /// A fetch session with broker `broker_id` (KIP-227).
    pub fn fetch_session(&self, broker_id: i32) -> FetchSession {
        FetchSession {
            client: self.clone(),
            broker_id,
            id: 0,
            epoch: 0,
            by_id: false,
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
///
/// A session is by topic id or by name throughout (as its first request): when the
/// positions change from one to the other, or a partition's topic id changes (a
/// re-created topic), the session starts over with a full fetch.
#[derive(Debug)]
pub struct FetchSession {
    client: Client,
    broker_id: i32,
    id: i32,
    epoch: i32,
    /// Whether the session's requests address topics by id.
    by_id: bool,
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
        let by_id = by_id(positions.iter());
        self.restart_if_changed(positions, by_id);
        for attempt in 0..2 {
            let full = self.id == 0;
            let (send, forgotten) = self.changes(positions, full);
            let epoch = if full { 0 } else { self.epoch };
            let (asked, resp) = match self
                .client
                .fetch_once(
                    self.broker_id,
                    opts,
                    (self.id, epoch),
                    &send,
                    &forgotten,
                    by_id,
                )
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    // We cannot know whether the broker saw this epoch: start over.
                    self.reset();
                    return Err(e);
                }
            };
            if SESSION_ERRORS.contains(&resp.error_code) && attempt == 0 {
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
            self.advance(positions, full, resp.session_id, by_id);
            return Ok(convert(resp, &asked, &topic_ids(positions)));
        }
        Err(Error::protocol("fetch session could not be re-established"))
    }
}

mod request;
mod response;
mod session;

#[cfg(test)]
mod tests;
