//! The member's calls to the group coordinator (JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) through [`Client::group_call`], each built from the machine's call at the
//! version the coordinator offers and read back into the machine's answer.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::group::membership::{
    HeartbeatCall, JoinAnswer, JoinCall, Joined, JoinedMember, LeaveCall, MembershipConfig,
    SyncCall,
};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn ms(d: Duration) -> i32 {
    // validate() bounds the timeouts to i32 milliseconds.
    d.as_millis().min(i32::MAX as u128) as i32
}

fn static_needs(api: ApiKey, version: i16, min: i16) -> Result<()> {
    if version < min {
        return Err(Error::invalid(format!(
            "static membership (group.instance.id) needs {api:?} v{min}+, the coordinator \
             offers v{version}"
        )));
    }
    Ok(())
}

fn code_error(code: i16, api: ApiKey) -> Error {
    Error::from_code(code)
        .unwrap_or_else(|| Error::protocol(format!("error code {code}")))
        .api(api)
}

pub(super) async fn join(
    client: &Client,
    cfg: &MembershipConfig,
    call: JoinCall,
    protocols: Vec<(String, Bytes)>,
) -> Result<JoinAnswer> {
    let protocols: Vec<JoinGroupRequestProtocol> = protocols
        .into_iter()
        .map(|(name, metadata)| {
            JoinGroupRequestProtocol::default()
                .with_name(sb(&name))
                .with_metadata(metadata)
        })
        .collect();
    let wait = cfg.rebalance_timeout.max(cfg.session_timeout);
    let resp: JoinGroupResponse = client
        .group_call(
            &cfg.group_id,
            wait,
            |r: &JoinGroupResponse| r.error_code,
            |v| {
                let mut r = JoinGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_session_timeout_ms(ms(cfg.session_timeout))
                    .with_member_id(sb(&call.member_id))
                    .with_protocol_type(sb(&cfg.protocol_type))
                    .with_protocols(protocols.clone());
                if v >= 1 {
                    r.rebalance_timeout_ms = ms(cfg.rebalance_timeout);
                }
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::JoinGroup, v, 5)?;
                    r.group_instance_id = Some(sb(id));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(JoinAnswer::Joined(joined(resp))),
        79 => Ok(JoinAnswer::MemberIdRequired(resp.member_id.to_string())),
        c => Err(code_error(c, ApiKey::JoinGroup)),
    }
}

/// A successful JoinGroup's answer: the generation, the leader, the protocol, and (for the
/// leader) every member's metadata.
fn joined(resp: JoinGroupResponse) -> Joined {
    Joined {
        member_id: resp.member_id.to_string(),
        generation: resp.generation_id,
        leader_id: resp.leader.to_string(),
        protocol: resp
            .protocol_name
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        protocol_type: resp.protocol_type.as_ref().map(ToString::to_string),
        skip_assignment: resp.skip_assignment,
        members: resp
            .members
            .into_iter()
            .map(|m| JoinedMember {
                member_id: m.member_id.to_string(),
                instance_id: m.group_instance_id.map(|s| s.to_string()),
                metadata: m.metadata,
            })
            .collect(),
    }
}

pub(super) async fn sync(
    client: &Client,
    cfg: &MembershipConfig,
    call: SyncCall,
    assignments: Vec<(String, Bytes)>,
) -> Result<Bytes> {
    let assignments: Vec<SyncGroupRequestAssignment> = assignments
        .into_iter()
        .map(|(member, bytes)| {
            SyncGroupRequestAssignment::default()
                .with_member_id(sb(&member))
                .with_assignment(bytes)
        })
        .collect();
    let wait = cfg.rebalance_timeout;
    let resp: SyncGroupResponse = client
        .group_call(
            &cfg.group_id,
            wait,
            |r: &SyncGroupResponse| r.error_code,
            |v| {
                let mut r = SyncGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_generation_id(call.generation)
                    .with_member_id(sb(&call.member_id))
                    .with_assignments(assignments.clone());
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::SyncGroup, v, 3)?;
                    r.group_instance_id = Some(sb(id));
                }
                if v >= 5 {
                    r.protocol_type = Some(sb(&cfg.protocol_type));
                    r.protocol_name = Some(sb(&call.protocol));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(resp.assignment),
        c => Err(code_error(c, ApiKey::SyncGroup)),
    }
}

pub(super) async fn heartbeat(
    client: &Client,
    cfg: &MembershipConfig,
    call: HeartbeatCall,
) -> Result<()> {
    let resp: HeartbeatResponse = client
        .group_call(
            &cfg.group_id,
            Duration::ZERO,
            |r: &HeartbeatResponse| r.error_code,
            |v| {
                let mut r = HeartbeatRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_generation_id(call.generation)
                    .with_member_id(sb(&call.member_id));
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::Heartbeat, v, 3)?;
                    r.group_instance_id = Some(sb(id));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(()),
        c => Err(code_error(c, ApiKey::Heartbeat)),
    }
}

pub(super) async fn leave(client: &Client, cfg: &MembershipConfig, call: LeaveCall) -> Result<()> {
    let resp: LeaveGroupResponse = client
        .group_call(
            &cfg.group_id,
            Duration::ZERO,
            |r: &LeaveGroupResponse| r.error_code,
            |_| {
                // LeaveGroup v3+ (the only versions this client sends): the batch form.
                let mut m = MemberIdentity::default().with_member_id(sb(&call.member_id));
                m.group_instance_id = call.instance_id.as_deref().map(sb);
                Ok(LeaveGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_members(vec![m]))
            },
        )
        .await?;
    if resp.error_code != 0 {
        return Err(code_error(resp.error_code, ApiKey::LeaveGroup));
    }
    match resp.members.iter().find(|m| m.error_code != 0) {
        Some(m) => Err(code_error(m.error_code, ApiKey::LeaveGroup)),
        None => Ok(()),
    }
}
