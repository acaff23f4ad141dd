//! `strait replay`: copy a time range of one source topic once to the target, with an
//! offset map of its own so the replayed range translates too.
//!
//! - [`decide`]: pure — the range, the time-search fallback, the cut at the range's end,
//!   whether a run starts, resumes or is refused, and how a partition resumes.
//! - `lookup`: the first offset at or after a time (ListOffsets by time, checked; the
//!   search when the broker is wrong, as Tansu 0.6 is).
//! - `copy`: the copy of one partition: fetch → [`crate::datapath::plan::Planner`] (the
//!   flow's planner: whole batches forwarded, transactions decided by their markers, the
//!   records before the range left out) → [`decide::cut`] → `IdempotentProducer` (the
//!   header patch, payload not copied) → the replay's map.
//!
//! [`prepare`] finds the ranges and the run ([`Prepared`], the plan a dry run prints);
//! [`execute`] copies them and writes the replay's records into the flow's state topic
//! ([`crate::state::replay`]): every partition before the first record is copied, then
//! every `intervals.checkpoint` while copying and when a partition is done. The flow's
//! own maps are never touched. [`load`] gives `strait offsets translate --replay` the maps.

mod copy;
pub mod decide;
pub mod guard;
pub mod lookup;

use std::collections::BTreeMap;

use strait_client::{Client, IsolationLevel};
use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap};
use uuid::Uuid;

pub use copy::{PartitionSummary, Summary, execute};
pub use decide::{RunDecision, Spec, SpecError, TimeOffset};
pub use lookup::{Found, Method};

use crate::config::Flow;
use crate::datapath::probe;
use crate::error::MirrorError;
use crate::state::{ReplayState, ReplayStatus, SavedReplays, read_replays};

/// One partition of a prepared run.
#[derive(Debug, Clone)]
pub struct PartitionPlan {
    /// The partition (the same index on the target).
    pub partition: i32,
    /// First source offset of the range.
    pub start: i64,
    /// Source offset the range ends before.
    pub end: i64,
    /// How `start` was found (`None` on a resume: saved).
    pub from_method: Option<Method>,
    /// How `end` was found (`None`: the end of the log, or saved).
    pub until_method: Option<Method>,
    /// A resumed partition: its saved map and whether it is done.
    pub saved: Option<(OffsetMap, bool)>,
    /// The target partition's end now (-1: the target topic does not exist yet).
    pub target_end: i64,
}

/// A replay ready to execute (or refused), with everything a dry run shows.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The flow whose state topic keeps the replay.
    pub flow: String,
    /// What is replayed.
    pub spec: Spec,
    /// [`Spec::id`].
    pub id: String,
    /// Start, resume, or refuse.
    pub decision: RunDecision,
    /// The source topic's id.
    pub topic_id: Uuid,
    /// Partitions of the target topic (`None`: it does not exist; `execute` creates it).
    pub target_partitions: Option<i32>,
    /// Per partition.
    pub partitions: Vec<PartitionPlan>,
}

impl Prepared {
    /// The run this replay writes (the resumed or started one), if it is not refused.
    pub fn run(&self) -> Option<u32> {
        match self.decision {
            RunDecision::Start { run } | RunDecision::Resume { run } => Some(run),
            RunDecision::AlreadyDone { .. } => None,
        }
    }

    /// Source offsets the replay covers (what is left to copy on a resume is less).
    pub fn source_records(&self) -> i64 {
        self.partitions.iter().map(|p| p.end - p.start).sum()
    }
}

/// Prepares a replay of `spec` on `flow`: checks the topics, reads the flow's saved
/// replays, decides the run ([`decide::decide_run`]) and finds each partition's range
/// (for a new run: by time, rules 1–6; on a resume: as saved).
pub async fn prepare(
    source: &Client,
    target: &Client,
    flow: &Flow,
    spec: Spec,
    again: bool,
) -> Result<Prepared, MirrorError> {
    plan_run(source, target, flow, spec, again)
        .await
        .map_err(|e| e.flow(&flow.name))
}

/// [`prepare`]'s work.
async fn plan_run(
    source: &Client,
    target: &Client,
    flow: &Flow,
    spec: Spec,
    again: bool,
) -> Result<Prepared, MirrorError> {
    refuse_reserved_target(flow, &spec)?;
    let topic = spec.source_topic.as_str();
    let (topic_id, partitions) = source_partitions(source, flow, topic).await?;
    let target_partitions = target_partition_count(target, flow, &spec, &partitions).await?;
    let saved = read_replays(target, flow).await?;
    let id = spec.id();
    let latest = latest_run(&saved, &id, &spec)?;
    let decision = decide::decide_run(latest, again);
    let target_ends = target_ends(target, &spec, &partitions, target_partitions).await?;
    let target_end = |p: i32| target_ends.get(&p).copied().unwrap_or(-1);
    let plans = match decision {
        RunDecision::Resume { run } => {
            let resumed = Resumed {
                saved: &saved,
                id: &id,
                run,
                topic,
                topic_id,
            };
            resumed.plans(&partitions, target_end)?
        }
        RunDecision::Start { .. } => {
            start_plans(source, target, flow, &spec, &partitions, target_end).await?
        }
        RunDecision::AlreadyDone { .. } => Vec::new(),
    };
    Ok(Prepared {
        flow: flow.name.clone(),
        spec,
        id,
        decision,
        topic_id,
        target_partitions,
        partitions: plans,
    })
}

/// Refuses a replay into the flow's state topic or an internal topic.
fn refuse_reserved_target(flow: &Flow, spec: &Spec) -> Result<(), MirrorError> {
    if spec.target_topic == flow.state_topic || spec.target_topic.starts_with("__") {
        return Err(MirrorError::config(format!(
            "{} is the flow's state topic or an internal topic: a replay cannot write there",
            spec.target_topic
        )));
    }
    Ok(())
}

/// The source topic's id and its partitions, sorted; a missing topic is refused.
async fn source_partitions(
    source: &Client,
    flow: &Flow,
    topic: &str,
) -> Result<(Uuid, Vec<i32>), MirrorError> {
    let meta = source
        .metadata(Some(&[topic]))
        .await
        .map_err(|e| MirrorError::kafka("source metadata", e).cluster(&flow.source))?;
    let Some(t) = meta.topics.get(topic) else {
        return Err(MirrorError::config(format!(
            "topic {topic} does not exist on the source cluster {}",
            flow.source
        )));
    };
    let mut partitions: Vec<i32> = t.partitions.keys().copied().collect();
    partitions.sort_unstable();
    Ok((t.id, partitions))
}

/// The target topic's partition count (`None`: it does not exist); a target topic with
/// fewer partitions than the source's is refused.
async fn target_partition_count(
    target: &Client,
    flow: &Flow,
    spec: &Spec,
    partitions: &[i32],
) -> Result<Option<i32>, MirrorError> {
    let dst = target
        .metadata(Some(&[spec.target_topic.as_str()]))
        .await
        .map_err(|e| MirrorError::kafka("target metadata", e).cluster(&flow.target))?;
    let target_partitions = dst
        .topics
        .get(&spec.target_topic)
        .map(|t| t.partitions.len() as i32);
    if let Some(n) = target_partitions
        && (n as usize) < partitions.len()
    {
        return Err(MirrorError::config(format!(
            "the target topic {} has {n} partitions, fewer than the {} of {}: partition \
             p is replayed into partition p",
            spec.target_topic,
            partitions.len(),
            spec.source_topic
        )));
    }
    Ok(target_partitions)
}

/// Each target partition's end now (empty when the target topic does not exist).
async fn target_ends(
    target: &Client,
    spec: &Spec,
    partitions: &[i32],
    target_partitions: Option<i32>,
) -> Result<BTreeMap<i32, i64>, MirrorError> {
    Ok(match target_partitions {
        Some(_) => probe::bounds(
            target,
            &spec.target_topic,
            partitions,
            IsolationLevel::ReadUncommitted,
        )
        .await
        .map_err(|e| MirrorError::kafka("target partition ends", e).topic(&spec.target_topic))?
        .into_iter()
        .map(|(p, b)| (p, b.end))
        .collect(),
        None => BTreeMap::new(),
    })
}

/// A run being resumed: what is saved of it and the source topic it must still be on.
struct Resumed<'a> {
    /// The flow's saved replays.
    saved: &'a SavedReplays,
    /// [`Spec::id`].
    id: &'a str,
    /// The run resumed.
    run: u32,
    /// The source topic.
    topic: &'a str,
    /// The source topic's id now.
    topic_id: Uuid,
}

impl Resumed<'_> {
    /// Each partition's plan as saved; a partition without saved state, or saved on an
    /// earlier topic of the same name, is refused.
    fn plans(
        &self,
        partitions: &[i32],
        target_end: impl Fn(i32) -> i64,
    ) -> Result<Vec<PartitionPlan>, MirrorError> {
        let (id, run, topic) = (self.id, self.run, self.topic);
        let mut plans = Vec::new();
        for p in partitions {
            let key = crate::state::ReplayKey {
                id: id.to_owned(),
                run,
                partition: *p,
            };
            let Some(s) = self.saved.get(&key) else {
                return Err(MirrorError::state(format!(
                    "replay {id} run {run} has no saved state for partition {p} (the \
                     topic grew since?): run it again with --again"
                )));
            };
            if !s.topic_id.is_nil() && !self.topic_id.is_nil() && s.topic_id != self.topic_id {
                return Err(MirrorError::config(format!(
                    "replay {id} run {run} was started on another topic {topic} (it was \
                     deleted and re-created since): run it again with --again"
                )));
            }
            let map = snapshot_map(s)?;
            plans.push(PartitionPlan {
                partition: *p,
                start: s.start,
                end: s.end,
                from_method: None,
                until_method: None,
                saved: Some((map, s.status == ReplayStatus::Done)),
                target_end: target_end(*p),
            });
        }
        Ok(plans)
    }
}

/// A new run's plans: each partition's range found by time, each checked by
/// [`guard::into_flow_topic`] when the replay writes into the flow's own target topic.
async fn start_plans(
    source: &Client,
    target: &Client,
    flow: &Flow,
    spec: &Spec,
    partitions: &[i32],
    target_end: impl Fn(i32) -> i64,
) -> Result<Vec<PartitionPlan>, MirrorError> {
    let topic = spec.source_topic.as_str();
    let bounds = probe::bounds(source, topic, partitions, IsolationLevel::ReadCommitted)
        .await
        .map_err(|e| MirrorError::kafka("source partition bounds", e).topic(topic))?;
    let from = lookup::offsets_for_time(source, topic, &bounds, spec.from_ms).await?;
    let until = match spec.until_ms {
        Some(ms) => Some(lookup::offsets_for_time(source, topic, &bounds, ms).await?),
        None => None,
    };
    let flow_maps = flow_maps_if_same_topic(target, flow, spec).await?;
    let mut plans = Vec::new();
    for (&p, &b) in &bounds {
        let f = from.get(&p).copied().unwrap_or(Found {
            offset: TimeOffset::None,
            method: Method::Broker,
        });
        let u = until.as_ref().and_then(|u| u.get(&p).copied());
        let (start, end) = decide::range(b, f.offset, u.map(|u| u.offset));
        if let Some(saved) = &flow_maps
            && end > start
        {
            guard_flow_topic(saved, spec, p, start, end, target_end(p))?;
        }
        plans.push(PartitionPlan {
            partition: p,
            start,
            end,
            from_method: Some(f.method),
            until_method: u.map(|u| u.method),
            saved: None,
            target_end: target_end(p),
        });
    }
    Ok(plans)
}

/// The flow's own saved maps when the replay writes into the topic the flow replicates
/// the source topic to (rules 18–20: into it only what the flow will recognise).
async fn flow_maps_if_same_topic(
    target: &Client,
    flow: &Flow,
    spec: &Spec,
) -> Result<Option<crate::state::SavedState>, MirrorError> {
    Ok(match flow.topic_decision(&spec.source_topic) {
        crate::config::TopicDecision::Replicate { target_topic }
            if target_topic == spec.target_topic =>
        {
            Some(crate::state::read_state(target, flow).await?)
        }
        _ => None,
    })
}

/// Refuses replaying `start..end` of partition `p` into the flow's own target topic when
/// [`guard::into_flow_topic`] says the flow would not recognise it.
fn guard_flow_topic(
    saved: &crate::state::SavedState,
    spec: &Spec,
    p: i32,
    start: i64,
    end: i64,
    target_end: i64,
) -> Result<(), MirrorError> {
    let topic = spec.source_topic.as_str();
    let copy = match saved.get(&(topic.to_owned(), p)) {
        Some(s) => Some(crate::state::decode_map(s)?.translate(start as u64)),
        None => None,
    };
    guard::into_flow_topic(copy, target_end, end - start).map_err(|why| {
        MirrorError::config(format!(
            "replaying {topic}/{p} from offset {start} into {}, the topic the \
             flow replicates to: {why}; replay --to another topic",
            spec.target_topic
        ))
    })
}

/// The latest run of replay `id` in `saved`; an id whose saved identity differs from
/// `spec` (a hash collision) is refused.
fn latest_run(
    saved: &SavedReplays,
    id: &str,
    spec: &Spec,
) -> Result<Option<decide::EarlierRun>, MirrorError> {
    let mut runs: BTreeMap<u32, Vec<&ReplayState>> = BTreeMap::new();
    for (k, s) in saved.iter().filter(|(k, _)| k.id == id) {
        if s.source_topic != spec.source_topic
            || s.target_topic != spec.target_topic
            || s.from_ms != spec.from_ms
            || s.until_ms != spec.until_ms
        {
            return Err(MirrorError::state(format!(
                "replay id {id} is saved for another replay ({} -> {}): cannot tell them apart",
                s.source_topic, s.target_topic
            )));
        }
        runs.entry(k.run).or_default().push(s);
    }
    Ok(runs.into_iter().next_back().map(|(run, states)| {
        let partitions = states.iter().map(|s| s.partitions).max().unwrap_or(0) as usize;
        let done = states
            .iter()
            .filter(|s| s.status == ReplayStatus::Done)
            .count();
        decide::EarlierRun {
            run,
            complete: done >= partitions && partitions > 0,
        }
    }))
}

fn snapshot_map(s: &ReplayState) -> Result<OffsetMap, MirrorError> {
    OffsetMap::from_snapshot(&s.snapshot, DEFAULT_RUN_BUDGET).map_err(|e| {
        MirrorError::state(format!("replay offset map snapshot: {e}")).topic(&s.source_topic)
    })
}

/// A saved replay, for translation.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// What was replayed.
    pub spec: Spec,
    /// The latest run.
    pub run: u32,
    /// Whether every partition of it is done.
    pub complete: bool,
    /// Per source partition: its range and the replay's map.
    pub partitions: BTreeMap<i32, LoadedPartition>,
}

/// One partition of a [`Loaded`] replay.
#[derive(Debug, Clone)]
pub struct LoadedPartition {
    /// First source offset of the range.
    pub start: i64,
    /// Source offset the range ends before.
    pub end: i64,
    /// The replay's map.
    pub map: OffsetMap,
}

/// The latest run of replay `id` saved in `flow`'s state topic (`None`: no such replay).
pub async fn load(target: &Client, flow: &Flow, id: &str) -> Result<Option<Loaded>, MirrorError> {
    let saved = read_replays(target, flow).await?;
    let Some(run) = saved.keys().filter(|k| k.id == id).map(|k| k.run).max() else {
        return Ok(None);
    };
    let mut partitions = BTreeMap::new();
    let mut spec = None;
    let mut count = 0;
    let mut done = 0;
    for (k, s) in saved.iter().filter(|(k, _)| k.id == id && k.run == run) {
        spec.get_or_insert_with(|| Spec {
            source_topic: s.source_topic.clone(),
            target_topic: s.target_topic.clone(),
            from_ms: s.from_ms,
            until_ms: s.until_ms,
        });
        count = count.max(s.partitions as usize);
        done += usize::from(s.status == ReplayStatus::Done);
        partitions.insert(
            k.partition,
            LoadedPartition {
                start: s.start,
                end: s.end,
                map: snapshot_map(s).map_err(|e| e.flow(&flow.name))?,
            },
        );
    }
    Ok(spec.map(|spec| Loaded {
        spec,
        run,
        complete: done >= count && count > 0,
        partitions,
    }))
}

#[cfg(test)]
mod tests;
