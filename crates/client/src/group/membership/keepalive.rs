//! The keep-alive heartbeats a member sends while its JoinGroup or SyncGroup is in flight
//! (rule 15 of [`super`]): when one is due, what it carries, and what its answer does.

use std::time::Instant;

use kafka_protocol::ResponseError;

use super::{Call, GroupError, HeartbeatCall, Membership};
use crate::error::Error;

impl Membership {
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
}
