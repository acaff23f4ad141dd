//! The pure verdicts of `strait verify`: a consumer group's position on one partition, a
//! partition's and a whole run's outcome, and the pace that bounds the bandwidth. No I/O.
//!
//! A group's position (the next source offset its consumers read, committed on the source)
//! is judged against its committed offset on the target:
//!
//! 1. **Proven**: the target commit is the exact translation, and the first record at or
//!    after it on the target is the first record at or after the group's position on the
//!    source (both ends of the log count as the same place). A consumer that fails over
//!    resumes at the very record.
//! 2. **Rounded**: the target commit is the translation, which falls in coarse history: a
//!    consumer re-reads at most `at_most` records and skips none. It matches.
//! 3. **Behind**: no target commit, or one below the translation: group sync has not run
//!    since, or consumers are active on the target. Not a mismatch yet: a consumer would
//!    re-read records, not skip them.
//! 4. **Ahead**: a target commit past the translation: a consumer would skip records. A
//!    mismatch.
//! 5. **Content differs**: the commit is the translation but the records there differ. A
//!    mismatch.
//! 6. A position replication has not reached is **not yet replicated**; one before where
//!    replication started, or in records retention removed, **cannot be translated** (a
//!    consumer would skip the records never copied): a mismatch.
//!
//! A run **matches** when every partition's comparison is clean, nothing is left to
//! replicate and every group position matches; it is **not yet replicated** when nothing
//! differs but replication or group sync has not caught up; otherwise it **differs**.

use std::time::{Duration, Instant};

use serde::Serialize;
use strait_offsets::{Precision, Translation};

use super::content::Content;

/// One group's position on one partition, judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GroupVerdict {
    /// Rule 1.
    Proven {
        /// The target commit.
        target: u64,
        /// The source offset of the record both sides resume at (`None`: both at the end).
        record: Option<u64>,
    },
    /// Rule 2.
    Rounded {
        /// The target commit.
        target: u64,
        /// Records a consumer may re-read at most.
        at_most: u64,
    },
    /// Rule 3.
    Behind {
        /// The translation.
        expected: u64,
        /// The target commit, if any.
        committed: Option<i64>,
    },
    /// Rule 4.
    Ahead {
        /// The translation.
        expected: u64,
        /// The target commit.
        committed: i64,
    },
    /// Rule 5.
    ContentDiffers {
        /// The target commit (the translation).
        target: u64,
        /// The source record at the group's position (`None`: the end of the log).
        source_record: Option<u64>,
        /// The target record at the commit (`None`: the end of the log).
        target_record: Option<u64>,
    },
    /// Rule 6: replication has not reached the position.
    NotYetReplicated {
        /// The replicated end on the source.
        replicated_end: u64,
    },
    /// Rule 6: the position is before where replication started.
    BeforeReplication {
        /// Where replication started on the source.
        replication_start: u64,
    },
    /// Rule 6: the records at the position are gone on one side.
    Truncated,
    /// No offset map covers the partition: it has not been replicated.
    NoMap,
}

/// What a verdict means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Everything matches.
    Matches,
    /// Nothing differs, but replication or group sync has not caught up.
    NotYetReplicated,
    /// Something differs.
    Differs,
}

impl GroupVerdict {
    /// Its outcome.
    pub fn outcome(&self) -> Outcome {
        match self {
            GroupVerdict::Proven { .. } | GroupVerdict::Rounded { .. } => Outcome::Matches,
            GroupVerdict::Behind { .. }
            | GroupVerdict::NotYetReplicated { .. }
            | GroupVerdict::NoMap => Outcome::NotYetReplicated,
            GroupVerdict::Ahead { .. }
            | GroupVerdict::ContentDiffers { .. }
            | GroupVerdict::BeforeReplication { .. }
            | GroupVerdict::Truncated => Outcome::Differs,
        }
    }
}

/// The next step for one group position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Read the first record at or after the group's source position and at or after
    /// `target` on the target, and give them to [`prove`].
    Prove {
        /// The target commit (the exact translation).
        target: u64,
    },
    /// Judged without reading.
    Done(GroupVerdict),
}

/// Rules 2 to 4 and 6 for a translation of the group's source position and its target
/// commit (`None`: none); rule 1 and 5 need the records ([`Step::Prove`]).
pub fn judge(translation: Option<Translation>, committed: Option<i64>) -> Step {
    let Some(translation) = translation else {
        return Step::Done(GroupVerdict::NoMap);
    };
    let (expected, precision) = match translation {
        Translation::Mapped { offset, precision } => (offset, precision),
        Translation::NotYetReplicated { replicated_end, .. } => {
            return Step::Done(GroupVerdict::NotYetReplicated { replicated_end });
        }
        Translation::BeforeReplication {
            replication_start, ..
        } => return Step::Done(GroupVerdict::BeforeReplication { replication_start }),
        Translation::Truncated { .. } => return Step::Done(GroupVerdict::Truncated),
    };
    let at = i64::try_from(expected).unwrap_or(i64::MAX);
    match committed {
        Some(c) if c > at => Step::Done(GroupVerdict::Ahead {
            expected,
            committed: c,
        }),
        Some(c) if c == at => match precision {
            Precision::Exact => Step::Prove { target: expected },
            Precision::RoundedDown { at_most } => Step::Done(GroupVerdict::Rounded {
                target: expected,
                at_most,
            }),
        },
        committed => Step::Done(GroupVerdict::Behind {
            expected,
            committed,
        }),
    }
}

/// Rules 1 and 5: the first record at or after the group's source position and at or after
/// the target commit `target` (offset and content; `None` at the end of the log).
pub fn prove(
    target: u64,
    source: Option<(u64, Content)>,
    target_record: Option<(u64, Content)>,
) -> GroupVerdict {
    match (source, target_record) {
        (None, None) => GroupVerdict::Proven {
            target,
            record: None,
        },
        (Some((s, a)), Some((_, b))) if a == b => GroupVerdict::Proven {
            target,
            record: Some(s),
        },
        (s, t) => GroupVerdict::ContentDiffers {
            target,
            source_record: s.map(|x| x.0),
            target_record: t.map(|x| x.0),
        },
    }
}

/// A partition's outcome: `clean` (its comparison found nothing and checked everything)
/// and `lag` (source records past the replicated end; `None`: never replicated).
pub fn partition_outcome(clean: bool, lag: Option<u64>) -> Outcome {
    match (clean, lag) {
        (false, _) => Outcome::Differs,
        (true, None) => Outcome::NotYetReplicated,
        (true, Some(0)) => Outcome::Matches,
        (true, Some(_)) => Outcome::NotYetReplicated,
    }
}

/// A token bucket of bytes per second shared by the readers: [`Pace::take`] says how
/// long to wait before reading on. A burst of one second's worth is allowed.
#[derive(Debug, Clone)]
pub struct Pace {
    rate: f64,
    available: f64,
    at: Instant,
}

impl Pace {
    /// A pace of `bytes_per_sec` (at least 1), full at `now`.
    pub fn new(bytes_per_sec: u64, now: Instant) -> Self {
        let rate = bytes_per_sec.max(1) as f64;
        Pace {
            rate,
            available: rate,
            at: now,
        }
    }

    /// Takes `bytes` just read at `now`; the wait before the next read.
    pub fn take(&mut self, now: Instant, bytes: u64) -> Duration {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now.max(self.at);
        self.available = (self.available + elapsed * self.rate).min(self.rate);
        self.available -= bytes as f64;
        if self.available >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.available / self.rate)
        }
    }
}
