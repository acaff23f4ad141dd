//! Joining the flow's group: the member's settings (static with a fixed or host-name
//! instance id, else dynamic), and the check that refuses a group whose members run
//! another topology, saying why ([`refuse_disagreeing_group`], [`why_failed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32};

use strait_client::group::{GroupError, GroupMember, MembershipConfig};
use strait_client::protocol::ResponseError;

use super::{Scale, host_name};
use crate::config::scale_out::{InstanceId, ScaleOut};
use crate::config::{Cluster, Flow};
use crate::error::MirrorError;
use crate::scale::protocol::Worker;
use crate::scale::reconcile::Wanted;
use crate::scale::{MemberMetadata, PROTOCOL_NAME, PROTOCOL_TYPE, Topology};
use crate::state::StateTail;

impl Scale {
    /// Joins the flow's group on the `target` cluster; waits for nothing.
    pub(in crate::flow) async fn join(
        flow: &Flow,
        so: &ScaleOut,
        target: &Cluster,
    ) -> Result<Scale, MirrorError> {
        let host = host_name();
        let instance = match &so.instance_id {
            InstanceId::Fixed(id) => Some(id.clone()),
            InstanceId::HostName => host.clone(),
            InstanceId::Dynamic => None,
        };
        if instance.is_none() && so.instance_id == InstanceId::HostName {
            tracing::warn!(flow = %flow.name, "scale-out: no host name ($HOSTNAME, \
                /etc/hostname) for group.instance.id; joining as a dynamic member (every \
                restart rebalances)");
        }
        let mut cfg = MembershipConfig::new(&so.group, PROTOCOL_TYPE)
            .with_session_timeout(so.session_timeout)
            .with_rebalance_timeout(so.rebalance_timeout);
        if let Some(id) = &instance {
            cfg = cfg.with_instance_id(id);
        }
        let topology = so.slots.map(|slots| Topology {
            slots,
            transactional_id: flow.delivery.transactional_id.clone(),
        });
        let worker = Worker::new(host.unwrap_or_else(|| "unknown".into()), so.capacity)
            .with_topology(topology.as_ref());
        refuse_disagreeing_group(so, target, topology.as_ref()).await?;
        // Its own client id, so its connections are told apart from the data path's.
        let client = crate::connect::client_config(target)
            .with_client_id(format!("strait-group.{}", target.client_id))
            .with_security(target.security.to_client().map_err(|e| {
                MirrorError::kafka("scale-out group: security", e).cluster(&target.name)
            })?);
        let member = GroupMember::connect(client, cfg, worker.protocol())
            .await
            .map_err(|e| {
                MirrorError::kafka(format!("joining the scale-out group {}", so.group), e)
                    .cluster(&target.name)
            })?;
        tracing::info!(flow = %flow.name, group = %so.group, instance = ?instance,
            "scale-out: joining the flow's group");
        Ok(Scale {
            view: member.view(),
            rejoiner: member.rejoiner(),
            member: Some(member),
            worker,
            group: so.group.clone(),
            is_static: instance.is_some(),
            wanted: Wanted::none(),
            releasing: BTreeSet::new(),
            stale: BTreeSet::new(),
            writes: Arc::new(AtomicBool::new(false)),
            meter: BTreeMap::new(),
            stamp: Arc::new(AtomicI32::new(-1)),
            reported: None,
            leading: false,
            state: StateTail::new(flow),
        })
    }
}

/// Refuses to join `so.group` when its members run another topology (guarantee, slot
/// count, transactional id) or another Strait version, naming the difference and their
/// hosts. The coordinator refuses such a member anyway (INCONSISTENT_GROUP_PROTOCOL,
/// [`Topology`]); this says why. A group that cannot be described (not yet created,
/// rebalancing, not authorized) is left to the coordinator.
async fn refuse_disagreeing_group(
    so: &ScaleOut,
    target: &Cluster,
    ours: Option<&Topology>,
) -> Result<(), MirrorError> {
    let client = crate::connect::connect(target).await?;
    let described = client.describe_groups(&[so.group.as_str()]).await;
    let Some(group) = described.ok().and_then(|g| g.into_iter().next()) else {
        return Ok(());
    };
    let theirs = group.protocol_data.to_string();
    if group.error_code != 0 || group.protocol_type.as_str() != PROTOCOL_TYPE || theirs.is_empty() {
        return Ok(());
    }
    let hosts: Vec<String> = group
        .members
        .iter()
        .map(|m| {
            MemberMetadata::decode(&m.member_metadata)
                .map(|meta| meta.host)
                .unwrap_or_else(|_| m.client_host.to_string())
        })
        .collect();
    match Topology::disagreement(ours, &theirs, &hosts) {
        None => Ok(()),
        Some(why) => Err(MirrorError::config(format!(
            "scale-out group {}: refused to join: {why}",
            so.group
        ))
        .cluster(&target.name)),
    }
}

/// Why the membership stopped, for the flow's error: a refusal for speaking another
/// protocol (`ours` is this member's) says what to do.
pub(super) fn why_failed(e: &GroupError, ours: &str) -> String {
    match e {
        GroupError::Refused(k)
            if k.kafka_error() == Some(ResponseError::InconsistentGroupProtocol) =>
        {
            let what = Topology::describe(Topology::parse(ours).flatten().as_ref());
            format!(
                "{e}: the group's members disagree with this one (configured for {what}, \
                 protocol {PROTOCOL_NAME}): another slot count, transactional id, guarantee \
                 or Strait version. Every member must agree: stop every member, make their \
                 configurations and versions the same, then start them again"
            )
        }
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
