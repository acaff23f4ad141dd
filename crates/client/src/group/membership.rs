//! The classic group-membership state machine (JoinGroup / SyncGroup / Heartbeat /
//! LeaveGroup). Pure: no I/O, no clock, no tasks. The driver ([`super::GroupMember`]) asks
//! [`Membership::next_step`] what to send, sends it, and feeds the answer back with the
//! matching `on_*` call; time comes in as `now` arguments.
//!
//! One call is in flight at a time. The rules (each has a test named after it):
//!
//! 1. **join carries identity**: a JoinGroup carries the member id we hold (empty at first),
//!    the `group.instance.id` of a static member (KIP-345), the caller's protocol type and
//!    the session and rebalance timeouts.
//! 2. **member id required**: MEMBER_ID_REQUIRED (KIP-394) hands us a member id; we adopt it
//!    and rejoin at once, without backoff.
//! 3. **the leader assigns**: after a successful join the leader's Sync step carries every
//!    member's metadata (the driver runs the caller's assignor on it); a follower's carries
//!    none and sends no assignments, and so does a static leader told `skip_assignment`
//!    (KIP-814: it rejoined a stable group, whose assignment stands).
//! 4. **sync makes stable**: a successful SyncGroup gives the assignment of that generation
//!    and the phase becomes [`Phase::Stable`].
//! 5. **heartbeat on interval**: a stable member heartbeats every `heartbeat_interval` after
//!    the previous heartbeat was sent.
//! 6. **rebalance keeps the assignment**: REBALANCE_IN_PROGRESS means rejoin: at once
//!    after a heartbeat, after the backoff after a join or sync (a coordinator that
//!    answers those at once must not make us spin; the backoff resets on a successful
//!    sync or heartbeat). The member keeps owning what it owns (cooperative rebalancing:
//!    only what the new assignment takes away stops) until the new assignment arrives or the
//!    self-fence deadline passes.
//! 7. **illegal generation loses the assignment**: ILLEGAL_GENERATION means the group moved
//!    on without us; the assignment is dropped at once and we rejoin with the same member id.
//! 8. **unknown member loses the assignment and the id**: UNKNOWN_MEMBER_ID means the
//!    coordinator expelled us; the assignment is dropped, the member id forgotten, and we
//!    rejoin.
//! 9. **fenced instance is fatal**: FENCED_INSTANCE_ID means another process runs with our
//!    `group.instance.id`; the assignment is dropped and the machine stops
//!    ([`GroupError::FencedInstance`]).
//! 10. **refusals are fatal**: any other non-retriable error (INCONSISTENT_GROUP_PROTOCOL,
//!     INVALID_SESSION_TIMEOUT, GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED, a
//!     protocol type other than ours in the answer, a failing assignor…) stops the machine
//!     with the assignment dropped.
//! 11. **retriable errors back off**: network errors, timeouts and coordinator moves retry
//!     the same call after [`Backoff`]; ownership is unaffected except by rule 12.
//! 12. **self-fence before expulsion**: ownership lasts until `confirmed + session_timeout −
//!     fence_margin`, where `confirmed` is the *send* time of the latest request the
//!     coordinator answered as a member (heartbeat OK or REBALANCE_IN_PROGRESS, join OK,
//!     sync OK). The coordinator's own timer started when it *received* that request, later,
//!     so we stop at least `fence_margin` before it can expel us and give our partitions
//!     away. [`Membership::tick`] at or past the deadline drops the assignment
//!     ([`GroupError::SelfFenced`]) and the member rejoins with its member id.
//! 13. **leave drops first**: [`Membership::leave`] drops the assignment before the
//!     LeaveGroup is sent; any answer (or none) ends in [`Phase::Left`]. A member that never
//!     got a member id leaves without a call.
//! 14. **rejoin on request**: [`Membership::request_rejoin`] (the caller released revoked
//!     partitions, or its metadata changed) turns a stable member into a rejoining one that
//!     keeps its assignment (rule 6).
//! 15. **keep-alive while rejoining**: while a member waits for a JoinGroup answer owning
//!     its assignment (a keep-alive of its generation), or for a SyncGroup answer (a
//!     keep-alive of the generation it joined, whether it owns anything or not: Kafka
//!     counts a heartbeat after the JoinGroup answer as an ordinary one, and a coordinator
//!     that holds the SyncGroup answer — Tansu, about 3 s for a static member — would
//!     otherwise let the session run out meanwhile, the session of a restarted static
//!     member counting from the last heartbeat of the process before it), a keep-alive
//!     heartbeat is due every `heartbeat_interval` ([`Membership::keepalive`], sent on
//!     another connection: Kafka serves one connection's requests in order). OK or
//!     REBALANCE_IN_PROGRESS proves the coordinator still counts us (Kafka resets the
//!     session on it) and extends ownership (rule 12), so a long rebalance does not make
//!     members self-fence; UNKNOWN_MEMBER_ID drops the assignment and ends the keep-alives
//!     until the call answers, FENCED_INSTANCE_ID is fatal, and anything else
//!     (ILLEGAL_GENERATION once the join completed, network errors) is ignored: the call's
//!     answer decides.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;

use crate::backoff::Backoff;
use crate::error::Error;

pub use super::config::MembershipConfig;
use super::types::GroupError;
pub use super::types::{
    Assignment, HeartbeatCall, JoinAnswer, JoinCall, Joined, JoinedMember, LeaveCall, Phase, Stats,
    Step, SyncCall,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Join,
    Sync,
    Heartbeat,
    Leave,
}

/// The membership of one member in one group.
#[derive(Debug)]
pub struct Membership {
    cfg: MembershipConfig,
    phase: Phase,
    member_id: String,
    /// The generation joined (valid from AwaitingSync on).
    joined: Option<Joined>,
    assignment: Option<Assignment>,
    /// Send time of the latest request answered as a member (rule 12).
    confirmed: Option<Instant>,
    /// The call in flight and when it was sent.
    in_flight: Option<(Call, Instant)>,
    next_heartbeat: Option<Instant>,
    retry_at: Option<Instant>,
    backoff: Backoff,
    error: Option<GroupError>,
    stats: Stats,
    /// Send time of the keep-alive in flight (rule 15).
    keepalive_sent: Option<Instant>,
    /// Send time of the latest keep-alive.
    last_keepalive: Option<Instant>,
    /// A keep-alive was answered UNKNOWN_MEMBER_ID: none more until the call answers.
    keepalive_refused: bool,
}

impl Membership {
    /// A member that has not joined yet. The config should have passed
    /// [`MembershipConfig::validate`].
    pub fn new(cfg: MembershipConfig) -> Self {
        let backoff = Backoff::new(cfg.backoff);
        Membership {
            cfg,
            phase: Phase::Unjoined,
            member_id: String::new(),
            joined: None,
            assignment: None,
            confirmed: None,
            in_flight: None,
            next_heartbeat: None,
            retry_at: None,
            backoff,
            error: None,
            stats: Stats::default(),
            keepalive_sent: None,
            last_keepalive: None,
            keepalive_refused: false,
        }
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &MembershipConfig {
        &self.cfg
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The member id we hold ("" before the coordinator gave one).
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// The assignment we own, if any.
    pub fn assignment(&self) -> Option<&Assignment> {
        self.assignment.as_ref()
    }

    /// Why the member last lost its assignment or stopped (kept after it recovers).
    pub fn last_error(&self) -> Option<&GroupError> {
        self.error.as_ref()
    }

    /// When the assignment must be given up if no further answer confirms the membership
    /// (rule 12); `None` when nothing is owned.
    pub fn fence_deadline(&self) -> Option<Instant> {
        self.assignment.as_ref()?;
        let confirmed = self.confirmed?;
        Some(confirmed + self.cfg.session_timeout - self.cfg.fence_margin)
    }

    /// What to do now.
    pub fn next_step(&mut self, now: Instant) -> Step {
        self.tick(now);
        if self.in_flight.is_some() {
            return Step::AwaitAnswer;
        }
        if let Some(at) = self.retry_at {
            if now < at {
                return Step::Wait(self.earliest(at));
            }
            self.retry_at = None;
        }
        match self.phase {
            Phase::Left | Phase::Failed => Step::Done,
            Phase::Unjoined | Phase::Rebalancing | Phase::Joining => {
                if self.phase == Phase::Unjoined {
                    self.phase = Phase::Joining;
                }
                self.in_flight = Some((Call::Join, now));
                self.stats.joins += 1;
                Step::Join(JoinCall {
                    member_id: self.member_id.clone(),
                    instance_id: self.cfg.instance_id.clone(),
                })
            }
            Phase::AwaitingSync => {
                let Some(j) = &self.joined else {
                    // Unreachable by construction; recover by rejoining.
                    self.phase = Phase::Unjoined;
                    return self.next_step(now);
                };
                let leader_of =
                    (j.leader_id == j.member_id && !j.skip_assignment).then(|| j.members.clone());
                let call = SyncCall {
                    generation: j.generation,
                    member_id: j.member_id.clone(),
                    instance_id: self.cfg.instance_id.clone(),
                    protocol: j.protocol.clone(),
                    leader_of,
                };
                self.in_flight = Some((Call::Sync, now));
                Step::Sync(call)
            }
            Phase::Stable => {
                let due = self.next_heartbeat.unwrap_or(now);
                if now < due {
                    return Step::Wait(self.earliest(due));
                }
                let Some(a) = &self.assignment else {
                    self.phase = Phase::Unjoined;
                    return self.next_step(now);
                };
                let call = HeartbeatCall {
                    generation: a.generation,
                    member_id: self.member_id.clone(),
                    instance_id: self.cfg.instance_id.clone(),
                };
                self.in_flight = Some((Call::Heartbeat, now));
                self.next_heartbeat = Some(now + self.cfg.heartbeat_interval);
                Step::Heartbeat(call)
            }
            Phase::Leaving => {
                if self.member_id.is_empty() {
                    self.phase = Phase::Left;
                    return Step::Done;
                }
                self.in_flight = Some((Call::Leave, now));
                Step::Leave(LeaveCall {
                    member_id: self.member_id.clone(),
                    instance_id: self.cfg.instance_id.clone(),
                })
            }
        }
    }

    /// `at`, or the fence deadline if that comes first.
    fn earliest(&self, at: Instant) -> Instant {
        self.fence_deadline().map_or(at, |f| f.min(at))
    }

    /// When the next keep-alive is due (rule 15): `None` unless a JoinGroup is in flight
    /// and we own an assignment, or a SyncGroup is in flight; and no keep-alive is in
    /// flight or was refused.
    pub fn keepalive_at(&self) -> Option<Instant> {
        self.keepalive_of()?;
        let (_, sent) = self.in_flight?;
        let last = [self.confirmed, self.last_keepalive, Some(sent)]
            .into_iter()
            .flatten()
            .max()?;
        Some(last + self.cfg.heartbeat_interval)
    }

    /// The generation and member id a keep-alive carries now (rule 15), if one may be sent.
    fn keepalive_of(&self) -> Option<(i32, &str)> {
        if self.keepalive_sent.is_some() || self.keepalive_refused {
            return None;
        }
        match (self.in_flight?.0, &self.joined, &self.assignment) {
            (Call::Sync, Some(j), _) => Some((j.generation, &j.member_id)),
            (Call::Join, _, Some(a)) => Some((a.generation, &self.member_id)),
            _ => None,
        }
    }

    /// The keep-alive to send now, if one is due (rule 15); answer with
    /// [`Membership::on_keepalive`].
    pub fn keepalive(&mut self, now: Instant) -> Option<HeartbeatCall> {
        if self.keepalive_at()? > now {
            return None;
        }
        let (generation, member_id) = self.keepalive_of()?;
        let call = HeartbeatCall {
            generation,
            member_id: member_id.to_string(),
            instance_id: self.cfg.instance_id.clone(),
        };
        self.keepalive_sent = Some(now);
        self.last_keepalive = Some(now);
        Some(call)
    }

    /// The keep-alive answered (rule 15).
    pub fn on_keepalive(&mut self, _now: Instant, answer: Result<(), Error>) {
        let Some(sent) = self.keepalive_sent.take() else {
            return;
        };
        let rebalancing = Some(ResponseError::RebalanceInProgress);
        match answer {
            Ok(()) => self.confirm_keepalive(sent),
            Err(e) if e.kafka_error() == rebalancing => self.confirm_keepalive(sent),
            Err(e) => match e.kafka_error() {
                Some(ResponseError::UnknownMemberId) => {
                    self.keepalive_refused = true;
                    self.lose(GroupError::UnknownMember {
                        member_id: self.member_id.clone(),
                    });
                }
                Some(ResponseError::FencedInstanceId) => {
                    self.in_flight = None;
                    self.fail(GroupError::FencedInstance {
                        instance_id: self.cfg.instance_id.clone().unwrap_or_default(),
                    });
                }
                _ => tracing::debug!(group = %self.cfg.group_id, error = %e,
                    "keep-alive not confirmed; the join's answer decides"),
            },
        }
    }

    fn confirm_keepalive(&mut self, sent: Instant) {
        self.stats.keepalives_confirmed += 1;
        self.confirm(sent);
    }

    /// Applies the self-fence deadline (rule 12). Returns true when it just dropped the
    /// assignment.
    pub fn tick(&mut self, now: Instant) -> bool {
        match self.fence_deadline() {
            Some(deadline) if now >= deadline => {
                let silent_for = self.confirmed.map_or(Duration::ZERO, |c| now - c);
                self.assignment = None;
                self.stats.lost += 1;
                self.error = Some(GroupError::SelfFenced { silent_for });
                if matches!(self.phase, Phase::Stable | Phase::Rebalancing) {
                    self.phase = Phase::Joining;
                }
                true
            }
            _ => false,
        }
    }

    /// The caller wants a new generation (rule 14). No effect unless stable.
    /// A heartbeat in flight is answered first; the JoinGroup follows.
    pub fn request_rejoin(&mut self) {
        if self.phase == Phase::Stable {
            self.phase = Phase::Rebalancing;
        }
    }

    /// Leave the group (rule 13): the assignment is dropped now; the driver abandons any
    /// call in flight and sends the LeaveGroup of the next step.
    pub fn leave(&mut self) {
        self.assignment = None;
        self.in_flight = None;
        self.keepalive_sent = None;
        self.retry_at = None;
        if !matches!(self.phase, Phase::Left | Phase::Failed) {
            self.phase = Phase::Leaving;
        }
    }

    /// Stop without a LeaveGroup (a static member restarting within the session timeout
    /// keeps its place): the assignment is dropped and the phase becomes [`Phase::Left`].
    pub fn detach(&mut self) {
        self.assignment = None;
        self.in_flight = None;
        self.phase = Phase::Left;
    }

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

    fn confirm(&mut self, sent: Instant) {
        self.confirmed = Some(self.confirmed.map_or(sent, |c| c.max(sent)));
    }

    fn lose(&mut self, err: GroupError) {
        if self.assignment.take().is_some() {
            self.stats.lost += 1;
        }
        self.error = Some(err);
    }

    fn fail(&mut self, err: GroupError) {
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
