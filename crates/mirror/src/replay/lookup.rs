//! "The first offset at or after a time" for every partition of a topic: the broker's
//! ListOffsets by timestamp, checked against the record it points at
//! ([`probe::older_record_at`]); when the broker's answer is provably wrong (Tansu 0.6
//! answers 0 for every time), a bounded binary search over fetches by batch maxTimestamp
//! ([`TimeSearch`]) — which assumes timestamps do not decrease along the log.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::backoff::{Backoff, BackoffConfig};
use strait_client::{
    Client, FetchOptions, FetchPosition, FetchedPartition, IsolationLevel, OffsetSpec,
};
use strait_records::Limits;

use super::decide::{Probed, TimeOffset, TimeSearch};
use crate::datapath::probe::{self, Bounds};
use crate::error::MirrorError;

/// How an offset was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The broker's ListOffsets by timestamp, checked.
    Broker,
    /// The broker's answer was wrong: the binary search, with this many fetches.
    Search {
        /// Fetches taken.
        probes: u32,
    },
}

/// An answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The first offset at or after the time.
    pub offset: TimeOffset,
    /// How it was found.
    pub method: Method,
}

/// Attempts at a fetch of the search before giving up (leader moves).
const ATTEMPTS: u32 = 6;

/// The first offset at or after `ms` of each partition of `bounds`.
pub async fn offsets_for_time(
    client: &Client,
    topic: &str,
    bounds: &BTreeMap<i32, Bounds>,
    ms: i64,
) -> Result<BTreeMap<i32, Found>, MirrorError> {
    let kafka = |what: &str, e| MirrorError::kafka(what.to_owned(), e).topic(topic);
    let asked: Vec<(i32, OffsetSpec)> = bounds
        .keys()
        .map(|p| (*p, OffsetSpec::Timestamp(ms)))
        .collect();
    let answers = client
        .list_offsets(topic, &asked, IsolationLevel::ReadCommitted)
        .await
        .map_err(|e| kafka("list offsets by timestamp", e))?;
    let mut out = BTreeMap::new();
    for (&partition, &b) in bounds {
        let answer = answers.iter().find(|a| a.partition == partition);
        let broker = match answer {
            // -1: no record that recent (a broker that does not know says 0, see below).
            Some(a) if a.offset < 0 => Some(TimeOffset::None),
            Some(a) => {
                let older = probe::older_record_at(client, topic, partition, a.offset, ms)
                    .await
                    .map_err(|e| {
                        kafka("fetch at the offset for the time", e).partition(partition)
                    })?;
                older.is_none().then_some(TimeOffset::At(a.offset))
            }
            None => None,
        };
        let found = match broker {
            Some(offset) => Found {
                offset,
                method: Method::Broker,
            },
            None => {
                tracing::info!(
                    topic,
                    partition,
                    ms,
                    "the broker's ListOffsets by timestamp points at an older record (Tansu \
                     0.6 answers 0 for every time): searching the log by batch maxTimestamp"
                );
                search(client, topic, partition, b, ms).await?
            }
        };
        out.insert(partition, found);
    }
    Ok(out)
}

/// Runs a [`TimeSearch`] over `topic`/`partition`.
async fn search(
    client: &Client,
    topic: &str,
    partition: i32,
    bounds: Bounds,
    ms: i64,
) -> Result<Found, MirrorError> {
    let mut s = TimeSearch::new(ms, bounds);
    while let Some(at) = s.next_probe() {
        let probed = probe_at(client, topic, partition, at).await?;
        s.observe(at, probed.as_ref());
    }
    let offset = s.answer().unwrap_or(TimeOffset::None);
    Ok(Found {
        offset,
        method: Method::Search { probes: s.probes() },
    })
}

/// The first batch holding an offset at or after `at` (read_committed), decoded.
async fn probe_at(
    client: &Client,
    topic: &str,
    partition: i32,
    at: i64,
) -> Result<Option<Probed>, MirrorError> {
    let limits = Limits::default();
    // At least one whole batch comes back whatever the cap.
    let Some(p) = fetch_one(
        client,
        topic,
        partition,
        at,
        1,
        IsolationLevel::ReadCommitted,
    )
    .await?
    else {
        return Ok(None);
    };
    let bad = |offset: i64, e| {
        MirrorError::records(format!("time search: batch at offset {offset}"), e)
            .topic(topic)
            .partition(partition)
    };
    let split = strait_records::split(p.records, &limits).map_err(|e| bad(at, e))?;
    let Some(batch) = split
        .batches
        .into_iter()
        .find(|b| b.header().next_offset() > at)
    else {
        return Ok(None);
    };
    let h = *batch.header();
    let mut records = Vec::new();
    for r in batch.records(&limits).map_err(|e| bad(h.base_offset, e))? {
        let r = r.map_err(|e| bad(h.base_offset, e))?;
        records.push((r.offset, r.timestamp));
    }
    Ok(Some(Probed {
        base: h.base_offset,
        next: h.next_offset(),
        max_timestamp: h.max_timestamp,
        control: h.attributes.is_control(),
        records,
    }))
}

/// One fetch of `topic`/`partition` at `at` from its leader, retrying leader moves and
/// connection errors a few times; `None` when the broker answers for no partition.
pub(super) async fn fetch_one(
    client: &Client,
    topic: &str,
    partition: i32,
    at: i64,
    max_bytes: i32,
    isolation: IsolationLevel,
) -> Result<Option<FetchedPartition>, MirrorError> {
    let opts = FetchOptions {
        // Not 0: Tansu answers nothing at all for max_wait = 0.
        max_wait: Duration::from_millis(50),
        min_bytes: 1,
        max_bytes,
        isolation,
    };
    let mut backoff = Backoff::new(BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
    });
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            client.invalidate_metadata();
            tokio::time::sleep(backoff.next_delay()).await;
        }
        let result = async {
            let (leader, _) = client.leader_for(topic, partition).await?;
            let mut pos = FetchPosition::new(topic, partition, at);
            pos.max_bytes = max_bytes;
            let fetched = client.fetch(leader, &[pos], &opts).await?;
            match fetched.partitions.into_iter().next() {
                Some(p) => match p.error() {
                    Some(e) => Err(e),
                    None => Ok(Some(p)),
                },
                None => Ok(None),
            }
        }
        .await;
        match result {
            Ok(p) => return Ok(p),
            Err(e) => last = Some(e),
        }
    }
    Err(MirrorError::kafka(
        format!("fetch at offset {at}"),
        last.unwrap_or_else(|| {
            strait_client::Error::new(strait_client::ErrorKind::NoBrokerAvailable)
        }),
    )
    .topic(topic)
    .partition(partition))
}
