//! The held-bytes check after each plan: what a partition holds back for open
//! transactions, published, and the spill or the error when it holds more than it may.

use super::{BatchPin, PartitionSpec};
use crate::datapath::fetcher::PartitionFeed;
use crate::datapath::plan::{OpenTxn, Planner};
use crate::error::MirrorError;

/// Publishes the partition's held bytes (its budget account and the `strait_held_bytes`
/// metric; `/health` names the oldest open transaction while every partition together
/// holds more than the budget's held limit) and acts when the partition holds more than it
/// may while transactions are open — more than `spec.shared.max_held_bytes` alone, or the most of
/// all partitions while they exceed the held limit together (rules 5–6 of
/// [`crate::datapath::quota`]; when another partition holds the most, that one is told through its
/// account and its fetcher makes it look with an empty record set): it spills ([`Planner::spill`]: the held batches are dropped, the partition reads
/// ahead for the markers and then re-reads from where its steps stopped, moving the fetch
/// cursor back when the planner asks) or, with `--once` or when already spilling, fails
/// with an error naming the transaction.
pub(super) fn check_held(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    planner: &mut Planner<BatchPin>,
) -> Result<(), MirrorError> {
    if let Some(at) = planner.take_rewind() {
        tracing::info!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition,
            from = at, "every transaction held before the spill is decided: re-reading");
        feed.with_cursor(|c| c.position = at);
    }
    let held = planner.held_bytes();
    let oldest = planner.oldest_open();
    let share = feed.share(&spec.shared.budget, &spec.shared.flow);
    share.set_held(held as u64, oldest.map(|t| (t.producer_id, t.first_offset)));
    feed.metrics.held(held as u64);
    feed.metrics.held_alarm(alarm(spec));
    let err = if held > spec.shared.max_held_bytes {
        over_own_limit(spec, planner, held, oldest)
    } else if let Some(why) = share.take_eviction() {
        why
    } else {
        match spec.shared.budget.check_held(share) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        }
    };
    // `--once` stops at the end seen at start: it does not read ahead for markers.
    if spec.until.is_none() && planner.spill() {
        tracing::warn!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition,
            "{err}: dropping the held batches and reading ahead for the markers; the \
             partition re-reads them once decided");
        share.set_held(0, None);
        feed.metrics.held(0);
        if spec.shared.budget.held() <= spec.shared.budget.held_limit() {
            feed.metrics.held_alarm(None);
        }
        return Ok(());
    }
    // A restart would hold the same bytes again: this stops the flow, with the reason.
    Err(MirrorError::config(err))
}

/// The alarm `/health` shows while every partition together holds more than the budget's
/// held limit, naming the oldest open transaction; `None` within it.
fn alarm(spec: &PartitionSpec) -> Option<String> {
    let over = spec.shared.budget.held() > spec.shared.budget.held_limit();
    over.then(|| {
        let oldest = spec
            .shared
            .budget
            .oldest_held()
            .map_or_else(String::new, |o| {
                format!(
                    "; the oldest open transaction: producer id {} since source offset {} of {}",
                    o.producer_id, o.first_offset, o.partition
                )
            });
        format!(
            "{} bytes are held for open transactions, more than the {} allowed{oldest}",
            spec.shared.budget.held(),
            spec.shared.budget.held_limit()
        )
    })
}

/// Why the partition fails when it alone holds `held` bytes, more than it may, waiting
/// for `oldest`.
fn over_own_limit(
    spec: &PartitionSpec,
    planner: &Planner<BatchPin>,
    held: usize,
    oldest: Option<OpenTxn>,
) -> String {
    let txn = oldest.map_or_else(
        || "no open transaction".to_owned(),
        |t| {
            format!(
                "the transaction of producer id {} open since source offset {}",
                t.producer_id, t.first_offset
            )
        },
    );
    format!(
        "{held} bytes ({} batches) of {}/{} are held back waiting for {txn} to commit or \
         abort, more than the {} allowed (half of engine.in_flight_memory); raise \
         engine.in_flight_memory or end the transaction",
        planner.held_batches(),
        spec.shared.source_topic,
        spec.partition,
        spec.shared.max_held_bytes
    )
}
