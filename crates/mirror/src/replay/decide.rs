//! The decisions of a replay, pure (no I/O); each rule is tested by name.
//!
//! **Range** ([`range`]):
//! 1. *A partition's range is `[first offset at or after --from, first offset at or after
//!    --until)`*, Kafka's ListOffsets-by-time semantics on both ends; no record that
//!    recent is the end of the log; without `--until` the range ends at the end of the
//!    log when the run starts (the last stable offset).
//! 2. *The range is clamped to the log* (`log start..end`); a range that ends before it
//!    starts is empty.
//!
//! **Time lookup fallback** ([`TimeSearch`], used only when the broker's own ListOffsets
//! by time is proven wrong, as on Tansu 0.6):
//! 3. *A batch whose maxTimestamp is before the time holds no record of the range*: the
//!    search moves past it.
//! 4. *A batch whose maxTimestamp is at or after it bounds the answer*: its first record
//!    at or after the time is a candidate, and the search looks before the batch.
//! 5. *The search ends when its bounds meet*; the answer is the earliest candidate, or the
//!    end of the log.
//! 6. *A transaction marker is not a record of the range*: its batch is passed over like
//!    rule 3 whatever its timestamp (set by the transaction coordinator's clock, not the
//!    producer's). Each probe halves the bounds, so it takes at most 64 fetches. It
//!    assumes timestamps do not decrease along the log (CreateTime set by producers can;
//!    then the answer is a record at or after the time whose batches before all end
//!    before it, which is not necessarily the first).
//!
//! **Cut** ([`cut`]): the planner ([`crate::datapath::plan::Planner`], started at the
//! range's first offset) already leaves out the records before it (its *partial* rule);
//! past the end:
//! 7. *A step that ends at or before the end is kept as it is* (a forwarded batch stays
//!    zero-copy).
//! 8. *A step that starts at or after the end is dropped.*
//! 9. *A batch that straddles the end is rebuilt with the records before it* (strait-records'
//!    builder, the batch's codec).
//! 10. *A skip past the end stops at the end.*
//!
//! **Runs** ([`decide_run`]): a replay is identified by (source topic, target topic,
//! `--from`, `--until`) ([`Spec::id`]); each execution is a run.
//! 11. *No earlier run: run 1 starts.*
//! 12. *A completed run is not repeated without `--again`*: refused, naming it.
//! 13. *An interrupted run resumes* (`--again` starts a new run instead: what the
//!     interrupted run copied stays on the target, and its map stays for translation).
//!
//! **Resume of a partition** ([`resume`]):
//! 14. *A partition marked done is not copied again.*
//! 15. *The target ending where the saved map does: copying goes on from the map.*
//! 16. *The target holding more: the records past the map must be the replay's next
//!     records, checked by content* (the flow's crash recovery,
//!     [`crate::datapath::recovery`]); anything else refuses the resume.
//! 17. *The target holding less than the map: the resume is refused* (records the map
//!     points at are gone).

use strait_records::{BatchBuilder, Limits, Record};

use crate::datapath::plan::Step;
use crate::datapath::probe::Bounds;

/// What to replay: the identity of a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Source topic.
    pub source_topic: String,
    /// Target topic.
    pub target_topic: String,
    /// `--from`, ms since the epoch.
    pub from_ms: i64,
    /// `--until`, ms since the epoch; `None`: the end of the log at the start of the run.
    pub until_ms: Option<i64>,
}

/// A replay that cannot be asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// `--until` is not after `--from`.
    #[error("--from ({from_ms} ms) must be before --until ({until_ms} ms)")]
    EmptyTimeRange {
        /// `--from`.
        from_ms: i64,
        /// `--until`.
        until_ms: i64,
    },
    /// A time before 1970 (Kafka timestamps are not negative).
    #[error("a time before 1970-01-01 ({0} ms) cannot be replayed from")]
    BeforeEpoch(i64),
}

impl Spec {
    /// A replay of `source_topic` into `target_topic` from `from_ms` until `until_ms`.
    pub fn new(
        source_topic: impl Into<String>,
        target_topic: impl Into<String>,
        from_ms: i64,
        until_ms: Option<i64>,
    ) -> Result<Spec, SpecError> {
        if from_ms < 0 {
            return Err(SpecError::BeforeEpoch(from_ms));
        }
        if let Some(until_ms) = until_ms
            && until_ms <= from_ms
        {
            return Err(SpecError::EmptyTimeRange { from_ms, until_ms });
        }
        Ok(Spec {
            source_topic: source_topic.into(),
            target_topic: target_topic.into(),
            from_ms,
            until_ms,
        })
    }

    /// The replay's id: `r` and 16 hex digits of two CRC-32Cs of the identity. The same
    /// request gives the same id (that is how a re-run is recognised); the saved records
    /// carry the whole identity, so a collision is seen and refused, never merged.
    pub fn id(&self) -> String {
        let until = self
            .until_ms
            .map_or_else(|| "end".to_owned(), |u| u.to_string());
        let text = format!(
            "{}\0{}\0{}\0{until}",
            self.source_topic, self.target_topic, self.from_ms
        );
        let a = crc32c::crc32c(text.as_bytes());
        let b = crc32c::crc32c_append(a, text.as_bytes());
        format!("r{a:08x}{b:08x}")
    }
}

/// A broker's (or the fallback's) answer to "the first offset at or after a time".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeOffset {
    /// The first record at or after the time is at this offset.
    At(i64),
    /// No record is that recent.
    None,
}

/// Rules 1–2: a partition's range `[start, end)` of source offsets.
pub fn range(bounds: Bounds, from: TimeOffset, until: Option<TimeOffset>) -> (i64, i64) {
    let clamp = |o: TimeOffset| match o {
        TimeOffset::At(o) => o.clamp(bounds.log_start, bounds.end.max(bounds.log_start)),
        TimeOffset::None => bounds.end.max(bounds.log_start),
    };
    let start = clamp(from);
    let end = until.map_or(bounds.end.max(bounds.log_start), clamp);
    (start, end.max(start))
}

/// What a probe of [`TimeSearch`] saw: the first batch at or after the offset fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probed {
    /// The batch's base offset.
    pub base: i64,
    /// The offset after its last record.
    pub next: i64,
    /// Its maxTimestamp.
    pub max_timestamp: i64,
    /// A control batch (a transaction marker).
    pub control: bool,
    /// Its records' (offset, timestamp), in order.
    pub records: Vec<(i64, i64)>,
}

/// Rules 3–6: a bounded binary search over a partition's batches for the first record at
/// or after `ms`, for brokers whose ListOffsets by time is wrong.
#[derive(Debug, Clone)]
pub struct TimeSearch {
    ms: i64,
    lo: i64,
    hi: i64,
    end: i64,
    candidate: Option<i64>,
    probes: u32,
}

/// Most probes a search may take: one per bit of an offset, and a margin.
pub const MAX_PROBES: u32 = 72;

impl TimeSearch {
    /// A search for `ms` within `bounds`.
    pub fn new(ms: i64, bounds: Bounds) -> TimeSearch {
        let end = bounds.end.max(bounds.log_start);
        TimeSearch {
            ms,
            lo: bounds.log_start,
            hi: end,
            end,
            candidate: None,
            probes: 0,
        }
    }

    /// The offset to fetch next, or `None` when the answer is known ([`TimeSearch::answer`]).
    pub fn next_probe(&self) -> Option<i64> {
        (self.lo < self.hi && self.probes < MAX_PROBES).then(|| self.lo + (self.hi - self.lo) / 2)
    }

    /// Probes taken.
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// What the fetch at `at` (the last [`TimeSearch::next_probe`]) returned; `None`
    /// when it returned no batch (nothing at or after `at` below the end: the search
    /// looks before it).
    pub fn observe(&mut self, at: i64, batch: Option<&Probed>) {
        self.probes += 1;
        let Some(b) = batch else {
            self.hi = at.max(self.lo);
            return;
        };
        if b.control || b.max_timestamp < self.ms {
            // Rules 3 and 6.
            self.lo = b.next.max(at + 1).min(self.hi);
        } else {
            // Rule 4.
            let lo = self.lo;
            if let Some(&(o, _)) = b.records.iter().find(|(o, t)| *o >= lo && *t >= self.ms) {
                self.candidate = Some(self.candidate.map_or(o, |c| c.min(o)));
            }
            self.hi = b.base.min(at).max(self.lo);
        }
    }

    /// Rule 5: the first offset at or after the time, once the bounds met (`None` while
    /// the search goes on). A search that ran out of probes answers its best candidate.
    pub fn answer(&self) -> Option<TimeOffset> {
        if self.next_probe().is_some() {
            return None;
        }
        Some(match self.candidate {
            Some(c) => TimeOffset::At(c),
            None if self.lo < self.end && self.probes >= MAX_PROBES => TimeOffset::At(self.lo),
            None => TimeOffset::None,
        })
    }
}

/// Rules 7–10: `step` limited to source offsets before `end`.
pub fn cut(step: Step, end: i64, limits: &Limits) -> Result<Option<Step>, strait_records::Error> {
    match step {
        Step::Skip { source_next } => Ok(Some(Step::Skip {
            source_next: source_next.min(end),
        })),
        Step::Forward {
            batch,
            source_first,
            count,
        } => {
            if source_first.saturating_add(count) <= end {
                return Ok(Some(Step::Forward {
                    batch,
                    source_first,
                    count,
                }));
            }
            if source_first >= end {
                return Ok(None);
            }
            let records = batch.decode_records(limits)?;
            rebuild(&records, batch.header().compression(), end)
        }
        Step::Reencoded {
            batch,
            source_offsets,
        } => {
            let (Some(&first), Some(&last)) = (source_offsets.first(), source_offsets.last())
            else {
                return Ok(None);
            };
            if last < end {
                return Ok(Some(Step::Reencoded {
                    batch,
                    source_offsets,
                }));
            }
            if first >= end {
                return Ok(None);
            }
            // A re-encoded batch has offsets 0..n: give its records their source offsets.
            let mut records = batch.decode_records(limits)?;
            for (r, o) in records.iter_mut().zip(&source_offsets) {
                r.offset = *o;
            }
            rebuild(&records, batch.header().compression(), end)
        }
    }
}

/// Rule 9: the records before `end` as one batch (a subset of a batch that fit the
/// target, so it fits too).
fn rebuild(
    records: &[Record],
    codec: strait_records::Compression,
    end: i64,
) -> Result<Option<Step>, strait_records::Error> {
    let kept: Vec<&Record> = records.iter().filter(|r| r.offset < end).collect();
    if kept.is_empty() {
        return Ok(Some(Step::Skip { source_next: end }));
    }
    let mut builder = BatchBuilder::new(codec);
    for r in &kept {
        builder.push_record(r)?;
    }
    Ok(Some(Step::Reencoded {
        batch: builder.build()?,
        source_offsets: kept.iter().map(|r| r.offset).collect(),
    }))
}

/// How far an earlier run of the same replay got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlierRun {
    /// Its number.
    pub run: u32,
    /// Whether every partition of it is done.
    pub complete: bool,
}

/// What to do about a replay asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunDecision {
    /// Start run `run` from the beginning of the range.
    Start {
        /// The run's number.
        run: u32,
    },
    /// Resume the interrupted run `run` from its saved maps.
    Resume {
        /// The run's number.
        run: u32,
    },
    /// Refused: run `run` already copied this range (`--again` copies it once more).
    AlreadyDone {
        /// The completed run.
        run: u32,
    },
}

/// Rules 11–13: `latest` is the highest-numbered earlier run of the same replay.
pub fn decide_run(latest: Option<EarlierRun>, again: bool) -> RunDecision {
    match latest {
        None => RunDecision::Start { run: 1 },
        Some(r) if again => RunDecision::Start { run: r.run + 1 },
        Some(r) if r.complete => RunDecision::AlreadyDone { run: r.run },
        Some(r) => RunDecision::Resume { run: r.run },
    }
}

/// Where one partition of a resumed run goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Rule 14: nothing left to copy.
    Done,
    /// Rule 15: from the map's source position; nothing to check on the target.
    Continue,
    /// Rule 16: the target's records `from..end` must be matched by content first.
    Check {
        /// The map's target position.
        from: i64,
        /// The target's end.
        end: i64,
    },
    /// Rule 17: refused.
    TargetShorter {
        /// The map's target position.
        expected: i64,
        /// The target's end.
        end: i64,
    },
}

/// Rules 14–17: `map_target_next` is the saved map's target position, `target_end` the
/// target partition's end now.
pub fn resume(done: bool, map_target_next: i64, target_end: i64) -> Resume {
    if done {
        Resume::Done
    } else if target_end == map_target_next {
        Resume::Continue
    } else if target_end > map_target_next {
        Resume::Check {
            from: map_target_next,
            end: target_end,
        }
    } else {
        Resume::TargetShorter {
            expected: map_target_next,
            end: target_end,
        }
    }
}

#[cfg(test)]
mod tests;
