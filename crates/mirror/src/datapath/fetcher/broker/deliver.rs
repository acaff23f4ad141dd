//! One partition of a fetch response handed on ([`deliver`]): its record set to the
//! pipeline with its share of the response's reservation, or its error (out of range,
//! moved, retried, failed), or a batch that came only in part or can never fit.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use strait_client::FetchedPartition;
use strait_records::split;

use super::{Partial, beyond_budget, partial};
use crate::datapath::budget::Reservation;
use crate::datapath::fetcher::{Cursor, Feed, PartitionFeed, RecordSet, Router};
use crate::datapath::stability::Stability;
use crate::error::MirrorError;

/// Kafka codes after which the partition is routed again: NOT_LEADER_OR_FOLLOWER,
/// UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH,
/// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID, REPLICA_NOT_AVAILABLE.
/// Routing looks the topic up again, which finds a re-created topic
/// ([`Router::check_topic_id`]); Tansu refuses an unknown topic id with
/// UNKNOWN_TOPIC_OR_PARTITION, Kafka with UNKNOWN_TOPIC_ID.
const REROUTE: [i16; 8] = [6, 3, 5, 74, 75, 100, 110, 9];
/// OFFSET_OUT_OF_RANGE.
const OUT_OF_RANGE: i16 = 1;

/// Fails the partition (pausing its feed) for a batch of `bytes` larger than the whole
/// in-flight budget, with an error naming the setting to raise.
fn fail_too_large(router: &Router, p: &PartitionFeed, asked: Cursor, bytes: u64) {
    let err = MirrorError::other(format!(
        "the batch at source offset {} is {bytes} bytes, more than the whole in-flight budget \
         (engine.in_flight_memory = {} bytes) can hold: raise engine.in_flight_memory above it",
        asked.position,
        router.budget.total()
    ))
    .cluster(&router.cluster);
    p.with_cursor(|c| c.paused = true);
    p.inbox.push_control(Feed::Failed(Box::new(err)));
}

/// Handles one partition of a response, taking its share of the fetch's `upfront`
/// reservation, and sets `behind` when data is left past what was returned; `Some(true)`
/// when the fetcher must forget the partition. `received`: when the response came.
#[allow(clippy::too_many_arguments)]
pub(super) async fn deliver(
    router: &Arc<Router>,
    p: &Arc<PartitionFeed>,
    asked: Cursor,
    fp: FetchedPartition,
    upfront: &mut Reservation,
    behind: &mut bool,
    stability: &Stability,
    received: Instant,
) -> Option<bool> {
    if fp.error_code != 0 {
        return refused(router, p, asked, &fp);
    }
    let Some((end, next)) = reach(router, &fp, asked) else {
        return only_part_of_a_batch(router, p, asked, &fp.records).await;
    };
    p.partial.store(0, std::sync::atomic::Ordering::Relaxed);
    // Behind: more is waiting than this response brought (at the end of a busy log a
    // few records always arrive during the response; that is not falling behind).
    *behind |= end.saturating_sub(next) > next.saturating_sub(asked.position).max(1);
    let news = next != asked.position || {
        let mut last = p.last_end.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *last, end) != end
    };
    if !news && fp.records.is_empty() {
        return None;
    }
    if let Some(bytes) = beyond_budget(&fp.records, router.budget.total()) {
        // Kafka returns a first batch whole even when it is larger than the fetch
        // asked for (KIP-74): waiting for room the budget can never give would hold
        // this response's reservation forever and stall every other partition.
        fail_too_large(router, p, asked, bytes);
        return Some(true);
    }
    let account = p.share(&router.budget, &router.flow);
    // More than the fetch reserved: a first batch larger than the limit (KIP-74),
    // or a broker that returns more than asked (Tansu). The rest is never waited
    // for while holding part of it (`Budget::grow`).
    let share = upfront.take_for(fp.records.len(), account);
    let reservation = Arc::new(router.budget.grow(share, fp.records.len()).await);
    let feed = Feed::Data(Box::new(RecordSet {
        generation: asked.generation,
        position: asked.position,
        records: fp.records,
        stable: stability
            .trusted()
            .then_some(fp.last_stable_offset)
            .filter(|&o| o >= 0),
        aborted: fp.aborted_transactions,
        end,
        reservation,
        received,
    }));
    p.with_cursor(|c| {
        if c.generation == asked.generation && c.position == asked.position && !c.paused {
            // Only this fetcher offers data and it had room: never full.
            if p.inbox.offer(feed).is_ok() {
                c.position = next;
            }
        }
    });
    None
}

/// What one partition's response reaches: the log's end as it reports it (the last
/// stable offset when known, else the high watermark) and the position after its last
/// whole batch; `None` when records came but not one whole batch.
fn reach(router: &Router, fp: &FetchedPartition, asked: Cursor) -> Option<(i64, i64)> {
    let end = if fp.last_stable_offset >= 0 {
        fp.last_stable_offset
    } else {
        fp.high_watermark
    };
    let split = split(fp.records.clone(), &router.limits);
    let next = match &split {
        Ok(s) => s.batches.last().map_or(asked.position, |b| {
            b.header().next_offset().max(asked.position)
        }),
        // The pipeline reports the error with context.
        Err(_) => asked.position,
    };
    if let Ok(s) = &split
        && s.batches.is_empty()
        && !fp.records.is_empty()
    {
        return None;
    }
    Some((end, next))
}

/// A partition the broker answered with an error: out of range (the pipeline decides),
/// moved (routed again), retriable (asked again next round) or failed.
fn refused(
    router: &Arc<Router>,
    p: &Arc<PartitionFeed>,
    asked: Cursor,
    fp: &FetchedPartition,
) -> Option<bool> {
    match fp.error_code {
        OUT_OF_RANGE => {
            p.with_cursor(|c| {
                if c.generation == asked.generation {
                    c.paused = true;
                    p.inbox.push_control(Feed::OutOfRange {
                        generation: asked.generation,
                        position: asked.position,
                    });
                }
            });
            None
        }
        code if REROUTE.contains(&code) => {
            p.metrics.fetch_retry();
            router.client.invalidate_metadata();
            router.assign(Arc::clone(p));
            Some(true)
        }
        _ => {
            let e = fp.error()?;
            p.metrics.fetch_error();
            if e.is_retriable() {
                return None;
            }
            let err = MirrorError::kafka("fetch", e).cluster(&router.cluster);
            p.inbox.push_control(Feed::Failed(Box::new(err)));
            Some(true)
        }
    }
}

/// Only the start of a batch came back (it is larger than what this partition may
/// bring): asks for more next time instead of re-fetching the same piece in a loop, or
/// fails the partition clearly if the batch can never fit.
async fn only_part_of_a_batch(
    router: &Router,
    p: &PartitionFeed,
    asked: Cursor,
    records: &[u8],
) -> Option<bool> {
    let streak = p.partial.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    match partial(records, router.budget.total()) {
        Partial::Grow => {
            tokio::time::sleep(Duration::from_millis(u64::from(streak.min(10)) * 5)).await;
            None
        }
        Partial::TooLarge(bytes) => {
            fail_too_large(router, p, asked, bytes);
            Some(true)
        }
    }
}
