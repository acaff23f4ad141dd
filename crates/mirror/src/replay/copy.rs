//! Executing a prepared replay: each partition's range is fetched, planned by the flow's
//! [`Planner`](crate::datapath::plan::Planner) (started at the range's first offset, so the first batch is cut there),
//! cut at the range's end ([`decide::cut`]) and produced with the `IdempotentProducer`
//! (whole batches forwarded with their header patched, never re-encoded); each
//! acknowledgement goes into the replay's own map, which is saved to the flow's state
//! topic under the replay's key. Partitions are copied one after another, with up to the
//! producer's window of batches in flight; `partition` is the copy of one partition.

mod partition;

use std::time::Duration;

use strait_client::{Client, IdempotentProducer, IsolationLevel, NewTopic, ProducerConfig};
use strait_offsets::{OffsetMap, Side};
use strait_records::Limits;

use super::decide::{self, Resume, RunDecision};
use super::{PartitionPlan, Prepared};
use crate::config::Flow;
use crate::datapath::probe;
use crate::datapath::recovery::Recovery;
use crate::datapath::tail;
use crate::error::MirrorError;
use crate::progress::Progress;
use crate::state::replay::{encode_replay_key, encode_replay_value};
use crate::state::{ReplayKey, ReplayState, ReplayStatus, StateWriter};
use partition::Copier;

/// Kafka's TOPIC_ALREADY_EXISTS.
const TOPIC_ALREADY_EXISTS: i16 = 36;
/// How long the copy waits at the end of the log for the marker of a transaction its
/// range ends in before giving up.
const MARKER_WAIT: Duration = Duration::from_secs(30);
/// Bytes fetched per request.
const FETCH_BYTES: i32 = 4 << 20;

/// What one partition of a replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSummary {
    /// The partition.
    pub partition: i32,
    /// First source offset of the range.
    pub source_start: i64,
    /// Source offset the range ends before.
    pub source_end: i64,
    /// Records this execution wrote to the target.
    pub records: u64,
    /// Records found already on the target when an interrupted run resumed (matched by
    /// content, not written again).
    pub already_there: u64,
    /// Target offsets of the partition's replayed records (of the whole run, also what
    /// an interrupted execution copied): the first, and the one after the last (`None`:
    /// nothing in the range).
    pub target: Option<(u64, u64)>,
    /// The partition was done before this execution (a resume).
    pub was_done: bool,
}

/// What a replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The replay's id.
    pub id: String,
    /// The run written.
    pub run: u32,
    /// Whether the target topic was created.
    pub created_target: bool,
    /// Per partition.
    pub partitions: Vec<PartitionSummary>,
}

/// Copies the ranges of `prepared` (which [`super::prepare`] made for `flow`) to the
/// target and saves the replay's maps. Refused replays are an error.
pub async fn execute(
    source: &Client,
    target: &Client,
    flow: &Flow,
    prepared: &Prepared,
    producer_config: ProducerConfig,
    progress: &Progress,
) -> Result<Summary, MirrorError> {
    copy_ranges(source, target, flow, prepared, producer_config, progress)
        .await
        .map_err(|e| e.flow(&flow.name))
}

/// [`execute`]'s work.
async fn copy_ranges(
    source: &Client,
    target: &Client,
    flow: &Flow,
    prepared: &Prepared,
    producer_config: ProducerConfig,
    progress: &Progress,
) -> Result<Summary, MirrorError> {
    let run = run_of(prepared)?;
    let topic = &prepared.spec.target_topic;
    let created_target = prepared.target_partitions.is_none();
    if created_target {
        create_target(target, flow, topic, prepared.partitions.len() as i32).await?;
    }
    let limits = Limits::default();
    let mut jobs = jobs(target, prepared, &limits).await?;
    let mut writer = StateWriter::new(target.clone(), flow).with_producer_config(producer_config);
    // Every partition is saved before the first record is copied: an interruption at
    // any point leaves a run that resumes.
    let mut first: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for j in &mut jobs {
        let status = j.status();
        first.push(record(prepared, run, j.plan, &mut j.map, status));
    }
    writer.write_encoded(first).await?;
    tracing::info!(flow = %flow.name, replay = %prepared.id, run, source = %prepared.spec.source_topic,
        target = %topic, "replay: copying {} source offsets", prepared.source_records());
    let producer = IdempotentProducer::new(target.clone(), producer_config)
        .await
        .map_err(|e| MirrorError::kafka("InitProducerId", e).cluster(&flow.target))?;
    let max_batch_bytes = crate::datapath::probe::max_message_bytes(target, topic).await;
    for j in &jobs {
        let (start, end) = (j.plan.start.max(0) as u64, j.plan.end.max(0) as u64);
        progress.add_total(end.saturating_sub(start));
        progress.add_done(j.map.next(Side::Source).clamp(start, end) - start);
    }
    let copier = Copier {
        progress,
        source,
        producer: &producer,
        prepared,
        run,
        max_batch_bytes,
        window: producer_config.max_in_flight,
        checkpoint: flow.intervals.checkpoint,
        limits,
    };
    let out = copy_each(&copier, jobs, &mut writer, flow).await?;
    Ok(Summary {
        id: prepared.id.clone(),
        run,
        created_target,
        partitions: out,
    })
}

/// The run `prepared` copies; an error when it was already copied.
fn run_of(prepared: &Prepared) -> Result<u32, MirrorError> {
    match prepared.decision {
        RunDecision::Start { run } | RunDecision::Resume { run } => Ok(run),
        RunDecision::AlreadyDone { run } => Err(MirrorError::config(format!(
            "replay {} was already copied (run {run}); --again copies it once more",
            prepared.id
        ))),
    }
}

/// Every partition of `prepared` to copy, from the target partitions' bounds.
async fn jobs<'a>(
    target: &Client,
    prepared: &'a Prepared,
    limits: &Limits,
) -> Result<Vec<Job<'a>>, MirrorError> {
    let topic = &prepared.spec.target_topic;
    let partitions: Vec<i32> = prepared.partitions.iter().map(|p| p.partition).collect();
    let target_bounds = probe::bounds(target, topic, &partitions, IsolationLevel::ReadUncommitted)
        .await
        .map_err(|e| MirrorError::kafka("target partition ends", e).topic(topic))?;
    let mut jobs = Vec::new();
    for plan in &prepared.partitions {
        let Some(b) = target_bounds.get(&plan.partition).copied() else {
            return Err(MirrorError::other(format!(
                "no end for target partition {topic}/{}",
                plan.partition
            )));
        };
        jobs.push(job(target, topic, plan, b, limits).await?);
    }
    Ok(jobs)
}

/// Copies the partitions one after another; on a failure, saves what the failed one had
/// acknowledged before returning the error.
async fn copy_each(
    copier: &Copier<'_>,
    jobs: Vec<Job<'_>>,
    writer: &mut StateWriter,
    flow: &Flow,
) -> Result<Vec<PartitionSummary>, MirrorError> {
    let (prepared, run) = (copier.prepared, copier.run);
    let mut out = Vec::new();
    for mut j in jobs {
        let copied = copier.copy(&mut j, writer).await;
        let summary = match copied {
            Ok(s) => s,
            Err(e) => {
                // What was acknowledged is kept, so a run again resumes there (what landed
                // after it is matched by content then).
                let status = j.status();
                let saved = record(prepared, run, j.plan, &mut j.map, status);
                if let Err(w) = writer.write_encoded(vec![saved]).await {
                    tracing::warn!(flow = %flow.name, replay = %prepared.id, error = %w,
                        "replay: saving the progress after a failure");
                }
                return Err(e.topic(&prepared.spec.source_topic));
            }
        };
        tracing::info!(flow = %flow.name, replay = %prepared.id, run,
            partition = summary.partition, records = summary.records,
            source_start = summary.source_start, source_end = summary.source_end,
            target = ?summary.target, "replay: partition done");
        out.push(summary);
    }
    Ok(out)
}

/// One partition to copy.
struct Job<'a> {
    plan: &'a PartitionPlan,
    map: OffsetMap,
    recovery: Recovery,
    done: bool,
}

impl Job<'_> {
    fn status(&self) -> ReplayStatus {
        if self.done {
            ReplayStatus::Done
        } else {
            ReplayStatus::Copying
        }
    }
}

/// The map a partition starts from and what the target must be checked for (rules
/// 14–17 on a resume).
async fn job<'a>(
    target: &Client,
    topic: &str,
    plan: &'a PartitionPlan,
    bounds: probe::Bounds,
    limits: &Limits,
) -> Result<Job<'a>, MirrorError> {
    let topic_ctx = |e: MirrorError| e.partition(plan.partition);
    let Some((map, done)) = &plan.saved else {
        let mut map = OffsetMap::new();
        map.advance(plan.start.max(0) as u64, bounds.end.max(0) as u64)
            .map_err(|e| topic_ctx(MirrorError::offset_map(e)))?;
        return Ok(Job {
            plan,
            map,
            recovery: Recovery::none(),
            done: plan.start >= plan.end,
        });
    };
    let map = map.clone();
    let recovery = match decide::resume(*done, map.next(Side::Target) as i64, bounds.end) {
        Resume::Done | Resume::Continue => Recovery::none(),
        Resume::Check { from, end } => {
            let batches = tail::read_tail(
                target,
                topic,
                plan.partition,
                (from - tail::LOOKBACK).max(bounds.log_start),
                end,
                limits,
            )
            .await?;
            Recovery::from_target(&batches, from as u64, end as u64, *limits).map_err(|e| {
                topic_ctx(MirrorError::records(
                    "replay resume: decoding the target",
                    e,
                ))
            })?
        }
        Resume::TargetShorter { expected, end } => {
            return Err(topic_ctx(MirrorError::state(format!(
                "the replay's map points at target offset {expected}, the target partition \
                 ends at {end}: records it copied are gone; run it again with --again"
            ))));
        }
    };
    Ok(Job {
        plan,
        map,
        recovery,
        done: *done,
    })
}

/// The replay record of `plan` as it stands.
fn record(
    prepared: &Prepared,
    run: u32,
    plan: &PartitionPlan,
    map: &mut OffsetMap,
    status: ReplayStatus,
) -> (Vec<u8>, Vec<u8>) {
    let key = ReplayKey {
        id: prepared.id.clone(),
        run,
        partition: plan.partition,
    };
    let state = ReplayState {
        status,
        topic_id: prepared.topic_id,
        source_topic: prepared.spec.source_topic.clone(),
        target_topic: prepared.spec.target_topic.clone(),
        from_ms: prepared.spec.from_ms,
        until_ms: prepared.spec.until_ms,
        start: plan.start,
        end: plan.end,
        partitions: prepared.partitions.len() as u32,
        snapshot: map.snapshot().bytes,
    };
    (encode_replay_key(&key), encode_replay_value(&state))
}

/// Creates the replay's target topic with the source's partition count (and the flow's
/// replication factor). Configs are not copied: the flow's topic sync does that for the
/// topics it replicates.
async fn create_target(
    target: &Client,
    flow: &Flow,
    topic: &str,
    partitions: i32,
) -> Result<(), MirrorError> {
    let mut new = NewTopic::new(topic, partitions);
    if let Some(rf) = flow.replication_factor {
        new = new.with_replication_factor(rf);
    }
    let err =
        |e| MirrorError::kafka(format!("create the target topic {topic}"), e).cluster(&flow.target);
    let results = target
        .create_topics(&[new], Duration::from_secs(30))
        .await
        .map_err(err)?;
    for (_, r) in results {
        match r {
            Ok(()) => tracing::info!(flow = %flow.name, topic, partitions,
                "replay: created the target topic"),
            Err(e) if e.kafka_code() == Some(TOPIC_ALREADY_EXISTS) => {}
            Err(e) => return Err(err(e)),
        }
    }
    // The new topic's leaders may take a moment to be known.
    for _ in 0..50 {
        target.invalidate_metadata();
        let meta = target.metadata(Some(&[topic])).await.map_err(err)?;
        if meta
            .topics
            .get(topic)
            .is_some_and(|t| t.partitions.len() as i32 >= partitions)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(MirrorError::other(format!(
        "the target topic {topic} was created but its partitions did not appear"
    )))
}
