//! Consumer-group RPCs: ListGroups, DescribeGroups, ConsumerGroupDescribe, JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup.
//!
//! Membership calls take kafka-protocol's request types (re-exported as
//! [`crate::protocol`]): the client routes them to the group coordinator, rediscovers it on
//! NOT_COORDINATOR, and turns error codes into [`crate::error::Error`]s.

use std::time::Duration;

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerGroup;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, ListGroupsRequest,
    SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Purpose;
use crate::client::{Client, CoordinatorType};
use crate::error::{Error, Result};

/// A group as listed by ListGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// Group id.
    pub group_id: String,
    /// Protocol type ("consumer" for Kafka consumers, "" for offsets-only groups).
    pub protocol_type: String,
    /// State (v4+; empty if the broker did not report it).
    pub state: String,
    /// Type (v5+: `classic`, `consumer` for KIP-848 groups, `share`, `streams`; empty if
    /// the broker did not report it).
    pub group_type: String,
    /// The broker that coordinates the group.
    pub coordinator: i32,
}

/// MEMBER_ID_REQUIRED: KIP-394's first JoinGroup answer, carrying the id to rejoin with.
const MEMBER_ID_REQUIRED: i16 = 79;

impl Client {
    /// Lists the groups of every broker in the cluster.
    pub async fn list_groups(&self) -> Result<Vec<ListedGroup>> {
        let meta = self.refresh_metadata().await?;
        let mut out = Vec::new();
        for &id in meta.brokers.keys() {
            let b = self.broker(id)?;
            let (_, resp) = self
                .with_retries("list_groups", || {
                    self.send_built(&b, Purpose::Control, b.request_timeout(), |_| {
                        Ok(ListGroupsRequest::default())
                    })
                })
                .await?;
            Error::check_code(resp.error_code, None)
                .map_err(|e| e.api(ApiKey::ListGroups).broker(id))?;
            out.extend(resp.groups.into_iter().map(|g| ListedGroup {
                group_id: g.group_id.0.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: g.group_state.to_string(),
                group_type: g.group_type.to_string(),
                coordinator: id,
            }));
        }
        Ok(out)
    }

    /// Describes groups (each at its coordinator). Per-group error codes are in the result.
    pub async fn describe_groups(&self, groups: &[&str]) -> Result<Vec<DescribedGroup>> {
        let mut out = Vec::new();
        for g in groups {
            let resp = self
                .send_to_coordinator(
                    CoordinatorType::Group,
                    g,
                    Duration::ZERO,
                    |_| {
                        Ok(DescribeGroupsRequest::default()
                            .with_groups(vec![GroupId(StrBytes::from_string(g.to_string()))]))
                    },
                    |r| {
                        // A moved coordinator shows up per group.
                        match r.groups.first().map(|x| x.error_code) {
                            Some(c @ (14..=16)) => Err(Error::from_code(c)
                                .unwrap_or_else(|| Error::protocol("unreachable"))
                                .api(ApiKey::DescribeGroups)),
                            _ => Ok(()),
                        }
                    },
                )
                .await?;
            out.extend(resp.groups);
        }
        Ok(out)
    }

    /// Describes consumer-protocol (KIP-848) groups with ConsumerGroupDescribe, each at its
    /// coordinator; per-group error codes are in the result (Kafka answers
    /// GROUP_ID_NOT_FOUND for a group that is not a consumer-protocol group). A broker
    /// without the API (before Kafka 3.7, Tansu) gives an error for which
    /// [`Error::is_unsupported`] is true.
    pub async fn consumer_group_describe(&self, groups: &[&str]) -> Result<Vec<ConsumerGroup>> {
        let mut out = Vec::new();
        for g in groups {
            let resp = self
                .send_to_coordinator(
                    CoordinatorType::Group,
                    g,
                    Duration::ZERO,
                    |_| {
                        Ok(ConsumerGroupDescribeRequest::default()
                            .with_group_ids(vec![GroupId(StrBytes::from_string(g.to_string()))]))
                    },
                    |r| match r.groups.first().map(|x| x.error_code) {
                        Some(c @ (14..=16)) => Err(Error::from_code(c)
                            .unwrap_or_else(|| Error::protocol("unreachable"))
                            .api(ApiKey::ConsumerGroupDescribe)),
                        _ => Ok(()),
                    },
                )
                .await?;
            out.extend(resp.groups);
        }
        Ok(out)
    }

    /// JoinGroup at the group's coordinator. Handles MEMBER_ID_REQUIRED by rejoining with the
    /// assigned member id. Waits up to the rebalance timeout.
    pub async fn join_group(&self, req: JoinGroupRequest) -> Result<JoinGroupResponse> {
        let group = req.group_id.0.to_string();
        let wait = Duration::from_millis(
            req.rebalance_timeout_ms.max(req.session_timeout_ms).max(0) as u64,
        );
        let mut req = req;
        for _ in 0..2 {
            let resp = self
                .send_to_coordinator(
                    CoordinatorType::Group,
                    &group,
                    wait,
                    |_| Ok(req.clone()),
                    |r| match r.error_code {
                        MEMBER_ID_REQUIRED => Ok(()),
                        c => Error::check_code(c, None).map_err(|e| e.api(ApiKey::JoinGroup)),
                    },
                )
                .await?;
            if resp.error_code == MEMBER_ID_REQUIRED {
                req.member_id = resp.member_id.clone();
                continue;
            }
            return Ok(resp);
        }
        Err(Error::protocol("JoinGroup asked for a member id twice"))
    }

    /// SyncGroup at the group's coordinator.
    pub async fn sync_group(&self, req: SyncGroupRequest) -> Result<SyncGroupResponse> {
        let group = req.group_id.0.to_string();
        self.send_to_coordinator(
            CoordinatorType::Group,
            &group,
            Duration::ZERO,
            |_| Ok(req.clone()),
            |r| Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::SyncGroup)),
        )
        .await
    }

    /// Heartbeat at the group's coordinator. REBALANCE_IN_PROGRESS comes back as an error
    /// (code 27): the member must rejoin.
    pub async fn heartbeat(&self, req: HeartbeatRequest) -> Result<HeartbeatResponse> {
        let group = req.group_id.0.to_string();
        self.send_to_coordinator(
            CoordinatorType::Group,
            &group,
            Duration::ZERO,
            |_| Ok(req.clone()),
            |r| Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::Heartbeat)),
        )
        .await
    }

    /// Sends a membership request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) to the
    /// group's coordinator and returns the answer with its error code left for the caller's
    /// state machine ([`crate::group::Membership`]). Only coordinator moves
    /// (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) and
    /// network errors are retried here, rediscovering the coordinator, until the retry
    /// timeout. `wait` is added to the request timeout (a JoinGroup is answered when the
    /// rebalance completes); `code` reads the answer's error code; `build` gets the
    /// negotiated version.
    pub async fn group_call<R, F>(
        &self,
        group: &str,
        wait: Duration,
        code: fn(&R::Response) -> i16,
        build: F,
    ) -> Result<R::Response>
    where
        R: crate::frame::Request,
        F: Fn(i16) -> Result<R>,
    {
        self.send_to_coordinator(CoordinatorType::Group, group, wait, build, |r| {
            match code(r) {
                c @ (14..=16) => Err(Error::from_code(c)
                    .unwrap_or_else(|| Error::protocol("unreachable"))
                    .api(R::KEY)),
                _ => Ok(()),
            }
        })
        .await
    }

    /// Removes members from a group (LeaveGroup v3+, batch form).
    pub async fn leave_group(&self, group: &str, member_ids: &[&str]) -> Result<()> {
        let members: Vec<MemberIdentity> = member_ids
            .iter()
            .map(|m| MemberIdentity::default().with_member_id(StrBytes::from_string(m.to_string())))
            .collect();
        let resp = self
            .send_to_coordinator(
                CoordinatorType::Group,
                group,
                Duration::ZERO,
                |_| {
                    Ok(LeaveGroupRequest::default()
                        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                        .with_members(members.clone()))
                },
                |r| Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::LeaveGroup)),
            )
            .await?;
        for m in resp.members {
            Error::check_code(m.error_code, None).map_err(|e| {
                e.api(ApiKey::LeaveGroup)
                    .message(format!("member {}", m.member_id.as_str()))
            })?;
        }
        Ok(())
    }
}
