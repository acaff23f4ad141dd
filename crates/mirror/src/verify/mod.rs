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
//! - [`compare`]: the pure rules for one partition (findings by offset);
//! - [`judge`]: the pure verdicts (group positions, outcomes) and the bandwidth pace;
//! - `groups.rs`: each group position read, translated and proven;
//! - this file: the reads that feed them, partitions in parallel ([`Options::parallel`])
//!   under one bandwidth limit ([`Options::bytes_per_sec`]), or a sample of each
//!   partition ([`Options::sample`]) for huge topics.

pub mod compare;
pub mod content;
mod groups;
pub mod judge;
pub mod spans;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use strait_client::{Client, FetchOptions, IsolationLevel};
use strait_offsets::{OffsetMap, Registry, Side};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use self::compare::{Compared, Comparer, Finding, Tally};
use self::content::{Content, Seen};
use self::judge::{GroupVerdict, Outcome, Pace};
use self::spans::{Span, Spans};
use crate::config::{Flow, TopicDecision};
use crate::datapath::probe::{self, Bounds};
use crate::datapath::range::RangeReader;
use crate::error::MirrorError;
use crate::progress::Progress;

/// Windows a sampled partition is read in ([`compare::sample`]).
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

/// One partition to compare, with everything read before its records.
struct Work {
    topic: String,
    target_topic: String,
    partition: i32,
    source: Bounds,
    target: Bounds,
    map: Option<OffsetMap>,
    compacted: Option<bool>,
}

impl Work {
    /// The partitions of one topic: bounds on both sides, the maps, the cleanup policy.
    async fn gather(
        source: &Client,
        target: &Client,
        topic: &str,
        target_topic: &str,
        partitions: &[i32],
        maps: &Registry,
    ) -> Result<Vec<Work>, MirrorError> {
        let committed = IsolationLevel::ReadCommitted;
        let src = probe::bounds(source, topic, partitions, committed)
            .await
            .map_err(|e| MirrorError::kafka("source bounds", e).topic(topic))?;
        let dst = probe::bounds(target, target_topic, partitions, committed)
            .await
            .map_err(|e| MirrorError::kafka("target bounds", e).topic(target_topic))?;
        let compacted = compacted(source, topic).await;
        let mut out = Vec::new();
        for p in partitions {
            let (Some(s), Some(t)) = (src.get(p), dst.get(p)) else {
                continue;
            };
            out.push(Work {
                topic: topic.to_owned(),
                target_topic: target_topic.to_owned(),
                partition: *p,
                source: *s,
                target: *t,
                map: maps.reader(topic, *p).map(|r| r.read(OffsetMap::clone)),
                compacted,
            });
        }
        Ok(out)
    }

    /// Reads and compares the partition.
    async fn run(
        self,
        source: &Client,
        target: &Client,
        sample: Option<u64>,
        pace: Option<Arc<Mutex<Pace>>>,
        progress: Option<Arc<Progress>>,
    ) -> Result<PartitionReport, MirrorError> {
        let at = |e: strait_client::Error, what: &str| {
            MirrorError::kafka(format!("reading the {what}"), e)
                .topic(&self.topic)
                .partition(self.partition)
        };
        let offset = |o: i64| u64::try_from(o).unwrap_or(0);
        let side = |b: Bounds, map: Option<&OffsetMap>, s: Side| SideReport {
            log_start: b.log_start,
            end: b.end,
            replicated: map.map(|m| m.next(s)),
        };
        let mut report = PartitionReport {
            topic: self.topic.clone(),
            partition: self.partition,
            target_topic: self.target_topic.clone(),
            source: side(self.source, self.map.as_ref(), Side::Source),
            target: side(self.target, self.map.as_ref(), Side::Target),
            compared_source: None,
            compared_target: None,
            sampled: false,
            lag: None,
            unrecorded: 0,
            skipped: 0,
            tally: Tally::default(),
            findings: Vec::new(),
            source_digest: String::new(),
            target_digest: String::new(),
            notes: Vec::new(),
            outcome: Outcome::NotYetReplicated,
        };
        let Some(map) = &self.map else {
            report.notes.push("never replicated: no offset map".into());
            return Ok(report);
        };
        let (source_next, target_next) = (map.next(Side::Source), map.next(Side::Target));
        report.lag = Some(offset(self.source.end).saturating_sub(source_next));
        report.unrecorded = offset(self.target.end).saturating_sub(target_next);
        if offset(self.target.end) < target_next {
            report.notes.push(format!(
                "the target ends at {}, before {target_next}, where the map says records were \
                 written: records it acknowledged are gone",
                self.target.end
            ));
        }
        if offset(self.source.end) < source_next {
            report.notes.push(format!(
                "the source ends at {}, before {source_next}, where replication had read: the \
                 source lost records",
                self.source.end
            ));
        }
        let compacted = self.compacted.unwrap_or_else(|| {
            report.notes.push(
                "the source topic's cleanup.policy could not be read: compared as not compacted"
                    .into(),
            );
            false
        });
        let all = spans::spans(
            map,
            [offset(self.source.log_start), offset(self.target.log_start)],
        );
        let spans: Spans = match sample {
            Some(n) => {
                let s = spans::sample(&all, n, SAMPLE_WINDOWS);
                report.sampled = s != all;
                s
            }
            None => all,
        };
        report.skipped = spans.skipped;
        if !spans.spans.is_empty() {
            report.compared_source = Some(spans.source_range());
            report.compared_target = Some(spans.target_range());
        }
        let mut src = Reader::new(source, &self.topic, self.partition, self.source.end, &pace);
        let mut dst = Reader::new(
            target,
            &self.target_topic,
            self.partition,
            self.target.end,
            &pace,
        );
        let width = |r: Range<u64>| r.end.saturating_sub(r.start);
        let count = |n: u64, total: bool| {
            if let Some(p) = &progress {
                if total { p.add_total(n) } else { p.add_done(n) }
            }
        };
        count(
            spans
                .spans
                .iter()
                .map(|s| width(s.source()) + width(s.target()))
                .sum(),
            true,
        );
        let mut cmp = Comparer::new(compacted);
        for span in &spans.spans {
            count(width(span.source()) + width(span.target()), false);
            if let Span::Coarse { .. } = span {
                let (s, t) = (span.source(), span.target());
                let mut a = s.start;
                let mut b = t.start;
                while a < s.end || b < t.end {
                    let (ae, be) = (
                        (a + spans::WINDOW).min(s.end),
                        (b + spans::WINDOW).min(t.end),
                    );
                    let x = src.range(a..ae).await.map_err(|e| at(e, "source"))?;
                    let y = dst.range(b..be).await.map_err(|e| at(e, "target"))?;
                    cmp.coarse(&x, &y);
                    (a, b) = (ae, be);
                }
                cmp.coarse_done(span);
            } else {
                let x = src
                    .range(span.source())
                    .await
                    .map_err(|e| at(e, "source"))?;
                let y = dst
                    .range(span.target())
                    .await
                    .map_err(|e| at(e, "target"))?;
                cmp.span(span, &x, &y);
            }
        }
        if compacted && !report.sampled {
            let x = src
                .range(source_next..offset(self.source.end))
                .await
                .map_err(|e| at(e, "source"))?;
            cmp.later(Side::Source, &x);
            let y = dst
                .range(target_next..offset(self.target.end))
                .await
                .map_err(|e| at(e, "target"))?;
            cmp.later(Side::Target, &y);
        }
        let Compared {
            tally,
            findings,
            source_digest,
            target_digest,
        } = cmp.finish();
        let clean = tally.clean() && report.skipped == 0 && report.notes.is_empty();
        report.outcome = judge::partition_outcome(clean, report.lag);
        report.tally = tally;
        report.findings = findings;
        report.source_digest = source_digest;
        report.target_digest = target_digest;
        Ok(report)
    }
}

/// Whether `topic`'s `cleanup.policy` includes `compact` (`None`: it could not be read).
async fn compacted(source: &Client, topic: &str) -> Option<bool> {
    let configs = source
        .describe_configs(
            strait_client::ResourceType::Topic,
            &[topic],
            Some(&["cleanup.policy"]),
        )
        .await
        .ok()?;
    let policy = configs
        .iter()
        .flat_map(|c| &c.entries)
        .find(|e| e.name == "cleanup.policy")
        .and_then(|e| e.value.clone())
        .unwrap_or_default();
    Some(policy.split(',').any(|p| p.trim() == "compact"))
}

/// One side of a partition, read range after range as [`Seen`] records.
struct Reader(RangeReader);

impl Reader {
    fn new(
        client: &Client,
        topic: &str,
        partition: i32,
        end: i64,
        pace: &Option<Arc<Mutex<Pace>>>,
    ) -> Self {
        let opts = FetchOptions {
            max_wait: Duration::from_millis(100),
            max_bytes: FETCH_BYTES,
            isolation: IsolationLevel::ReadCommitted,
            ..FetchOptions::default()
        };
        let mut reader = RangeReader::new(client, topic, partition, end, opts);
        if let Some(pace) = pace.clone() {
            reader = reader.paced(Box::new(move |bytes| {
                pace.lock()
                    .map(|mut p| p.take(Instant::now(), bytes))
                    .unwrap_or_default()
            }));
        }
        Reader(reader)
    }

    /// The records at offsets `r`.
    async fn range(&mut self, r: Range<u64>) -> Result<Vec<Seen>, strait_client::Error> {
        let at = |o: u64| i64::try_from(o).unwrap_or(i64::MAX);
        let records = self.0.range(at(r.start)..at(r.end)).await?;
        Ok(records
            .iter()
            .filter_map(|rec| {
                Some(Seen {
                    offset: u64::try_from(rec.offset).ok()?,
                    content: Content::of(rec),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests;
