//! How the machine takes the answers to its calls: JoinGroup, SyncGroup, Heartbeat and
//! LeaveGroup (rules 1–13 of [`super`]), the error codes they share, and the small steps
//! (confirm, lose, fail, retry) every answer is made of.

use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::{Assignment, Call, GroupError, JoinAnswer, Membership, Phase};
use crate::backoff::Backoff;
use crate::error::Error;

impl Membership {
    /// Takes the in-flight call of kind `call`; `None` (answer ignored) if another is in
    /// flight (an abandoned call answering late).
    fn answered(&mut self, call: Call) -> Option<Instant> {
        match self.in_flight {
            Some((c, sent)) if c == call => {
                self.in_flight = None;
                // The driver abandons a keep-alive still out (rule 15).
                self.keepalive_sent = None;
                self.keepalive_refused = false;
                Some(sent)
            }
            _ => None,
        }
    }

    pub(super) fn confirm(&mut self, sent: Instant) {
        self.confirmed = Some(self.confirmed.map_or(sent, |c| c.max(sent)));
    }

    pub(super) fn lose(&mut self, err: GroupError) {
        if self.assignment.take().is_some() {
            self.stats.lost += 1;
        }
        self.error = Some(err);
    }

    pub(super) fn fail(&mut self, err: GroupError) {
        self.lose(err);
        self.phase = Phase::Failed;
        self.retry_at = None;
    }

    fn retry(&mut self, now: Instant, err: &Error) {
        let delay = self.backoff.next_delay();
        tracing::debug!(group = %self.cfg.group_id, error = %err, ?delay, "group call failed; retrying");
        self.retry_at = Some(now + delay);
    }

    /// Handles the group-level error codes every call shares (rules 6–11).
    fn on_error(&mut self, now: Instant, call: Call, sent: Instant, err: Error) {
        match err.kafka_error() {
            Some(ResponseError::RebalanceInProgress) => {
                self.confirm(sent);
                self.phase = if self.assignment.is_some() {
                    Phase::Rebalancing
                } else {
                    Phase::Joining
                };
                if call != Call::Heartbeat {
                    // A coordinator answering join and sync at once must not make us spin.
                    self.retry(now, &err);
                }
            }
            Some(ResponseError::IllegalGeneration) => {
                self.lose(GroupError::IllegalGeneration);
                self.phase = Phase::Joining;
            }
            Some(ResponseError::UnknownMemberId) => {
                let member_id = std::mem::take(&mut self.member_id);
                self.lose(GroupError::UnknownMember { member_id });
                self.phase = Phase::Joining;
            }
            Some(ResponseError::FencedInstanceId) => self.fail(GroupError::FencedInstance {
                instance_id: self.cfg.instance_id.clone().unwrap_or_default(),
            }),
            _ if err.is_retriable() || err.is_coordinator_error() => self.retry(now, &err),
            _ => self.fail(GroupError::Refused(err)),
        }
    }

    /// The JoinGroup answered (rules 1–3, 6–11).
    pub fn on_join(&mut self, now: Instant, answer: Result<JoinAnswer, Error>) {
        let Some(sent) = self.answered(Call::Join) else {
            return;
        };
        match answer {
            Ok(JoinAnswer::MemberIdRequired(id)) => {
                if id.is_empty() {
                    self.fail(GroupError::Protocol(
                        "MEMBER_ID_REQUIRED without a member id".into(),
                    ));
                } else {
                    self.stats.member_id_required += 1;
                    self.member_id = id;
                }
            }
            Ok(JoinAnswer::Joined(j)) => {
                if let Some(pt) = &j.protocol_type
                    && pt != &self.cfg.protocol_type
                {
                    return self.fail(GroupError::Protocol(format!(
                        "the coordinator answered protocol type {pt:?}, not {:?}",
                        self.cfg.protocol_type
                    )));
                }
                if j.member_id.is_empty() {
                    return self.fail(GroupError::Protocol(
                        "JoinGroup succeeded without a member id".into(),
                    ));
                }
                self.confirm(sent);
                self.member_id = j.member_id.clone();
                self.joined = Some(j);
                // A member still owning the previous generation's assignment keeps it
                // until the sync answers (rule 6).
                self.phase = Phase::AwaitingSync;
            }
            Err(e) => self.on_error(now, Call::Join, sent, e),
        }
    }

    /// The SyncGroup answered with our assignment (rules 4, 6–11).
    pub fn on_sync(&mut self, now: Instant, answer: Result<Bytes, Error>) {
        let Some(sent) = self.answered(Call::Sync) else {
            return;
        };
        match answer {
            Ok(data) => {
                let Some(j) = &self.joined else {
                    return self.fail(GroupError::Protocol("sync without a join".into()));
                };
                let a = Assignment {
                    generation: j.generation,
                    member_id: j.member_id.clone(),
                    leader_id: j.leader_id.clone(),
                    protocol: j.protocol.clone(),
                    data,
                };
                self.confirm(sent);
                self.backoff = Backoff::new(self.cfg.backoff);
                self.stats.assignments += 1;
                self.assignment = Some(a);
                self.phase = Phase::Stable;
                self.next_heartbeat = Some(now + self.cfg.heartbeat_interval);
            }
            Err(e) => self.on_error(now, Call::Sync, sent, e),
        }
    }

    /// The caller's protocol failed (the leader's assignor, or writing the metadata): the
    /// machine stops (rule 10).
    pub fn on_protocol_failed(&mut self, reason: String) {
        self.in_flight = None;
        self.fail(GroupError::Assignor(reason));
    }

    /// The Heartbeat answered (rules 5–12).
    pub fn on_heartbeat(&mut self, now: Instant, answer: Result<(), Error>) {
        let Some(sent) = self.answered(Call::Heartbeat) else {
            return;
        };
        // A rejoin requested while the heartbeat was in flight stays requested.
        match answer {
            Ok(()) => {
                self.confirm(sent);
                self.backoff = Backoff::new(self.cfg.backoff);
            }
            Err(e) => self.on_error(now, Call::Heartbeat, sent, e),
        }
    }

    /// The LeaveGroup answered, or failed: either way we are out (rule 13).
    pub fn on_leave(&mut self, _now: Instant, answer: Result<(), Error>) {
        if self.answered(Call::Leave).is_none() {
            return;
        }
        if let Err(e) = answer {
            tracing::debug!(group = %self.cfg.group_id, error = %e, "LeaveGroup failed; the session timeout will expel us");
        }
        self.phase = Phase::Left;
    }
}
