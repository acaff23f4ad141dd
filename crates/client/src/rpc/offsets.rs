//! ListOffsets, OffsetCommit, OffsetFetch.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, GroupId, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Purpose;
use crate::client::{Client, CoordinatorType};
use crate::error::{Error, ErrorKind, Result};
use crate::rpc::fetch::IsolationLevel;

/// Which offset ListOffsets should return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (high watermark, or LSO when read-committed). Tansu 0.6 answers the
    /// last batch's base offset + 1 here; the Fetch high watermark is right.
    Latest,
    /// The offset of the record with the largest timestamp.
    MaxTimestamp,
    /// The first offset whose timestamp is ≥ this (ms since the epoch).
    Timestamp(i64),
}

impl OffsetSpec {
    fn code(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::MaxTimestamp => -3,
            OffsetSpec::Timestamp(t) => t,
        }
    }
}

/// A ListOffsets answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// Partition index.
    pub partition: i32,
    /// The offset (-1 if none matches).
    pub offset: i64,
    /// The timestamp of that record (-1 for Earliest/Latest).
    pub timestamp: i64,
    /// The leader epoch of that record (-1 if unknown).
    pub leader_epoch: i32,
}

/// An offset to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOffset {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The next offset the group should read.
    pub offset: i64,
    /// Leader epoch of the last consumed record (-1 if unknown).
    pub leader_epoch: i32,
    /// Free-form metadata.
    pub metadata: Option<String>,
}

impl CommitOffset {
    /// An offset with no epoch or metadata.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> Self {
        CommitOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: None,
        }
    }
}

/// A committed offset read back with OffsetFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The committed offset (-1 = none committed).
    pub offset: i64,
    /// The committed leader epoch (-1 if none).
    pub leader_epoch: i32,
    /// The committed metadata.
    pub metadata: Option<String>,
}

/// Group membership to commit under; [`GroupMember::standalone`] for a commit outside any
/// generation (what a replicator does for groups without members).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// Generation id (-1 for standalone).
    pub generation_id: i32,
    /// Member id ("" for standalone).
    pub member_id: String,
    /// Static membership instance id.
    pub group_instance_id: Option<String>,
}

impl GroupMember {
    /// A commit outside any generation.
    pub fn standalone() -> Self {
        GroupMember {
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

impl Client {
    /// ListOffsets for partitions of `topic`, each sent to its leader; retried on retriable
    /// errors (leader moves refresh metadata). Results are in partition order.
    pub async fn list_offsets(
        &self,
        topic: &str,
        partitions: &[(i32, OffsetSpec)],
        isolation: IsolationLevel,
    ) -> Result<Vec<ListedOffset>> {
        self.with_retries("list_offsets", || async {
            // Group by leader so each broker gets one request.
            let mut by_leader: BTreeMap<i32, Vec<(i32, OffsetSpec, i32)>> = BTreeMap::new();
            for &(p, spec) in partitions {
                let (leader, epoch) = self.leader_for(topic, p).await?;
                by_leader.entry(leader).or_default().push((p, spec, epoch));
            }
            let mut out = Vec::new();
            for (leader, parts) in by_leader {
                let b = self.broker(leader)?;
                let (_, resp) = self
                    .send_built(&b, Purpose::Control, b.request_timeout(), |v| {
                        let ps = parts
                            .iter()
                            .map(|&(p, spec, epoch)| {
                                ListOffsetsPartition::default()
                                    .with_partition_index(p)
                                    .with_current_leader_epoch(if v >= 4 { epoch } else { -1 })
                                    .with_timestamp(spec.code())
                            })
                            .collect();
                        Ok(ListOffsetsRequest::default()
                            .with_replica_id(BrokerId(-1))
                            .with_isolation_level(isolation.code())
                            .with_topics(vec![
                                ListOffsetsTopic::default()
                                    .with_name(topic_name(topic))
                                    .with_partitions(ps),
                            ]))
                    })
                    .await?;
                for t in resp.topics {
                    for p in t.partitions {
                        Error::check_code(p.error_code, None).map_err(|e| {
                            e.broker(leader).topic(topic).partition(p.partition_index)
                        })?;
                        out.push(ListedOffset {
                            partition: p.partition_index,
                            offset: p.offset,
                            timestamp: p.timestamp,
                            leader_epoch: p.leader_epoch,
                        });
                    }
                }
            }
            out.sort_by_key(|o| o.partition);
            Ok(out)
        })
        .await
    }

    /// Commits offsets for `group` at its coordinator. Fails with the first partition error.
    pub async fn offset_commit(
        &self,
        group: &str,
        member: &GroupMember,
        offsets: &[CommitOffset],
    ) -> Result<()> {
        let build = |v: i16| {
            let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
            for o in offsets {
                let p = OffsetCommitRequestPartition::default()
                    .with_partition_index(o.partition)
                    .with_committed_offset(o.offset)
                    .with_committed_leader_epoch(if v >= 6 { o.leader_epoch } else { -1 })
                    .with_committed_metadata(Some(StrBytes::from_string(
                        o.metadata.clone().unwrap_or_default(),
                    )));
                match topics.iter_mut().find(|t| *t.name.0 == *o.topic) {
                    Some(t) => t.partitions.push(p),
                    None => topics.push(
                        OffsetCommitRequestTopic::default()
                            .with_name(topic_name(&o.topic))
                            .with_partitions(vec![p]),
                    ),
                }
            }
            let mut r = OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_generation_id_or_member_epoch(member.generation_id)
                .with_member_id(StrBytes::from_string(member.member_id.clone()))
                .with_topics(topics);
            if v >= 7 {
                r.group_instance_id = member.group_instance_id.clone().map(StrBytes::from_string);
            }
            if v <= 4 {
                r.retention_time_ms = -1;
            }
            Ok(r)
        };
        self.send_to_coordinator(CoordinatorType::Group, group, Duration::ZERO, build, |r| {
            for t in &r.topics {
                for p in &t.partitions {
                    Error::check_code(p.error_code, None).map_err(|e| {
                        e.api(ApiKey::OffsetCommit)
                            .topic(t.name.0.to_string())
                            .partition(p.partition_index)
                    })?;
                }
            }
            Ok(())
        })
        .await
        .map(|_| ())
    }

    /// Reads `group`'s committed offsets: for the given `(topic, partitions)` or, with `None`,
    /// for every partition the group has committed (offsets of -1 are left out then).
    pub async fn offset_fetch(
        &self,
        group: &str,
        topics: Option<&[(&str, &[i32])]>,
    ) -> Result<Vec<CommittedOffset>> {
        match self.offset_fetch_once(group, topics).await {
            // Tansu 0.6 answers "all topics" with a null topics array, which the protocol
            // does not allow; ask for every known topic explicitly instead.
            Err(e) if topics.is_none() && matches!(e.kind(), ErrorKind::Protocol(_)) => {
                tracing::debug!(error = %e, "OffsetFetch(all) undecodable; asking per topic");
                let meta = self.metadata(None).await?;
                let parts: Vec<(String, Vec<i32>)> = meta
                    .topics
                    .values()
                    .filter(|t| !t.is_internal)
                    .map(|t| (t.name.clone(), t.partitions.keys().copied().collect()))
                    .collect();
                let refs: Vec<(&str, &[i32])> = parts
                    .iter()
                    .map(|(t, p)| (t.as_str(), p.as_slice()))
                    .collect();
                let all = self.offset_fetch_once(group, Some(&refs)).await?;
                Ok(all.into_iter().filter(|o| o.offset >= 0).collect())
            }
            r => r,
        }
    }

    async fn offset_fetch_once(
        &self,
        group: &str,
        topics: Option<&[(&str, &[i32])]>,
    ) -> Result<Vec<CommittedOffset>> {
        let build = |v: i16| {
            if topics.is_none() && v < 2 {
                return Err(Error::invalid(
                    "fetching all group offsets needs OffsetFetch v2+",
                ));
            }
            Ok(OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_topics(topics.map(|ts| {
                    ts.iter()
                        .map(|(t, ps)| {
                            OffsetFetchRequestTopic::default()
                                .with_name(topic_name(t))
                                .with_partition_indexes(ps.to_vec())
                        })
                        .collect()
                })))
        };
        let resp = self
            .send_to_coordinator(CoordinatorType::Group, group, Duration::ZERO, build, |r| {
                Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::OffsetFetch))
            })
            .await?;
        let mut out = Vec::new();
        for t in resp.topics {
            for p in t.partitions {
                Error::check_code(p.error_code, None).map_err(|e| {
                    e.api(ApiKey::OffsetFetch)
                        .topic(t.name.0.to_string())
                        .partition(p.partition_index)
                })?;
                out.push(CommittedOffset {
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.metadata.map(|m| m.to_string()),
                });
            }
        }
        Ok(out)
    }
}
