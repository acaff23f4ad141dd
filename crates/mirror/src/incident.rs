//! Incidents: what the data path found that it must not paper over, and what the
//! configured policy makes of it. Pure: the callers count the metric, log the line or
//! return the error this module hands back.
//!
//! Rules:
//! - Each incident is governed by exactly one key of `[flows.topics]`:
//!   - the source deleted records not replicated yet, or our position is past the source
//!     log's end → `on_source_truncation`;
//!   - the source topic was deleted and created again (its topic id changed) →
//!     `on_topic_recreation`;
//!   - anything about the target: it ends before what the map says was written
//!     (truncated or re-created), a batch was acknowledged elsewhere than where the map
//!     expects it (someone else wrote the partition), or recovery found records past the
//!     map that are not the source's → `on_target_mismatch`.
//! - Every incident is counted (`strait_incidents_total{kind}`) whatever the policy: the
//!   caller counts [`Incident::kind`] before acting on the [`Verdict`].
//! - `fail` → [`Verdict::Fail`]: a [`MirrorError::incident`] saying what happened, that
//!   the policy `fail` stopped it, and what setting the key to `"skip"` would do instead.
//! - `skip` → [`Verdict::Skip`]: the log line says what happened, which key chose `skip`
//!   and what skipping does; the caller then does exactly that.
//! - Every message is written once, here (one constructor per situation).

use std::fmt;

use uuid::Uuid;

use crate::config::Flow;
use crate::config::model::IncidentPolicy;
use crate::error::{IncidentKind, MirrorError};

/// The three policies of a flow, one per governed kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policies {
    /// `on_source_truncation`.
    pub source_truncation: IncidentPolicy,
    /// `on_topic_recreation`.
    pub topic_recreation: IncidentPolicy,
    /// `on_target_mismatch`.
    pub target_mismatch: IncidentPolicy,
}

impl Policies {
    /// The policies configured for `flow`.
    pub fn of(flow: &Flow) -> Self {
        Policies {
            source_truncation: flow.on_source_truncation,
            topic_recreation: flow.on_topic_recreation,
            target_mismatch: flow.on_target_mismatch,
        }
    }

    /// Every policy `skip` (or every `fail`): for tests.
    pub fn all(policy: IncidentPolicy) -> Self {
        Policies {
            source_truncation: policy,
            topic_recreation: policy,
            target_mismatch: policy,
        }
    }
}

/// Which key governs an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Governed {
    SourceTruncation,
    TopicRecreation,
    TargetMismatch,
}

impl Governed {
    fn kind(self) -> IncidentKind {
        match self {
            Governed::SourceTruncation => IncidentKind::SourceTruncation,
            Governed::TopicRecreation => IncidentKind::TopicRecreation,
            Governed::TargetMismatch => IncidentKind::TargetMismatch,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Governed::SourceTruncation => "on_source_truncation",
            Governed::TopicRecreation => "on_topic_recreation",
            Governed::TargetMismatch => "on_target_mismatch",
        }
    }

    fn policy(self, p: &Policies) -> IncidentPolicy {
        match self {
            Governed::SourceTruncation => p.source_truncation,
            Governed::TopicRecreation => p.topic_recreation,
            Governed::TargetMismatch => p.target_mismatch,
        }
    }
}

/// When a topic re-creation was noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noticed {
    /// At a topic refresh while replicating: every running partition of the topic restarts.
    WhileRunning,
    /// At start, against the saved state: the partition starts over at `log_start`.
    SinceLastRun {
        /// The new topic's log start.
        log_start: i64,
    },
}

/// One incident: what happened and what `skip` does about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    governed: Governed,
    what: String,
    skip: String,
}

/// What the policy makes of an incident.
#[derive(Debug)]
pub enum Verdict {
    /// Policy `fail`: stop with this error.
    Fail(MirrorError),
    /// Policy `skip`: log this and carry on as it says.
    Skip(Skipped),
}

/// An incident skipped by policy: the caller logs [`Skipped::message`] at `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Which incident.
    pub kind: IncidentKind,
    /// What happened and what skipping does.
    pub message: String,
}

impl Verdict {
    /// `Err` under policy `fail`, so callers can `?` it; `Ok` to log and carry on.
    pub fn into_result(self) -> Result<Skipped, MirrorError> {
        match self {
            Verdict::Fail(e) => Err(e),
            Verdict::Skip(s) => Ok(s),
        }
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl Incident {
    fn new(governed: Governed, what: String, skip: String) -> Self {
        Incident {
            governed,
            what,
            skip,
        }
    }

    /// The source log start moved past our position: `position..start` were deleted
    /// before they were copied (retention, DeleteRecords).
    pub fn source_deleted(position: i64, start: i64) -> Self {
        Incident::new(
            Governed::SourceTruncation,
            format!(
                "the source log now starts at offset {start}, but offsets {position}..{start} \
                 were not replicated yet (retention or DeleteRecords)"
            ),
            format!("replication continues from offset {start}; those records are not copied"),
        )
    }

    /// Our position is past the end of the source log: the partition was truncated or
    /// re-created under us.
    pub fn source_past_end(position: i64, start: i64) -> Self {
        Incident::new(
            Governed::SourceTruncation,
            format!(
                "offset {position} is past the end of the source log (log start {start}): \
                 the partition was truncated or re-created"
            ),
            format!("the map restarts and replication continues from offset {start}"),
        )
    }

    /// The source topic id changed from `old` to `new`.
    pub fn topic_recreated(old: Uuid, new: Uuid, noticed: Noticed) -> Self {
        let (when, skip) = match noticed {
            Noticed::WhileRunning => (
                "while replicating".to_owned(),
                "every partition of the topic restarts its map and replicates the new topic \
                 from its log start"
                    .to_owned(),
            ),
            Noticed::SinceLastRun { log_start } => (
                "since the last run".to_owned(),
                format!("the map restarts and the new topic is replicated from offset {log_start}"),
            ),
        };
        Incident::new(
            Governed::TopicRecreation,
            format!("the source topic id changed from {old} to {new} {when}"),
            skip,
        )
    }

    /// At start, the target partition ends at `end`, before `written` (the map's next
    /// target offset): it was truncated or re-created.
    pub fn target_shorter(target_topic: &str, end: i64, written: u64) -> Self {
        let missing = i64::try_from(written)
            .unwrap_or(i64::MAX)
            .saturating_sub(end);
        Incident::new(
            Governed::TargetMismatch,
            format!(
                "the target partition of {target_topic} ends at {end} but {written} records \
                 were written to it ({missing} missing): it was truncated or re-created"
            ),
            format!(
                "the map's target side restarts at the target end ({end}) and replication \
                 continues from the map's source position"
            ),
        )
    }

    /// A batch was acknowledged at `acked` where the map expected `expected`.
    pub fn acked_elsewhere(target_topic: &str, acked: u64, expected: u64) -> Self {
        Incident::new(
            Governed::TargetMismatch,
            format!(
                "the target acknowledged a batch at offset {acked} of {target_topic} but \
                 Strait, its only writer, expected {expected}: the target partition was \
                 written by someone else, truncated or re-created"
            ),
            format!("the map's target side restarts at {acked}, where the batch landed"),
        )
    }

    /// Recovery found records on the target past the map that are not the source's.
    pub fn recovery_mismatch(target_topic: &str, at: u64, reason: &str, target_end: u64) -> Self {
        Incident::new(
            Governed::TargetMismatch,
            format!(
                "recovery: the target partition of {target_topic} does not hold the source's \
                 data at offset {at}: {reason}; it was written by someone else, truncated, or \
                 a batch is missing"
            ),
            format!(
                "the map's target side restarts at the target end ({target_end}) and the \
                 source's records are written from there"
            ),
        )
    }

    /// The kind (the metric's `kind` label).
    pub fn kind(&self) -> IncidentKind {
        self.governed.kind()
    }

    /// The config key that governs it.
    pub fn key(&self) -> &'static str {
        self.governed.key()
    }

    /// Applies the policy configured for this kind.
    pub fn decide(self, policies: &Policies) -> Verdict {
        let key = self.key();
        match self.governed.policy(policies) {
            IncidentPolicy::Fail => Verdict::Fail(MirrorError::incident(
                self.kind(),
                format!(
                    "{}; {key} = \"fail\" stops here (with {key} = \"skip\", {})",
                    self.what, self.skip
                ),
            )),
            IncidentPolicy::Skip => Verdict::Skip(Skipped {
                kind: self.kind(),
                message: format!("{}; {key} = \"skip\": {}", self.what, self.skip),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
