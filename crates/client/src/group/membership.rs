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
//!
//! The machine's answers live in child files: `answers` (JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup answers, and the error codes they share) and `keepalive`
//! (rule 15's keep-alive heartbeats).

use std::time::{Duration, Instant};

use crate::backoff::Backoff;

mod answers;
mod keepalive;

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

    /// What to do now. One arm per phase: the machine's table of transitions, kept whole
    /// so every phase's next call reads side by side.
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
}
