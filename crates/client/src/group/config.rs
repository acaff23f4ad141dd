//! [`MembershipConfig`]: a member's identity and timings, checked by
//! [`MembershipConfig::validate`].

use std::time::Duration;

use crate::backoff::BackoffConfig;
use crate::error::Error;

/// Timing and identity of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipConfig {
    /// The group id.
    pub group_id: String,
    /// The protocol type every member of the group uses (`strait` for Strait, `connect`
    /// for Kafka Connect, `consumer` for consumers).
    pub protocol_type: String,
    /// `group.instance.id` for static membership (KIP-345); `None` for a dynamic member.
    pub instance_id: Option<String>,
    /// How long the coordinator waits for a heartbeat before expelling the member.
    pub session_timeout: Duration,
    /// How long the coordinator waits for every member to rejoin during a rebalance.
    pub rebalance_timeout: Duration,
    /// Time between heartbeats.
    pub heartbeat_interval: Duration,
    /// How long before the coordinator could expel us we stop owning the assignment.
    pub fence_margin: Duration,
    /// Retry timing for retriable failures.
    pub backoff: BackoffConfig,
}

impl MembershipConfig {
    /// A dynamic member of `group_id` with Kafka Connect's timings (session 10 s, rebalance
    /// 60 s, heartbeat 3 s) and a fence margin of a third of the session timeout.
    pub fn new(group_id: impl Into<String>, protocol_type: impl Into<String>) -> Self {
        MembershipConfig {
            group_id: group_id.into(),
            protocol_type: protocol_type.into(),
            instance_id: None,
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(3),
            fence_margin: Duration::from_millis(3333),
            backoff: BackoffConfig::default(),
        }
    }

    /// Makes the member static with this `group.instance.id`.
    pub fn with_instance_id(mut self, id: impl Into<String>) -> Self {
        self.instance_id = Some(id.into());
        self
    }

    /// Sets the session timeout, and the heartbeat interval (a tenth of it) and fence margin
    /// (a third of it) derived from it.
    pub fn with_session_timeout(mut self, t: Duration) -> Self {
        self.session_timeout = t;
        self.heartbeat_interval = t / 10;
        self.fence_margin = t / 3;
        self
    }

    /// Sets the rebalance timeout.
    pub fn with_rebalance_timeout(mut self, t: Duration) -> Self {
        self.rebalance_timeout = t;
        self
    }

    /// Checks the timings fit together: a non-empty group id and protocol type, a fence
    /// margin below the session timeout, and at least two heartbeats within the time the
    /// member owns its assignment after one (`session_timeout − fence_margin`).
    pub fn validate(&self) -> Result<(), Error> {
        if self.group_id.is_empty() {
            return Err(Error::invalid("the group id is empty"));
        }
        if self.protocol_type.is_empty() {
            return Err(Error::invalid("the protocol type is empty"));
        }
        if self.instance_id.as_deref() == Some("") {
            return Err(Error::invalid("the group.instance.id is empty"));
        }
        if self.fence_margin >= self.session_timeout {
            return Err(Error::invalid(format!(
                "the fence margin ({:?}) must be below the session timeout ({:?})",
                self.fence_margin, self.session_timeout
            )));
        }
        let owned = self.session_timeout - self.fence_margin;
        if self.heartbeat_interval.is_zero() || self.heartbeat_interval * 2 > owned {
            return Err(Error::invalid(format!(
                "the heartbeat interval ({:?}) must be positive and fit twice in session \
                 timeout minus fence margin ({owned:?})",
                self.heartbeat_interval
            )));
        }
        for (what, t) in [
            ("session timeout", self.session_timeout),
            ("rebalance timeout", self.rebalance_timeout),
        ] {
            if t.as_millis() > i32::MAX as u128 || t.is_zero() {
                return Err(Error::invalid(format!(
                    "the {what} ({t:?}) is out of range"
                )));
            }
        }
        Ok(())
    }
}
