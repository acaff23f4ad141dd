//! Reading a target partition's tail for recovery: the batches from the map's target
//! position to the target's end, as they are stored (checked by [`super::recovery`]).

use std::time::Duration;

use strait_client::{Client, FetchOptions, FetchPosition, IsolationLevel};
use strait_records::{Batch, Limits};

use crate::error::MirrorError;

/// Largest tail recovery reads: what a crashed process wrote past its last state write is
/// bounded by its in-flight budget, far below this.
const MAX_TAIL_BYTES: usize = 1 << 30;
/// Offsets read before the map's target position, to recognise duplicates of records
/// written just before the last state write (a killed process had at most 5 batches per
/// partition in flight).
pub const LOOKBACK: i64 = 10_000;
/// Fetches that return no batch before giving up (the broker answers at once when data
/// is there; this bounds a broker that reports an end it cannot serve).
const MAX_EMPTY_FETCHES: u32 = 20;

/// The target's batches holding offsets `from..end` of `topic`/`partition`.
pub async fn read_tail(
    target: &Client,
    topic: &str,
    partition: i32,
    from: i64,
    end: i64,
    limits: &Limits,
) -> Result<Vec<Batch>, MirrorError> {
    let kafka = |what: &str, e| {
        MirrorError::kafka(what.to_owned(), e)
            .topic(topic)
            .partition(partition)
    };
    let opts = FetchOptions {
        max_wait: Duration::from_millis(50),
        isolation: IsolationLevel::ReadUncommitted,
        ..FetchOptions::default()
    };
    let mut batches = Vec::new();
    let mut bytes = 0usize;
    let mut pos = from;
    let mut empty = 0;
    while pos < end {
        let (leader, _) = target
            .leader_for(topic, partition)
            .await
            .map_err(|e| kafka("recovery: target leader", e))?;
        let fetched = target
            .fetch(leader, &[FetchPosition::new(topic, partition, pos)], &opts)
            .await
            .map_err(|e| kafka("recovery: reading the target", e))?;
        let Some(p) = fetched.partitions.into_iter().next() else {
            empty += 1;
            if empty >= MAX_EMPTY_FETCHES {
                break;
            }
            continue;
        };
        if let Some(e) = strait_client::Error::from_code(p.error_code) {
            return Err(kafka("recovery: reading the target", e));
        }
        let split = strait_records::split(p.records, limits).map_err(|e| {
            MirrorError::records(format!("recovery: target batch at offset {pos}"), e)
                .topic(topic)
                .partition(partition)
        })?;
        if split.batches.is_empty() {
            empty += 1;
            if empty >= MAX_EMPTY_FETCHES {
                break;
            }
            continue;
        }
        for b in split.batches {
            b.verify_crc().map_err(|e| {
                MirrorError::records(format!("recovery: target batch at offset {pos}"), e)
                    .topic(topic)
                    .partition(partition)
            })?;
            let h = b.header();
            let next = h.base_offset + i64::from(h.last_offset_delta) + 1;
            if next <= pos {
                continue;
            }
            pos = next;
            bytes += b.size();
            batches.push(b);
        }
        if bytes > MAX_TAIL_BYTES {
            return Err(MirrorError::other(format!(
                "recovery: more than {MAX_TAIL_BYTES} bytes on the target past the last state \
                 write of {topic}/{partition}; the state was not written for far longer than \
                 the in-flight budget allows, or someone else writes the partition"
            )));
        }
    }
    Ok(batches)
}
