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
mod tests {
    use super::*;

    fn every_incident() -> Vec<Incident> {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        vec![
            Incident::source_deleted(5, 10),
            Incident::source_past_end(50, 0),
            Incident::topic_recreated(a, b, Noticed::WhileRunning),
            Incident::topic_recreated(a, b, Noticed::SinceLastRun { log_start: 0 }),
            Incident::target_shorter("t", 3, 10),
            Incident::acked_elsewhere("t", 50, 42),
            Incident::recovery_mismatch("t", 40, "differs", 61),
        ]
    }

    #[test]
    fn each_kind_is_governed_by_its_own_key() {
        let keys: Vec<(IncidentKind, &str)> = every_incident()
            .iter()
            .map(|i| (i.kind(), i.key()))
            .collect();
        for (kind, key) in keys {
            let want = match kind {
                IncidentKind::SourceTruncation => "on_source_truncation",
                IncidentKind::TopicRecreation => "on_topic_recreation",
                IncidentKind::TargetMismatch => "on_target_mismatch",
                IncidentKind::PartitionGrowthUnsupported => "none",
            };
            assert_eq!(key, want, "{kind}");
        }
    }

    #[test]
    fn anything_about_the_target_is_a_target_mismatch_never_a_topic_recreation() {
        for i in [
            Incident::target_shorter("t", 3, 10),
            Incident::acked_elsewhere("t", 50, 42),
            Incident::recovery_mismatch("t", 40, "differs", 61),
        ] {
            assert_eq!(i.kind(), IncidentKind::TargetMismatch);
            // Only on_target_mismatch decides: the other keys do not.
            let mut p = Policies::all(IncidentPolicy::Skip);
            p.target_mismatch = IncidentPolicy::Fail;
            assert!(matches!(i.clone().decide(&p), Verdict::Fail(_)));
            let mut p = Policies::all(IncidentPolicy::Fail);
            p.target_mismatch = IncidentPolicy::Skip;
            assert!(matches!(i.decide(&p), Verdict::Skip(_)));
        }
    }

    #[test]
    fn policy_fail_is_an_incident_error_naming_the_key_and_what_skip_would_do() {
        let v = Incident::acked_elsewhere("dst", 50, 42).decide(&Policies::default());
        let Verdict::Fail(e) = v else {
            panic!("policy fail must fail");
        };
        assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
        let text = e.to_string();
        assert!(
            text.contains("acknowledged a batch at offset 50 of dst"),
            "{text}"
        );
        assert!(text.contains("expected 42"), "{text}");
        assert!(
            text.contains("on_target_mismatch = \"fail\" stops here"),
            "{text}"
        );
        assert!(
            text.contains("on_target_mismatch = \"skip\", the map's target side restarts at 50"),
            "{text}"
        );
        assert!(!text.contains("on_topic_recreation"), "{text}");
    }

    #[test]
    fn policy_skip_says_what_happened_which_key_skipped_and_what_it_does() {
        let v = Incident::source_deleted(5, 10).decide(&Policies::all(IncidentPolicy::Skip));
        let Verdict::Skip(s) = v else {
            panic!("policy skip must skip");
        };
        assert_eq!(s.kind, IncidentKind::SourceTruncation);
        assert!(
            s.message.contains("offsets 5..10 were not replicated"),
            "{}",
            s.message
        );
        assert!(
            s.message
                .contains("on_source_truncation = \"skip\": replication continues from offset 10"),
            "{}",
            s.message
        );
    }

    #[test]
    fn every_incident_decides_under_both_policies() {
        for i in every_incident() {
            let key = i.key();
            match i.clone().decide(&Policies::all(IncidentPolicy::Fail)) {
                Verdict::Fail(e) => {
                    assert_eq!(e.incident_kind(), Some(i.kind()));
                    assert!(e.to_string().contains(key));
                }
                Verdict::Skip(s) => panic!("fail skipped: {s}"),
            }
            match i.clone().decide(&Policies::all(IncidentPolicy::Skip)) {
                Verdict::Skip(s) => {
                    assert_eq!(s.kind, i.kind());
                    assert!(s.message.contains(key));
                }
                Verdict::Fail(e) => panic!("skip failed: {e}"),
            }
        }
    }

    #[test]
    fn a_topic_recreation_says_when_it_was_noticed() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let run = Incident::topic_recreated(a, b, Noticed::WhileRunning);
        let start = Incident::topic_recreated(a, b, Noticed::SinceLastRun { log_start: 7 });
        let text = |i: Incident| match i.decide(&Policies::all(IncidentPolicy::Skip)) {
            Verdict::Skip(s) => s.message,
            Verdict::Fail(e) => e.to_string(),
        };
        assert!(text(run).contains("while replicating"));
        let start = text(start);
        assert!(start.contains("since the last run"), "{start}");
        assert!(start.contains("from offset 7"), "{start}");
    }
}
