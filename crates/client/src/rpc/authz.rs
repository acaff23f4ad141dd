//! KIP-430 authorized operations: what the broker's authorizer lets this client do on topics,
//! on the cluster and on groups, asked without writing anything.
//!
//! - Topics: Metadata v8+ with `include_topic_authorized_operations`.
//! - Cluster: DescribeCluster (v0+, Kafka ≥ 2.8) with `include_cluster_authorized_operations`;
//!   where the broker lacks DescribeCluster, Metadata v8-10 with the same flag.
//! - Groups: DescribeGroups v3+ with `include_authorized_operations`.
//!
//! Each resource's answer is a bit field of [`AclOperation`] codes (bit `i` set = operation
//! `i` allowed). A broker without an authorizer, or one that does not implement KIP-430,
//! answers INT32 MIN ([`AuthorizedOps::NOT_REPORTED`]); so does a version too old to carry
//! the field. A field with bit 0 (`UNKNOWN`) or 1 (`ANY`) set is no real answer either —
//! Kafka never sets them; Tansu 0.6 answers DescribeGroups with -1, every bit. Those come
//! back as `None`, never as "nothing allowed" or "everything allowed". A resource the client
//! may not even describe (TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED) comes back as
//! `Some(AuthorizedOps::NONE)`.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DescribeClusterRequest, DescribeGroupsRequest, GroupId, MetadataRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{Client, CoordinatorType};
use crate::error::{Error, Result};

/// A Kafka ACL operation (the `AclOperation` codes of the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclOperation {
    /// `READ` (3): fetch, commit offsets as a group member.
    Read,
    /// `WRITE` (4): produce.
    Write,
    /// `CREATE` (5): create topics.
    Create,
    /// `DELETE` (6): delete topics or records.
    Delete,
    /// `ALTER` (7): e.g. CreatePartitions.
    Alter,
    /// `DESCRIBE` (8): metadata, offsets, group descriptions.
    Describe,
    /// `CLUSTER_ACTION` (9): broker-to-broker actions.
    ClusterAction,
    /// `DESCRIBE_CONFIGS` (10).
    DescribeConfigs,
    /// `ALTER_CONFIGS` (11): also IncrementalAlterConfigs.
    AlterConfigs,
    /// `IDEMPOTENT_WRITE` (12): InitProducerId without a transactional id.
    IdempotentWrite,
}

impl AclOperation {
    /// Every operation, in code order.
    pub const ALL: [AclOperation; 10] = [
        AclOperation::Read,
        AclOperation::Write,
        AclOperation::Create,
        AclOperation::Delete,
        AclOperation::Alter,
        AclOperation::Describe,
        AclOperation::ClusterAction,
        AclOperation::DescribeConfigs,
        AclOperation::AlterConfigs,
        AclOperation::IdempotentWrite,
    ];

    /// The protocol code (the bit number in an authorized-operations field).
    pub fn code(self) -> u32 {
        match self {
            AclOperation::Read => 3,
            AclOperation::Write => 4,
            AclOperation::Create => 5,
            AclOperation::Delete => 6,
            AclOperation::Alter => 7,
            AclOperation::Describe => 8,
            AclOperation::ClusterAction => 9,
            AclOperation::DescribeConfigs => 10,
            AclOperation::AlterConfigs => 11,
            AclOperation::IdempotentWrite => 12,
        }
    }

    /// The name Kafka's tools use (`Read`, `DescribeConfigs`, …).
    pub fn name(self) -> &'static str {
        match self {
            AclOperation::Read => "Read",
            AclOperation::Write => "Write",
            AclOperation::Create => "Create",
            AclOperation::Delete => "Delete",
            AclOperation::Alter => "Alter",
            AclOperation::Describe => "Describe",
            AclOperation::ClusterAction => "ClusterAction",
            AclOperation::DescribeConfigs => "DescribeConfigs",
            AclOperation::AlterConfigs => "AlterConfigs",
            AclOperation::IdempotentWrite => "IdempotentWrite",
        }
    }
}

impl fmt::Display for AclOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The operations a broker reported as allowed on one resource (a KIP-430 bit field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorizedOps(i32);

impl AuthorizedOps {
    /// The field's value when the broker does not report authorized operations.
    pub const NOT_REPORTED: i32 = i32::MIN;

    /// Nothing allowed (the resource could not even be described).
    pub const NONE: AuthorizedOps = AuthorizedOps(0);

    /// Bit 2 is `ALL`; Kafka expands it, but a broker that sends it means everything.
    const ALL_BIT: u32 = 2;

    /// Bits 0 (`UNKNOWN`) and 1 (`ANY`): never set in a genuine answer.
    const BOGUS_BITS: i32 = 0b11;

    /// The reported field, or `None` when it is [`Self::NOT_REPORTED`] or sets the
    /// `UNKNOWN`/`ANY` bits (a broker filling the field without an authorizer).
    pub fn from_field(field: i32) -> Option<AuthorizedOps> {
        (field != Self::NOT_REPORTED && field & Self::BOGUS_BITS == 0)
            .then_some(AuthorizedOps(field))
    }

    /// DescribeCluster's `cluster_authorized_operations`: Kafka computes it only for a
    /// principal allowed to Describe the cluster and sends 0 to any other, so 0 says nothing
    /// about Create or IdempotentWrite (a principal granted them but not Describe gets 0):
    /// not reported, never "nothing allowed".
    pub fn from_describe_cluster(field: i32) -> Option<AuthorizedOps> {
        Self::from_field(field).filter(|ops| ops.0 != 0)
    }

    /// A field with exactly `ops` allowed (tests and fakes).
    pub fn of(ops: &[AclOperation]) -> AuthorizedOps {
        AuthorizedOps(ops.iter().fold(0, |b, op| b | (1 << op.code())))
    }

    /// The raw bit field.
    pub fn bits(self) -> i32 {
        self.0
    }

    /// Whether `op` is allowed.
    pub fn allows(self, op: AclOperation) -> bool {
        let has = |bit: u32| self.0 & (1 << bit) != 0;
        has(op.code()) || has(Self::ALL_BIT)
    }

    /// The allowed operations, in code order.
    pub fn operations(self) -> Vec<AclOperation> {
        AclOperation::ALL
            .into_iter()
            .filter(|op| self.allows(*op))
            .collect()
    }
}

fn is_code(code: i16, which: ResponseError) -> bool {
    ResponseError::try_from_code(code) == Some(which)
}

impl Client {
    /// The operations the client may perform on each of `topics` (Metadata v8+). Topics the
    /// broker does not know are absent; a topic it may not describe maps to
    /// `Some(AuthorizedOps::NONE)`; `None` means the broker did not report (no authorizer, no
    /// KIP-430, or a Metadata version below 8).
    pub async fn topic_authorized_operations(
        &self,
        topics: &[&str],
    ) -> Result<HashMap<String, Option<AuthorizedOps>>> {
        if topics.is_empty() {
            return Ok(HashMap::new());
        }
        let build = |v: i16| {
            let mut r = MetadataRequest::default().with_topics(Some(
                topics
                    .iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))
                    })
                    .collect(),
            ));
            if v >= 4 {
                r.allow_auto_topic_creation = false;
            }
            r.include_topic_authorized_operations = v >= 8;
            Ok(r)
        };
        let (_, _, resp) = self
            .with_retries("topic_authorized_operations", || self.send_any(build))
            .await?;
        let mut out = HashMap::new();
        for t in resp.topics {
            let Some(name) = t.name.map(|n| n.0.to_string()) else {
                continue;
            };
            if is_code(t.error_code, ResponseError::TopicAuthorizationFailed) {
                out.insert(name, Some(AuthorizedOps::NONE));
            } else if t.error_code == 0 {
                out.insert(
                    name,
                    AuthorizedOps::from_field(t.topic_authorized_operations),
                );
            }
        }
        Ok(out)
    }

    /// The operations the client may perform on the cluster resource, and whether the broker
    /// has DescribeCluster (Kafka ≥ 2.8, where it was asked; otherwise Metadata v8-10 was).
    /// `None` = not reported; CLUSTER_AUTHORIZATION_FAILED = `Some(AuthorizedOps::NONE)`.
    pub async fn cluster_authorized_operations(&self) -> Result<(Option<AuthorizedOps>, bool)> {
        let dc = self
            .with_retries("cluster_authorized_operations", || {
                self.send_any(|_| {
                    Ok(DescribeClusterRequest::default()
                        .with_include_cluster_authorized_operations(true))
                })
            })
            .await;
        match dc {
            Ok((_, _, r)) => {
                if is_code(r.error_code, ResponseError::ClusterAuthorizationFailed) {
                    return Ok((Some(AuthorizedOps::NONE), true));
                }
                Error::check_code(r.error_code, r.error_message.as_deref())
                    .map_err(|e| e.api(ApiKey::DescribeCluster))?;
                Ok((
                    AuthorizedOps::from_describe_cluster(r.cluster_authorized_operations),
                    true,
                ))
            }
            Err(e) if e.is_unsupported() => {
                let build = |v: i16| {
                    let mut r = MetadataRequest::default().with_topics(Some(Vec::new()));
                    if v >= 4 {
                        r.allow_auto_topic_creation = false;
                    }
                    r.include_cluster_authorized_operations = (8..=10).contains(&v);
                    Ok(r)
                };
                let (_, _, r) = self
                    .with_retries("cluster_authorized_operations", || self.send_any(build))
                    .await?;
                Ok((
                    AuthorizedOps::from_field(r.cluster_authorized_operations),
                    false,
                ))
            }
            Err(e) => Err(e),
        }
    }

    /// The operations the client may perform on each of `groups` (DescribeGroups v3+, at
    /// each group's coordinator). A group the client may not describe (also when
    /// FindCoordinator is refused) maps to `Some(AuthorizedOps::NONE)`; `None` = not reported.
    pub async fn group_authorized_operations(
        &self,
        groups: &[&str],
    ) -> Result<HashMap<String, Option<AuthorizedOps>>> {
        let mut out = HashMap::new();
        for g in groups {
            let resp = self
                .send_to_coordinator(
                    CoordinatorType::Group,
                    g,
                    Duration::ZERO,
                    |v| {
                        Ok(DescribeGroupsRequest::default()
                            .with_groups(vec![GroupId(StrBytes::from_string(g.to_string()))])
                            .with_include_authorized_operations(v >= 3))
                    },
                    |r| match r.groups.first().map(|x| x.error_code) {
                        Some(c @ (14..=16)) => Err(Error::from_code(c)
                            .unwrap_or_else(|| Error::protocol("unreachable"))
                            .api(ApiKey::DescribeGroups)),
                        _ => Ok(()),
                    },
                )
                .await;
            let resp = match resp {
                Ok(r) => r,
                Err(e) if e.kafka_error() == Some(ResponseError::GroupAuthorizationFailed) => {
                    out.insert(g.to_string(), Some(AuthorizedOps::NONE));
                    continue;
                }
                Err(e) => return Err(e),
            };
            for d in resp.groups {
                let ops = if is_code(d.error_code, ResponseError::GroupAuthorizationFailed) {
                    Some(AuthorizedOps::NONE)
                } else {
                    Error::check_code(d.error_code, None).map_err(|e| {
                        e.api(ApiKey::DescribeGroups)
                            .message(format!("group {}", d.group_id.0.as_str()))
                    })?;
                    AuthorizedOps::from_field(d.authorized_operations)
                };
                out.insert(d.group_id.0.to_string(), ops);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
