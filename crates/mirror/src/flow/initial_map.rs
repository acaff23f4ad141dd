//! The offset map a partition starts with ([`initial_map`]): fresh at the flow's start
//! position, or its saved map, checked against the source and target as they are now.
//!
//! Rules:
//!
//! - **No saved state, or a renamed target topic**: a fresh map at the start position
//!   (`earliest`, `latest`, a timestamp's offset, or where a takeover proved MirrorMaker 2
//!   stopped), recorded as where replication started; its state is written before
//!   anything is produced.
//! - **The source topic re-created since the last run** (another topic id): a
//!   topic-recreation incident under its policy; `skip` restarts the map at the new
//!   topic's log start.
//! - **The target ahead of the map**: the records past the last state write are the
//!   range recovery checks by content.
//! - **The target behind the map**: a target-mismatch incident under its policy; `skip`
//!   goes on from the target's end.

use strait_offsets::{OffsetMap, Side};

use crate::config::Flow;
use crate::config::model::StartPosition;
use crate::datapath::probe::Bounds;
use crate::error::MirrorError;
use crate::incident::{Incident, Noticed, Policies};
use crate::metrics::Metrics;
use crate::state::{self, PartitionState};
use crate::topics::ReplicatedTopic;

/// Target offsets `from..end` that recovery reads back and checks.
type TargetRange = (i64, i64);

/// The map a partition starts with, the target range recovery must check (records past
/// the last state write: `map.next(Target)..end`), and whether the state must be
/// written before producing (new or reset partitions). `saved`: its saved state, if
/// any; `chosen`: where a timestamp or takeover start position puts a new partition.
pub(super) fn initial_map(
    flow: &Flow,
    metrics: &Metrics,
    saved: Option<&PartitionState>,
    t: &ReplicatedTopic,
    p: i32,
    (src, dst): (Bounds, Bounds),
    chosen: Option<i64>,
) -> Result<(OffsetMap, Option<TargetRange>, bool), MirrorError> {
    let ctx = |e: MirrorError| e.topic(&t.source_topic).partition(p);
    let fresh = |source_start: i64| -> Result<OffsetMap, MirrorError> {
        // Recorded as where replication started: positions before it (a group behind
        // a `latest` start, target records that were there before) never translate
        // as exact.
        let mut m = OffsetMap::new();
        m.start_at(source_start.max(0) as u64, dst.end.max(0) as u64)
            .map_err(|e| ctx(MirrorError::offset_map(e)))?;
        Ok(m)
    };
    let start = match flow.start_position {
        StartPosition::Earliest => src.log_start,
        StartPosition::Latest => src.end,
        // No record that recent: everything from now on.
        StartPosition::Timestamp(_) => chosen.unwrap_or(src.end).clamp(src.log_start, src.end),
        // Proven for every new partition, or the start failed before this. Not raised to
        // the log start: records the source deleted since MM2 copied are a truncation
        // incident, under its policy, never skipped in silence.
        StartPosition::Takeover => chosen.unwrap_or(src.log_start).min(src.end),
    };
    let Some(saved) = saved else {
        return Ok((fresh(start)?, None, true));
    };
    if saved.target_topic != t.target_topic {
        tracing::warn!(flow = %flow.name, topic = %t.source_topic, partition = p,
            old = %saved.target_topic, new = %t.target_topic,
            "the target topic name changed (naming policy?); starting a new map");
        return Ok((fresh(start)?, None, true));
    }
    let mut map = state::decode_map(saved).map_err(ctx)?;
    let policies = Policies::of(flow);
    let count = |kind| metrics.incident(&flow.name, &t.source_topic, p, kind);
    if !saved.topic_id.is_nil() && !t.topic_id.is_nil() && saved.topic_id != t.topic_id {
        let incident = Incident::topic_recreated(
            saved.topic_id,
            t.topic_id,
            Noticed::SinceLastRun {
                log_start: src.log_start,
            },
        );
        count(incident.kind());
        let skipped = incident.decide(&policies).into_result().map_err(ctx)?;
        tracing::error!(flow = %flow.name, topic = %t.source_topic, partition = p, "{skipped}");
        let target_next = map.next(Side::Target).max(dst.end.max(0) as u64);
        map.source_recreated(src.log_start.max(0) as u64, target_next)
            .map_err(|e| ctx(MirrorError::offset_map(e)))?;
        return Ok((map, None, true));
    }
    let written = map.next(Side::Target) as i64;
    match dst.end - written {
        0 => Ok((map, None, false)),
        d if d > 0 => Ok((map, Some((written, dst.end)), false)),
        _ => {
            let incident =
                Incident::target_shorter(&t.target_topic, dst.end, map.next(Side::Target));
            count(incident.kind());
            let skipped = incident.decide(&policies).into_result().map_err(ctx)?;
            tracing::error!(flow = %flow.name, topic = %t.source_topic, partition = p, "{skipped}");
            let resume = map.next(Side::Source);
            map.target_recreated(dst.end.max(0) as u64, resume)
                .map_err(|e| ctx(MirrorError::offset_map(e)))?;
            Ok((map, None, true))
        }
    }
}
