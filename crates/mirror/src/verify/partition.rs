//! One partition of a verify run: its bounds on both sides and its offset map gathered,
//! then both logs read over the spans the map covers and compared record by record.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strait_client::{Client, FetchOptions, IsolationLevel};
use strait_offsets::{OffsetMap, Registry, Side};

use super::compare::{Compared, Comparer};
use super::content::{Content, Seen};
use super::judge::{self, Outcome, Pace};
use super::spans::{self, Span, Spans};
use super::{FETCH_BYTES, PartitionReport, SAMPLE_WINDOWS, SideReport, Tally};
use crate::datapath::probe::{self, Bounds};
use crate::datapath::range::RangeReader;
use crate::error::MirrorError;
use crate::progress::Progress;

/// One partition to compare, with everything read before its records.
pub(super) struct Work {
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
    pub(super) async fn gather(
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
    pub(super) async fn run(
        self,
        source: &Client,
        target: &Client,
        sample: Option<u64>,
        pace: Option<Arc<Mutex<Pace>>>,
        progress: Option<Arc<Progress>>,
    ) -> Result<PartitionReport, MirrorError> {
        let mut report = self.blank_report();
        let Some(map) = &self.map else {
            report.notes.push("never replicated: no offset map".into());
            return Ok(report);
        };
        let (source_next, target_next) = (map.next(Side::Source), map.next(Side::Target));
        self.note_ends(&mut report, source_next, target_next);
        let compacted = self.compacted_or_noted(&mut report);
        let spans = self.spans_to_compare(map, sample, &mut report);
        let mut src = Reader::new(source, &self.topic, self.partition, self.source.end, &pace);
        let mut dst = Reader::new(
            target,
            &self.target_topic,
            self.partition,
            self.target.end,
            &pace,
        );
        let count = |n: u64, total: bool| {
            if let Some(p) = &progress {
                if total { p.add_total(n) } else { p.add_done(n) }
            }
        };
        count(spans.spans.iter().map(span_width).sum(), true);
        let mut cmp = Comparer::new(compacted);
        for span in &spans.spans {
            count(span_width(span), false);
            self.compare_span(span, (&mut src, &mut dst), &mut cmp)
                .await?;
        }
        if compacted && !report.sampled {
            let next = (source_next, target_next);
            self.compare_later(next, (&mut src, &mut dst), &mut cmp)
                .await?;
        }
        Ok(judged(report, cmp.finish()))
    }

    /// The partition's report before anything is compared: its bounds and what the map
    /// says was replicated, judged not yet replicated.
    fn blank_report(&self) -> PartitionReport {
        let side = |b: Bounds, map: Option<&OffsetMap>, s: Side| SideReport {
            log_start: b.log_start,
            end: b.end,
            replicated: map.map(|m| m.next(s)),
        };
        PartitionReport {
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
        }
    }

    /// Fills in the lag and the unrecorded records, and notes a log that ends before
    /// where the map says it was read or written.
    fn note_ends(&self, report: &mut PartitionReport, source_next: u64, target_next: u64) {
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
    }

    /// Whether the source topic is compacted; when its policy could not be read, not
    /// compacted, and noted in the report.
    fn compacted_or_noted(&self, report: &mut PartitionReport) -> bool {
        self.compacted.unwrap_or_else(|| {
            report.notes.push(
                "the source topic's cleanup.policy could not be read: compared as not compacted"
                    .into(),
            );
            false
        })
    }

    /// The spans of `map` to compare (all of them, or a sample), noted in the report.
    fn spans_to_compare(
        &self,
        map: &OffsetMap,
        sample: Option<u64>,
        report: &mut PartitionReport,
    ) -> Spans {
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
        spans
    }

    /// Reads one span on both sides and compares it (a coarse span window by window).
    async fn compare_span(
        &self,
        span: &Span,
        (src, dst): (&mut Reader, &mut Reader),
        cmp: &mut Comparer,
    ) -> Result<(), MirrorError> {
        if let Span::Coarse { .. } = span {
            let (s, t) = (span.source(), span.target());
            let mut a = s.start;
            let mut b = t.start;
            while a < s.end || b < t.end {
                let (ae, be) = (
                    (a + spans::WINDOW).min(s.end),
                    (b + spans::WINDOW).min(t.end),
                );
                let x = src
                    .range(a..ae)
                    .await
                    .map_err(|e| self.read_error(e, "source"))?;
                let y = dst
                    .range(b..be)
                    .await
                    .map_err(|e| self.read_error(e, "target"))?;
                cmp.coarse(&x, &y);
                (a, b) = (ae, be);
            }
            cmp.coarse_done(span);
        } else {
            let x = src
                .range(span.source())
                .await
                .map_err(|e| self.read_error(e, "source"))?;
            let y = dst
                .range(span.target())
                .await
                .map_err(|e| self.read_error(e, "target"))?;
            cmp.span(span, &x, &y);
        }
        Ok(())
    }

    /// Reads both logs past the map's end (source from `next.0`, target from `next.1`)
    /// and hands them to the comparer: on a compacted topic they are compared too.
    async fn compare_later(
        &self,
        (source_next, target_next): (u64, u64),
        (src, dst): (&mut Reader, &mut Reader),
        cmp: &mut Comparer,
    ) -> Result<(), MirrorError> {
        let x = src
            .range(source_next..offset(self.source.end))
            .await
            .map_err(|e| self.read_error(e, "source"))?;
        cmp.later(Side::Source, &x);
        let y = dst
            .range(target_next..offset(self.target.end))
            .await
            .map_err(|e| self.read_error(e, "target"))?;
        cmp.later(Side::Target, &y);
        Ok(())
    }

    /// A failed read of one side (`what`) of the partition.
    fn read_error(&self, e: strait_client::Error, what: &str) -> MirrorError {
        MirrorError::kafka(format!("reading the {what}"), e)
            .topic(&self.topic)
            .partition(self.partition)
    }
}

/// `report` completed with what the comparer found, and judged.
fn judged(mut report: PartitionReport, compared: Compared) -> PartitionReport {
    let Compared {
        tally,
        findings,
        source_digest,
        target_digest,
    } = compared;
    let clean = tally.clean() && report.skipped == 0 && report.notes.is_empty();
    report.outcome = judge::partition_outcome(clean, report.lag);
    report.tally = tally;
    report.findings = findings;
    report.source_digest = source_digest;
    report.target_digest = target_digest;
    report
}

/// An offset as read from a log; a negative one (none) counts as 0.
fn offset(o: i64) -> u64 {
    u64::try_from(o).unwrap_or(0)
}

/// Offsets a span covers on both sides together.
fn span_width(span: &Span) -> u64 {
    let width = |r: Range<u64>| r.end.saturating_sub(r.start);
    width(span.source()) + width(span.target())
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
