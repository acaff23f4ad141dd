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
use uuid::Uuid;

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
    let fresh = || fresh_map(start_offset(flow, src, chosen), dst).map_err(ctx);
    let Some(saved) = saved else {
        return Ok((fresh()?, None, true));
    };
    if saved.target_topic != t.target_topic {
        tracing::warn!(flow = %flow.name, topic = %t.source_topic, partition = p,
            old = %saved.target_topic, new = %t.target_topic,
            "the target topic name changed (naming policy?); starting a new map");
        return Ok((fresh()?, None, true));
    }
    let mut map = state::decode_map(saved).map_err(ctx)?;
    let incidents = Incidents {
        flow,
        metrics,
        t,
        p,
    };
    if !saved.topic_id.is_nil() && !t.topic_id.is_nil() && saved.topic_id != t.topic_id {
        incidents.source_recreated(&mut map, saved.topic_id, src, dst)?;
        return Ok((map, None, true));
    }
    let written = map.next(Side::Target) as i64;
    match dst.end - written {
        0 => Ok((map, None, false)),
        d if d > 0 => Ok((map, Some((written, dst.end)), false)),
        _ => {
            incidents.target_shorter(&mut map, dst)?;
            Ok((map, None, true))
        }
    }
}

/// Where a partition without a map starts on the source, by the flow's start position
/// (`chosen`: where a timestamp or a takeover puts it).
fn start_offset(flow: &Flow, src: Bounds, chosen: Option<i64>) -> i64 {
    match flow.start_position {
        StartPosition::Earliest => src.log_start,
        StartPosition::Latest => src.end,
        // No record that recent: everything from now on.
        StartPosition::Timestamp(_) => chosen.unwrap_or(src.end).clamp(src.log_start, src.end),
        // Proven for every new partition, or the start failed before this. Not raised to
        // the log start: records the source deleted since MM2 copied are a truncation
        // incident, under its policy, never skipped in silence.
        StartPosition::Takeover => chosen.unwrap_or(src.log_start).min(src.end),
    }
}

/// A fresh map at `source_start`, recorded as where replication started: positions
/// before it (a group behind a `latest` start, target records that were there before)
/// never translate as exact.
fn fresh_map(source_start: i64, dst: Bounds) -> Result<OffsetMap, MirrorError> {
    let mut m = OffsetMap::new();
    m.start_at(source_start.max(0) as u64, dst.end.max(0) as u64)
        .map_err(MirrorError::offset_map)?;
    Ok(m)
}

/// The incidents a saved map can meet at a partition's start, counted and decided by the
/// flow's policies.
struct Incidents<'a> {
    flow: &'a Flow,
    metrics: &'a Metrics,
    t: &'a ReplicatedTopic,
    p: i32,
}

impl Incidents<'_> {
    /// The source topic was re-created since the last run (its id was `old`): under
    /// policy `skip`, `map` restarts at the new topic's log start.
    fn source_recreated(
        &self,
        map: &mut OffsetMap,
        old: Uuid,
        src: Bounds,
        dst: Bounds,
    ) -> Result<(), MirrorError> {
        let noticed = Noticed::SinceLastRun {
            log_start: src.log_start,
        };
        self.skipped(Incident::topic_recreated(old, self.t.topic_id, noticed))?;
        let target_next = map.next(Side::Target).max(dst.end.max(0) as u64);
        map.source_recreated(src.log_start.max(0) as u64, target_next)
            .map_err(|e| self.ctx(MirrorError::offset_map(e)))
    }

    /// The target ends before what `map` says was written: under policy `skip`, `map`
    /// goes on from the target's end.
    fn target_shorter(&self, map: &mut OffsetMap, dst: Bounds) -> Result<(), MirrorError> {
        let written = map.next(Side::Target);
        self.skipped(Incident::target_shorter(
            &self.t.target_topic,
            dst.end,
            written,
        ))?;
        let resume = map.next(Side::Source);
        map.target_recreated(dst.end.max(0) as u64, resume)
            .map_err(|e| self.ctx(MirrorError::offset_map(e)))
    }

    /// Counts `incident`, and under policy `skip` logs it (the caller resets the map);
    /// under `fail`, the error that stops the flow.
    fn skipped(&self, incident: Incident) -> Result<(), MirrorError> {
        let (flow, topic, p) = (self.flow, &self.t.source_topic, self.p);
        self.metrics.incident(&flow.name, topic, p, incident.kind());
        let verdict = incident.decide(&Policies::of(flow));
        let skipped = verdict.into_result().map_err(|e| self.ctx(e))?;
        tracing::error!(flow = %flow.name, topic = %topic, partition = p, "{skipped}");
        Ok(())
    }

    /// `e` naming the partition.
    fn ctx(&self, e: MirrorError) -> MirrorError {
        e.topic(&self.t.source_topic).partition(self.p)
    }
}
