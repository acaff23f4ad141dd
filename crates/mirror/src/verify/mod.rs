//! `strait verify`: the parity check. For every partition a flow replicates, it reads the
//! offset map from the flow's state topic, reads both logs over the offsets the map covers
//! (read_committed, as a consumer sees them) and compares them record by record; for every
//! consumer group the flow syncs, it judges the group's target commit against the
//! translation of its source position and proves it by the records there. Read-only: it
//! writes nothing to either cluster.
//!
//! Folder map:
//! - [`content`]: a record's content as compared (a digest per field);
//! - [`spans`]: the map cut into the pieces compared (pure);
//! - [`compare`](mod@compare): the pure rules for one partition (findings by offset);
//! - [`judge`]: the pure verdicts (group positions, outcomes) and the bandwidth pace;
//! - `groups.rs`: each group position read, translated and proven;
//! - `partition.rs`: one partition's bounds and map gathered, its records read and compared;
//! - this file: the run that feeds them, partitions in parallel ([`Options::parallel`])
//!   under one bandwidth limit ([`Options::bytes_per_sec`]), or a sample of each
//!   partition ([`Options::sample`]) for huge topics.

pub mod compare;
pub mod content;
mod groups;
pub mod judge;
mod partition;
pub mod spans;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use strait_client::Client;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use self::compare::{Finding, Tally};
use self::judge::{GroupVerdict, Outcome, Pace};
use self::partition::Work;
use crate::config::{Flow, TopicDecision};
use crate::error::MirrorError;
use crate::progress::Progress;

/// Windows a sampled partition is read in ([`spans::sample`]).
const SAMPLE_WINDOWS: u64 = 8;
/// Bytes one fetch asks for.
const FETCH_BYTES: i32 = 4 << 20;

/// What to verify and how hard to read.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only this source topic.
    pub topic: Option<String>,
    /// These consumer groups (empty: every group the flow syncs, when it syncs offsets).
    pub groups: Vec<String>,
    /// Compare at most this many records per partition, in windows spread over its range.
    pub sample: Option<u64>,
    /// Partitions read at once (at least 1).
    pub parallel: usize,
    /// Bytes per second read from both clusters together (`None`: unbounded).
    pub bytes_per_sec: Option<u64>,
    /// Offsets to read on both sides, and read so far (for a progress display).
    pub progress: Option<Arc<Progress>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            topic: None,
            groups: Vec::new(),
            sample: None,
            parallel: 4,
            bytes_per_sec: None,
            progress: None,
        }
    }
}

/// One side of a partition: its bounds now and the replicated end the map records.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SideReport {
    /// First offset in the log.
    pub log_start: i64,
    /// The end a read_committed consumer reaches (last stable offset).
    pub end: i64,
    /// The map's replicated end on this side (`None`: no map).
    pub replicated: Option<u64>,
}

/// One partition's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionReport {
    /// Source topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Target topic.
    pub target_topic: String,
    /// The source side.
    pub source: SideReport,
    /// The target side.
    pub target: SideReport,
    /// Source offsets compared (`None`: nothing to compare).
    pub compared_source: Option<Range<u64>>,
    /// Target offsets compared.
    pub compared_target: Option<Range<u64>>,
    /// Whether only a sample was compared.
    pub sampled: bool,
    /// Source records past the replicated end (`None`: never replicated).
    pub lag: Option<u64>,
    /// Target records past the map's end: written, not yet recorded in the state topic.
    pub unrecorded: u64,
    /// Records of coarse history not compared because retention removed part of it.
    pub skipped: u64,
    /// The counts.
    pub tally: Tally,
    /// The differences, by offset (the first [`compare::MAX_NAMED`]).
    pub findings: Vec<Finding>,
    /// SHA-256 (first 16 bytes, hex) of the source records compared, in order.
    pub source_digest: String,
    /// The same over the target records compared; equal when the ranges match.
    pub target_digest: String,
    /// Something the reader should know (a target shorter than its map, compaction not
    /// known).
    pub notes: Vec<String>,
    /// The partition's outcome.
    pub outcome: Outcome,
}

/// One group's position on one partition.
#[derive(Debug, Clone, Serialize)]
pub struct GroupPosition {
    /// The group.
    pub group: String,
    /// Source topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Target topic.
    pub target_topic: String,
    /// The group's committed position on the source.
    pub source_offset: i64,
    /// The verdict ([`judge`]).
    #[serde(flatten)]
    pub verdict: GroupVerdict,
}

/// One flow's verification.
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// The flow.
    pub flow: String,
    /// Source cluster.
    pub source: String,
    /// Target cluster.
    pub target: String,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
    /// Per group and partition; `None` when the flow syncs no group offsets and none was
    /// asked for.
    pub groups: Option<Vec<GroupPosition>>,
    /// The flow's outcome: the worst of its partitions and group positions.
    pub outcome: Outcome,
}

/// Verifies `flow`: every partition it replicates (of [`Options::topic`]) and the group
/// positions it syncs. Errors are failed reads; differences are in the report.
pub async fn verify_flow(
    source: &Client,
    target: &Client,
    flow: &Flow,
    opts: &Options,
) -> Result<FlowReport, MirrorError> {
    compare(source, target, flow, opts)
        .await
        .map_err(|e| e.flow(&flow.name))
}

/// [`verify_flow`]'s work: the partitions compared and the group positions read.
async fn compare(
    source: &Client,
    target: &Client,
    flow: &Flow,
    opts: &Options,
) -> Result<FlowReport, MirrorError> {
    let maps = crate::state::load_maps(target, flow).await?;
    let topics = replicated_topics(source, flow, opts).await?;
    let pace = opts
        .bytes_per_sec
        .map(|r| Arc::new(Mutex::new(Pace::new(r, Instant::now()))));
    let permits = Arc::new(Semaphore::new(opts.parallel.max(1)));
    let mut tasks = JoinSet::new();
    for (topic, (target_topic, partitions)) in &topics {
        let work = Work::gather(source, target, topic, target_topic, partitions, &maps).await;
        for job in work? {
            let (source, target) = (source.clone(), target.clone());
            let (pace, permits, sample) = (pace.clone(), permits.clone(), opts.sample);
            let progress = opts.progress.clone();
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                job.run(&source, &target, sample, pace, progress).await
            });
        }
    }
    let mut partitions = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let report =
            done.map_err(|e| MirrorError::other(format!("a verify task failed: {e}")))??;
        partitions.push(report);
    }
    partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let groups = if flow.sync.group_offsets || !opts.groups.is_empty() {
        Some(groups::positions(source, target, flow, &maps, &topics, opts).await?)
    } else {
        None
    };
    let outcome = partitions
        .iter()
        .map(|p| p.outcome)
        .chain(groups.iter().flatten().map(|g| g.verdict.outcome()))
        .max()
        .unwrap_or(Outcome::Matches);
    Ok(FlowReport {
        flow: flow.name.clone(),
        source: flow.source.clone(),
        target: flow.target.clone(),
        partitions,
        groups,
        outcome,
    })
}

/// The source topics to compare (`opts.topic`, else every one the flow replicates), each
/// with its target topic and partitions. An error when `opts.topic` is not one of them.
async fn replicated_topics(
    source: &Client,
    flow: &Flow,
    opts: &Options,
) -> Result<BTreeMap<String, (String, Vec<i32>)>, MirrorError> {
    let meta = source
        .metadata(None)
        .await
        .map_err(|e| MirrorError::kafka("listing source topics", e).cluster(&flow.source))?;
    let mut topics: BTreeMap<String, (String, Vec<i32>)> = BTreeMap::new();
    for t in meta.topics.values() {
        if t.is_internal || opts.topic.as_ref().is_some_and(|x| *x != t.name) {
            continue;
        }
        if let TopicDecision::Replicate { target_topic } = flow.topic_decision(&t.name) {
            topics.insert(
                t.name.clone(),
                (target_topic, t.partitions.keys().copied().collect()),
            );
        }
    }
    if let Some(t) = &opts.topic
        && !topics.contains_key(t)
    {
        return Err(MirrorError::config(format!(
            "topic {t} is not on {} or not replicated by this flow",
            flow.source
        )));
    }
    Ok(topics)
}

#[cfg(test)]
mod tests;
