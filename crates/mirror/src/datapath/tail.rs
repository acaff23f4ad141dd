//! Reading a target partition's tail for recovery: the batches from the map's target
//! position to the target's end, as they are stored (checked by [`super::recovery`]):
//! all at once ([`read_tail`]), or a bounded chunk at a time ([`read_chunk`], the
//! restart's recovery, which reads on only as its steps need it).

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

/// Bytes one chunk of a restart's recovery asks for: one partition's fetch
/// (`engine.fetch_partition_max_bytes`, 1 MiB by default), at most a sixteenth of the
/// in-flight budget `budget` (the fetcher's minimum room, which the budget's rules keep
/// coming free), at least 1. Recovery holds about one chunk at a time, so a partition
/// recovering in chunks needs no more of the budget than one fetching.
pub fn chunk_bytes(partition_max_bytes: i32, budget: u64) -> usize {
    let partition = usize::try_from(partition_max_bytes).unwrap_or(0);
    let sixteenth = usize::try_from(budget / 16).unwrap_or(usize::MAX);
    partition.min(sixteenth).max(1)
}

/// The target's batches holding offsets `from..end` of `topic`/`partition`.
pub async fn read_tail(
    target: &Client,
    topic: &str,
    partition: i32,
    from: i64,
    end: i64,
    limits: &Limits,
) -> Result<Vec<Batch>, MirrorError> {
    read(target, topic, partition, from, end, None, limits).await
}

/// The target's batches from `from` on, up to `end`, stopping once they hold `max_bytes`
/// (each fetch asks for no more than what is left of it; a batch larger than that still
/// comes whole, KIP-74). Empty when the target serves nothing past `from`.
pub async fn read_chunk(
    target: &Client,
    topic: &str,
    partition: i32,
    from: i64,
    end: i64,
    max_bytes: usize,
    limits: &Limits,
) -> Result<Vec<Batch>, MirrorError> {
    read(target, topic, partition, from, end, Some(max_bytes), limits).await
}

/// [`read_tail`], or [`read_chunk`] with `chunk`.
async fn read(
    target: &Client,
    topic: &str,
    partition: i32,
    from: i64,
    end: i64,
    chunk: Option<usize>,
    limits: &Limits,
) -> Result<Vec<Batch>, MirrorError> {
    let mut batches = Vec::new();
    let mut bytes = 0usize;
    let mut pos = from;
    let mut empty = 0;
    while pos < end {
        let left = chunk.map(|c| c.saturating_sub(bytes));
        if left == Some(0) {
            break;
        }
        let fetched = fetch(target, topic, partition, pos, left, limits).await?;
        if fetched.is_empty() {
            empty += 1;
            if empty >= MAX_EMPTY_FETCHES {
                break;
            }
            continue;
        }
        for b in fetched {
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

/// One fetch of the target's batches from `pos`, of at most `left` bytes (`None`: the
/// fetch's default); none when the broker returned nothing for the partition.
async fn fetch(
    target: &Client,
    topic: &str,
    partition: i32,
    pos: i64,
    left: Option<usize>,
    limits: &Limits,
) -> Result<Vec<Batch>, MirrorError> {
    let kafka = |what: &str, e| {
        MirrorError::kafka(what.to_owned(), e)
            .topic(topic)
            .partition(partition)
    };
    let mut opts = FetchOptions {
        max_wait: Duration::from_millis(50),
        isolation: IsolationLevel::ReadUncommitted,
        ..FetchOptions::default()
    };
    let (leader, _) = target
        .leader_for(topic, partition)
        .await
        .map_err(|e| kafka("recovery: target leader", e))?;
    let mut position = FetchPosition::new(topic, partition, pos);
    if let Some(left) = left {
        let left = i32::try_from(left).unwrap_or(i32::MAX);
        position.max_bytes = left;
        opts.max_bytes = left;
    }
    let fetched = target
        .fetch(leader, &[position], &opts)
        .await
        .map_err(|e| kafka("recovery: reading the target", e))?;
    let Some(p) = fetched.partitions.into_iter().next() else {
        return Ok(Vec::new());
    };
    if let Some(e) = strait_client::Error::from_code(p.error_code) {
        return Err(kafka("recovery: reading the target", e));
    }
    let split = strait_records::split(p.records, limits).map_err(|e| {
        MirrorError::records(format!("recovery: target batch at offset {pos}"), e)
            .topic(topic)
            .partition(partition)
    })?;
    Ok(split.batches)
}

#[cfg(test)]
mod tests;
