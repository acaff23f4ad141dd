//! Taking over from MirrorMaker 2 (`[flows.topics] start_position = "takeover"`): a new
//! partition whose target MM2 has been filling starts right after the last record MM2
//! copied, so nothing is copied twice and nothing is skipped. Rules ([`decide`], pure and
//! unit-tested; this file reads what they need):
//!
//! 1. **MM2 has stopped**: the target partitions are watched for [`QUIET`]; one whose end
//!    moves is still being written, and the flow refuses to start, naming it. (An MM2 that
//!    is running but idle is not seen: stop MM2 before the takeover.)
//! 2. **a hint**: the source offset of the target's last record is looked for where MM2's
//!    offset syncs (`mm2-offset-syncs.<target>.internal` on the source) put it, the newest
//!    sync at or below the record plus the distance from it; without syncs, at the first
//!    source offset at or after the record's timestamp;
//! 3. **proven by content**: the target's last [`TAIL_RECORDS`] records (key, value,
//!    headers, timestamp) must be found on the source within [`SEARCH`] offsets of the
//!    hint, in order, ending at one record; that record's successor is where replication
//!    starts, and the offset map starts there (positions before it are not translated:
//!    consumer-group offsets MM2 wrote on the target are kept, never moved back).
//!    A target partition never written starts at the source's start; anything that cannot
//!    be proven — no record left to compare, no match, several matches no sync tells
//!    apart — stops the flow with the partition named, before anything is written.
//!
//! A partition with saved state is not taken over again: it resumes from its map.

pub mod decide;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use strait_client::{Client, ConsumedRecord, FetchOptions, IsolationLevel, PartitionConsumer};

use self::decide::{Hint, OffsetSync, Proof, Start, Unproven};
use crate::config::Flow;
use crate::datapath::probe::{self, Bounds};
use crate::datapath::range::RangeReader;
use crate::error::MirrorError;
use crate::topics::ReplicatedTopic;

/// How long the target partitions are watched for a writer (rule 1).
pub const QUIET: Duration = Duration::from_secs(3);
/// The target's last records compared with the source (rule 3).
pub const TAIL_RECORDS: usize = 3;
/// Source offsets searched on each side of the hint (rule 3).
pub const SEARCH: i64 = 2_000;
/// Target offsets read back from its end to find its last records.
const TAIL_WINDOW: i64 = 1_000;
/// Offset-sync records read at most (the topic is compacted: one per partition and
/// recent syncs).
const MAX_SYNC_RECORDS: usize = 1_000_000;
/// Bytes one fetch of a takeover asks for.
const FETCH_BYTES: i32 = 4 << 20;

/// MM2's offset-syncs topic for a flow's target, on the source (MM2's default location).
pub fn offset_syncs_topic(flow: &Flow) -> String {
    format!("mm2-offset-syncs.{}.internal", flow.target)
}

/// What a flow's start gathers once for every partition it may take over: the target
/// ends before the watch (rule 1: one [`QUIET`] wait for all of them, not one per topic)
/// and MM2's offset syncs (rule 2: the topic read once).
#[derive(Debug, Default)]
pub struct Watch {
    /// Target end per (source topic, partition), read before the wait.
    before: BTreeMap<(String, i32), i64>,
    /// The newest offset syncs per source topic and partition.
    syncs: BTreeMap<String, BTreeMap<i32, VecDeque<OffsetSync>>>,
}

/// Offset syncs kept per partition: the newest (the target's last record is MM2's newest).
const KEEP_SYNCS: usize = 64;

/// Rule 1's first half for `topics` (each with the partitions that may be taken over):
/// reads their target ends, waits [`QUIET`] once when any was written, and reads MM2's
/// offset syncs for them.
pub async fn watch(
    source: &Client,
    target: &Client,
    flow: &Flow,
    topics: &[(ReplicatedTopic, Vec<i32>)],
) -> Result<Watch, MirrorError> {
    let mut w = Watch::default();
    for (t, partitions) in topics {
        if partitions.is_empty() {
            continue;
        }
        let ends = probe::bounds(
            target,
            &t.target_topic,
            partitions,
            IsolationLevel::ReadUncommitted,
        )
        .await
        .map_err(|e| {
            MirrorError::kafka("takeover: target bounds", e)
                .cluster(&flow.target)
                .topic(&t.target_topic)
        })?;
        for (p, b) in ends {
            w.before.insert((t.source_topic.clone(), p), b.end);
        }
    }
    if w.before.values().any(|end| *end > 0) {
        tokio::time::sleep(QUIET).await;
        let names: BTreeSet<&str> = topics
            .iter()
            .map(|(t, _)| t.source_topic.as_str())
            .collect();
        w.syncs = offset_syncs(source, flow, &names).await;
    }
    Ok(w)
}

/// Per partition of `new` (source and target bounds read after `watch`, none with saved
/// state): where replication starts, proven; or the error naming the first partition
/// that cannot be.
pub async fn starts(
    source: &Client,
    target: &Client,
    flow: &Flow,
    t: &ReplicatedTopic,
    new: &BTreeMap<i32, (Bounds, Bounds)>,
    watch: &Watch,
) -> Result<BTreeMap<i32, Start>, MirrorError> {
    let mut out = BTreeMap::new();
    for (p, found) in evaluate(source, target, t, new, watch).await? {
        match found {
            Ok(start) => {
                tracing::info!(flow = %flow.name, topic = %t.source_topic, partition = p,
                    source_next = start.source_next, proof = ?start.proof,
                    "takeover: replication continues after the last record MM2 copied");
                out.insert(p, start);
            }
            Err(why) => {
                return Err(MirrorError::refused(format!(
                    "takeover of {}-{p} (target {}-{p}): {why}",
                    t.source_topic, t.target_topic
                ))
                .topic(&t.source_topic)
                .partition(p));
            }
        }
    }
    Ok(out)
}

/// Rules 1 to 3 for every partition of `new`: its start, or why it cannot be proven
/// (`strait plan` shows both; [`starts`] refuses at the first that cannot). A written
/// partition `watch` did not see is refused as unwatched. Errors are the clusters' (a
/// failed read), not refusals.
pub async fn evaluate(
    source: &Client,
    target: &Client,
    t: &ReplicatedTopic,
    new: &BTreeMap<i32, (Bounds, Bounds)>,
    watch: &Watch,
) -> Result<BTreeMap<i32, Result<Start, Unproven>>, MirrorError> {
    let mut out = BTreeMap::new();
    for (p, (src, dst)) in new {
        let found = if dst.end <= 0 {
            Ok(Start {
                source_next: src.log_start,
                proof: Proof::EmptyTarget,
            })
        } else {
            let before = watch.before.get(&(t.source_topic.clone(), *p)).copied();
            // Not watched: a partition that appeared after the watch; it counts as moving.
            match decide::quiet(before, dst.end) {
                Err(why) => Err(why),
                Ok(()) => {
                    let syncs = watch.syncs.get(&t.source_topic).and_then(|s| s.get(p));
                    partition_start(source, target, t, *p, *src, *dst, syncs).await?
                }
            }
        };
        out.insert(*p, found);
    }
    Ok(out)
}

/// Rules 2 and 3 for one written target partition.
async fn partition_start(
    source: &Client,
    target: &Client,
    t: &ReplicatedTopic,
    p: i32,
    src: Bounds,
    dst: Bounds,
    syncs: Option<&VecDeque<OffsetSync>>,
) -> Result<Result<Start, Unproven>, MirrorError> {
    let kafka = |what: &str, cluster: &str, e| {
        MirrorError::kafka(format!("takeover: {what}"), e)
            .cluster(cluster)
            .partition(p)
    };
    let from = (dst.end - TAIL_WINDOW).max(dst.log_start);
    let mut tail = read(target, &t.target_topic, p, from, dst.end, true)
        .await
        .map_err(|e| kafka("reading the target's last records", "target", e))?;
    let keep = tail.len().saturating_sub(TAIL_RECORDS);
    tail.drain(..keep);
    let Some(last) = tail.last() else {
        return Ok(Err(Unproven::NothingToCompare { end: dst.end }));
    };
    let syncs: Vec<OffsetSync> = syncs
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    let hint = match decide::candidate_from_syncs(last.offset, &syncs) {
        Some(c) => Hint::OffsetSync(c),
        None => {
            let one = BTreeMap::from([(p, src)]);
            let found = crate::replay::lookup::offsets_for_time(
                source,
                &t.source_topic,
                &one,
                last.timestamp,
            )
            .await?;
            match found.get(&p).map(|f| f.offset) {
                Some(crate::replay::decide::TimeOffset::At(o)) => Hint::Timestamp(o),
                _ => Hint::Timestamp(src.end),
            }
        }
    };
    let at = match hint {
        Hint::OffsetSync(o) | Hint::Timestamp(o) => o,
    };
    let range = (
        (at - SEARCH).max(src.log_start),
        (at + SEARCH + 1).min(src.end),
    );
    let records = read(source, &t.source_topic, p, range.0, range.1, false)
        .await
        .map_err(|e| kafka("reading the source around the hint", "source", e))?;
    Ok(decide::prove(&tail, &records, hint, range))
}

/// The data records of offsets `from..to` (all of them, aborted ones included, unless
/// `committed`: then as a read_committed consumer sees them).
async fn read(
    client: &Client,
    topic: &str,
    partition: i32,
    from: i64,
    to: i64,
    committed: bool,
) -> Result<Vec<ConsumedRecord>, strait_client::Error> {
    let opts = FetchOptions {
        max_wait: Duration::from_millis(100),
        max_bytes: FETCH_BYTES,
        ..FetchOptions::default()
    };
    let mut reader = RangeReader::new(client, topic, partition, to, opts);
    if committed {
        reader = reader.resolving_markers();
    }
    reader.range(from..to).await
}

/// MM2's newest offset syncs of the `topics`, per topic and partition; empty when the
/// syncs topic is not there or cannot be read (the timestamp hint is used instead: a hint
/// only points the search).
async fn offset_syncs(
    source: &Client,
    flow: &Flow,
    topics: &BTreeSet<&str>,
) -> BTreeMap<String, BTreeMap<i32, VecDeque<OffsetSync>>> {
    let name = offset_syncs_topic(flow);
    let mut out: BTreeMap<String, BTreeMap<i32, VecDeque<OffsetSync>>> = BTreeMap::new();
    let Ok(meta) = source.metadata(Some(&[name.as_str()])).await else {
        return out;
    };
    let partitions: Vec<i32> = match meta.topics.get(&name) {
        Some(t) => t.partitions.keys().copied().collect(),
        None => return out,
    };
    let Ok(bounds) =
        probe::bounds(source, &name, &partitions, IsolationLevel::ReadUncommitted).await
    else {
        return out;
    };
    let opts = FetchOptions {
        max_wait: Duration::from_millis(100),
        max_bytes: FETCH_BYTES,
        ..FetchOptions::default()
    };
    let mut read_so_far = 0usize;
    for (p, b) in bounds {
        let mut consumer =
            PartitionConsumer::new(source.clone(), &name, p, b.log_start).with_options(opts);
        while consumer.position() < b.end && read_so_far < MAX_SYNC_RECORDS {
            let Ok(records) = consumer.poll().await else {
                tracing::warn!(flow = %flow.name, topic = %name, partition = p,
                    "takeover: MM2's offset syncs cannot be read; searching by timestamp");
                break;
            };
            if records.is_empty() {
                break;
            }
            read_so_far += records.len();
            for r in records {
                let (Some(k), Some(v)) = (&r.key, &r.value) else {
                    continue;
                };
                match decide::decode_offset_sync(k, v) {
                    Ok((t, part, sync)) if topics.contains(t.as_str()) => {
                        let kept = out.entry(t).or_default().entry(part).or_default();
                        if kept.len() == KEEP_SYNCS {
                            kept.pop_front();
                        }
                        kept.push_back(sync);
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(flow = %flow.name, topic = %name,
                        offset = r.offset, error = %e,
                        "takeover: an offset sync that does not decode is ignored"),
                }
            }
        }
    }
    out
}

/// One partition in `strait plan`'s takeover section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Source topic.
    pub topic: String,
    /// Target topic.
    pub target_topic: String,
    /// Partition.
    pub partition: i32,
    /// It has saved state: it resumes from its map, no takeover.
    pub resumes: bool,
    /// Where it would start, or why it cannot be proven; `None` when it resumes, or a
    /// side did not report the partition's bounds.
    pub outcome: Option<Result<Start, Unproven>>,
}

/// What `start_position = "takeover"` would do now for every partition of `replicate`
/// (source topic, target topic, partitions on both sides): read-only, the same rules as a
/// run (with rule 1's watch).
pub async fn plan(
    source: &Client,
    target: &Client,
    flow: &Flow,
    replicate: &[(String, String, i32)],
) -> Result<Vec<Planned>, MirrorError> {
    let saved = crate::state::load_maps(target, flow).await?;
    let mut topics = Vec::new();
    let mut bounds = Vec::new();
    for (topic, target_topic, partitions) in replicate {
        let parts: Vec<i32> = (0..*partitions).collect();
        let t = ReplicatedTopic {
            source_topic: topic.clone(),
            target_topic: target_topic.clone(),
            topic_id: uuid::Uuid::nil(),
            partitions: *partitions,
        };
        let new: Vec<i32> = parts
            .iter()
            .copied()
            .filter(|p| saved.reader(topic, *p).is_none())
            .collect();
        topics.push((t, new));
    }
    let watched = watch(source, target, flow, &topics).await?;
    for (t, new) in &topics {
        let src = probe::bounds(source, &t.source_topic, new, IsolationLevel::ReadCommitted)
            .await
            .map_err(|e| MirrorError::kafka("takeover plan: source bounds", e))?;
        let dst = probe::bounds(
            target,
            &t.target_topic,
            new,
            IsolationLevel::ReadUncommitted,
        )
        .await
        .map_err(|e| MirrorError::kafka("takeover plan: target bounds", e))?;
        let new: BTreeMap<i32, (Bounds, Bounds)> = new
            .iter()
            .filter_map(|p| Some((*p, (*src.get(p)?, *dst.get(p)?))))
            .collect();
        bounds.push(evaluate(source, target, t, &new, &watched).await?);
    }
    let mut out = Vec::new();
    for ((t, _), mut found) in topics.iter().zip(bounds) {
        for p in 0..t.partitions {
            out.push(Planned {
                topic: t.source_topic.clone(),
                target_topic: t.target_topic.clone(),
                partition: p,
                resumes: saved.reader(&t.source_topic, p).is_some(),
                outcome: found.remove(&p),
            });
        }
    }
    Ok(out)
}
