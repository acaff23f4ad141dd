//! The scale-out part of `strait status`: for a flow with `[flows.scale_out]`, its group
//! on the target as the coordinator describes it (DescribeGroups: the live members and
//! the group's state), and for each member what it reported in the state topic
//! (`strait_mirror::state::members`: host, version, capacity, generation, the partitions
//! it owns). A member without a report yet falls back to the metadata and assignment
//! DescribeGroups carries (Apache Kafka fills them; Tansu leaves them empty).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context as _;
use bytes::Bytes;
use serde::Serialize;
use strait_client::Client;
use strait_mirror::config::Flow;
use strait_mirror::scale::{MemberAssignment, MemberMetadata, PartitionId};

/// One member of the flow's group.
#[derive(Serialize, Debug)]
pub struct MemberStatus {
    /// The coordinator's member id.
    pub member_id: String,
    /// `group.instance.id` (static members).
    pub instance_id: Option<String>,
    /// The address the coordinator sees it connect from.
    pub client_host: String,
    /// The host name the worker reports.
    pub host: Option<String>,
    /// Its Strait version.
    pub version: Option<String>,
    /// Its relative capacity.
    pub capacity: Option<u32>,
    /// The generation in which it last claimed what it owns (-1: nothing).
    pub generation: Option<i32>,
    /// The source partitions it owns (`topic-partition`; those it is still releasing
    /// included).
    pub partitions: Vec<String>,
    /// Whether it runs the flow's control jobs.
    pub control: bool,
    /// Why its metadata or assignment did not decode, if so.
    pub problem: Option<String>,
}

/// The flow's group.
#[derive(Serialize, Debug)]
pub struct GroupStatus {
    /// The group id.
    pub group: String,
    /// The coordinator's state (`Stable`, `PreparingRebalance`, `Empty`, …).
    pub state: String,
    /// The highest generation a member last claimed in.
    pub generation: i32,
    /// The members.
    pub members: Vec<MemberStatus>,
}

impl GroupStatus {
    /// Which member owns each source partition (or exactly-once slot, topic `<slot>`),
    /// by (topic, partition).
    pub fn owners(&self) -> BTreeMap<(String, i32), String> {
        let mut out = BTreeMap::new();
        for m in &self.members {
            let name = m.instance_id.clone().unwrap_or_else(|| m.member_id.clone());
            for p in &m.partitions {
                if let Some((t, n)) = p.rsplit_once('-')
                    && let Ok(n) = n.parse()
                {
                    out.insert((t.to_owned(), n), name.clone());
                }
            }
        }
        out
    }

    /// The owner of source partition `topic`-`partition`: through its slot when the flow
    /// is exactly-once (`slots`).
    pub fn owner_of(
        owners: &BTreeMap<(String, i32), String>,
        topic: &str,
        partition: i32,
        slots: Option<u32>,
    ) -> Option<String> {
        let key = match slots {
            Some(n) => {
                let slot = strait_mirror::scale::slot_of(topic, partition, n);
                (strait_mirror::scale::SLOT_TOPIC.to_owned(), slot as i32)
            }
            None => (topic.to_owned(), partition),
        };
        owners.get(&key).cloned()
    }
}

/// The flow's group, or `None` without `[flows.scale_out]`.
pub async fn group_status(flow: &Flow, target: &Client) -> anyhow::Result<Option<GroupStatus>> {
    let Some(so) = &flow.scale_out else {
        return Ok(None);
    };
    let described = target
        .describe_groups(&[so.group.as_str()])
        .await
        .with_context(|| format!("describing group {} on {}", so.group, flow.target))?;
    let Some(g) = described.into_iter().next() else {
        anyhow::bail!("group {}: the coordinator described nothing", so.group);
    };
    if let Some(e) = strait_client::Error::from_code(g.error_code) {
        anyhow::bail!("group {}: {e}", so.group);
    }
    let reports = strait_mirror::state::members::read_members(target, flow)
        .await
        .with_context(|| format!("reading member reports from {}", flow.state_topic))?;
    let control = PartitionId::control(0);
    let mut members = Vec::new();
    for m in &g.members {
        let mut problem = Vec::new();
        let (meta, parts) = match reports.get(m.member_id.as_str()) {
            Some(r) => (Some(r.clone()), r.owned.clone()),
            None => from_group(&m.member_metadata, &m.member_assignment, &mut problem),
        };
        members.push(MemberStatus {
            member_id: m.member_id.to_string(),
            instance_id: m.group_instance_id.as_ref().map(ToString::to_string),
            client_host: m.client_host.to_string(),
            host: meta.as_ref().map(|x| x.host.clone()),
            version: meta.as_ref().map(|x| x.worker_version.clone()),
            capacity: meta.as_ref().map(|x| x.capacity),
            generation: meta.as_ref().map(|x| x.generation),
            control: parts.contains(&control),
            partitions: parts
                .iter()
                .filter(|p| !p.is_control())
                .map(ToString::to_string)
                .collect(),
            problem: (!problem.is_empty()).then(|| problem.join("; ")),
        });
    }
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    Ok(Some(GroupStatus {
        group: so.group.clone(),
        state: g.group_state.to_string(),
        generation: members
            .iter()
            .filter_map(|m| m.generation)
            .max()
            .unwrap_or(-1),
        members,
    }))
}

/// A member without a report, as its group metadata and assignment tell it; what does not
/// decode goes into `problem`.
fn from_group(
    metadata: &Bytes,
    assignment: &Bytes,
    problem: &mut Vec<String>,
) -> (Option<MemberMetadata>, Vec<PartitionId>) {
    let meta = MemberMetadata::decode(metadata);
    let assignment = MemberAssignment::decode(assignment);
    if let Err(e) = &meta {
        problem.push(format!("no report yet, and its group metadata: {e}"));
    }
    if let Err(e) = &assignment {
        problem.push(format!("assignment: {e}"));
    }
    (
        meta.ok(),
        assignment.map(|a| a.partitions).unwrap_or_default(),
    )
}

/// The group as text; `by_owner`: per member name, the source partitions it owns and
/// their lag (from the partition rows).
pub fn render(g: &GroupStatus, by_owner: &BTreeMap<String, (usize, i64)>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  group {} ({}), generation {}, {} member(s)",
        g.group,
        g.state,
        g.generation,
        g.members.len()
    );
    for m in &g.members {
        let name = m.instance_id.as_deref().unwrap_or(&m.member_id);
        let (owned, lag) = by_owner.get(name).copied().unwrap_or((0, 0));
        let _ = writeln!(
            out,
            "    {} host {}{}, version {}, capacity {}: {} partition(s){}, lag {} record(s){}",
            name,
            m.host.as_deref().unwrap_or("?"),
            if m.client_host.is_empty() {
                String::new()
            } else {
                format!(" ({})", m.client_host)
            },
            m.version.as_deref().unwrap_or("?"),
            m.capacity.map_or_else(|| "?".into(), |c| c.to_string()),
            owned,
            if m.control { " + control jobs" } else { "" },
            lag,
            m.problem
                .as_ref()
                .map(|p| format!(" — {p}"))
                .unwrap_or_default(),
        );
    }
    out
}
