//! The scale-out group as the target cluster's group coordinator reports it (DescribeGroups):
//! its state, its members and, decoded with Strait's own assignment codec
//! (`strait_mirror::scale::MemberAssignment`), which source partitions each owns. This is
//! Kafka's record of the assignment, not what the workers say about themselves.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::{Client, ClientConfig};
use strait_mirror::scale::MemberAssignment;

/// One member of the group.
#[derive(Debug, Clone)]
pub struct Member {
    /// The coordinator's member id.
    pub member_id: String,
    /// `group.instance.id` (static membership).
    pub instance_id: Option<String>,
    /// The assignment the leader gave it, decoded (an error: the bytes did not decode).
    pub assignment: Result<MemberAssignment, String>,
}

/// A described group.
#[derive(Debug, Clone)]
pub struct Group {
    /// `Stable`, `PreparingRebalance`, `CompletingRebalance`, `Empty`, `Dead`.
    pub state: String,
    /// The protocol type (Strait's: `strait`).
    pub protocol_type: String,
    /// Its members.
    pub members: Vec<Member>,
}

/// Describes `group` at `bootstrap`'s coordinator; `None` if that fails.
pub fn describe(bootstrap: &str, group: &str) -> Option<Group> {
    crate::runtime().block_on(async {
        let config = ClientConfig::new([bootstrap])
            .with_connect_timeout(Duration::from_secs(2))
            .with_request_timeout(Duration::from_secs(5));
        let client = Client::connect(config).await.ok()?;
        let described = client.describe_groups(&[group]).await.ok()?;
        let g = described.into_iter().next()?;
        Some(Group {
            state: g.group_state.to_string(),
            protocol_type: g.protocol_type.to_string(),
            members: g
                .members
                .into_iter()
                .map(|m| Member {
                    member_id: m.member_id.to_string(),
                    instance_id: m.group_instance_id.map(|i| i.to_string()),
                    assignment: if m.member_assignment.is_empty() {
                        Ok(MemberAssignment::default())
                    } else {
                        MemberAssignment::decode(&m.member_assignment).map_err(|e| e.to_string())
                    },
                })
                .collect(),
        })
    })
}

impl Group {
    /// Per partition of `topic`, the instance ids (member ids when none) that own it.
    pub fn owners(&self, topic: &str) -> BTreeMap<i32, Vec<String>> {
        let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for m in &self.members {
            let name = m.instance_id.clone().unwrap_or_else(|| m.member_id.clone());
            if let Ok(a) = &m.assignment {
                for p in a.partitions.iter().filter(|p| &*p.topic == topic) {
                    out.entry(p.partition).or_default().push(name.clone());
                }
            }
        }
        out
    }

    /// Settled: `Stable` with `members` members, every assignment decoded and none with
    /// partitions left to release, and each of `topic`'s partitions `0..partitions` owned
    /// by exactly one member.
    pub fn settled(&self, topic: &str, partitions: i32, members: usize) -> bool {
        let owners = self.owners(topic);
        self.state == "Stable"
            && self.members.len() == members
            && self
                .members
                .iter()
                .all(|m| m.assignment.as_ref().is_ok_and(|a| a.revoked.is_empty()))
            && owners.len() == partitions as usize
            && (0..partitions).all(|p| owners.get(&p).is_some_and(|o| o.len() == 1))
    }

    /// The partitions of `topic` each member owns, by instance id.
    pub fn by_member(&self, topic: &str) -> BTreeMap<String, Vec<i32>> {
        let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (p, owners) in self.owners(topic) {
            for o in owners {
                out.entry(o).or_default().push(p);
            }
        }
        out
    }
}
