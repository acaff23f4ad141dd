//! The cluster metadata snapshot: brokers, topics, topic ids, partitions, leaders, epochs.

use std::collections::BTreeMap;
use std::time::Instant;

use kafka_protocol::messages::MetadataResponse;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use uuid::Uuid;

/// A broker as listed in Metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMeta {
    /// Node id.
    pub id: i32,
    /// Host name to connect to.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Rack, if configured.
    pub rack: Option<String>,
}

impl BrokerMeta {
    /// `host:port`.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    /// Partition index.
    pub partition: i32,
    /// Leader node id (-1 if there is none right now).
    pub leader: i32,
    /// Leader epoch (-1 if the broker does not report it).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
    /// The partition's error code in the Metadata response (0 = none).
    pub error_code: i16,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// Topic name.
    pub name: String,
    /// Topic id (nil if the broker does not report ids).
    pub id: Uuid,
    /// Internal topic (e.g. `__consumer_offsets`).
    pub is_internal: bool,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionMeta>,
}

/// An immutable snapshot of the cluster, shared by `Arc`.
#[derive(Debug, Clone)]
pub struct ClusterMetadata {
    /// Cluster id, if reported.
    pub cluster_id: Option<String>,
    /// Controller node id (-1 if unknown).
    pub controller_id: i32,
    /// Brokers by node id.
    pub brokers: BTreeMap<i32, BrokerMeta>,
    /// Topics by name (only those requested so far, unless a full refresh was done).
    pub topics: BTreeMap<String, TopicMeta>,
    /// When this snapshot was taken.
    pub fetched_at: Instant,
}

impl Default for ClusterMetadata {
    fn default() -> Self {
        ClusterMetadata {
            cluster_id: None,
            controller_id: -1,
            brokers: BTreeMap::new(),
            topics: BTreeMap::new(),
            fetched_at: Instant::now(),
        }
    }
}

impl ClusterMetadata {
    /// The partition's metadata, if known.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionMeta> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    /// A topic's name by id.
    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicMeta> {
        self.topics.values().find(|t| t.id == id)
    }

    /// Merges a Metadata response into a new snapshot. With `full` the topic list replaces
    /// ours; otherwise only the topics in the response are updated, and topics the broker
    /// says do not exist are dropped. Returns per-topic errors the response carried.
    pub(crate) fn merged(&self, resp: &MetadataResponse, full: bool) -> (Self, Vec<(String, i16)>) {
        let mut next = ClusterMetadata {
            cluster_id: resp.cluster_id.as_ref().map(|s| s.to_string()),
            controller_id: resp.controller_id.0,
            brokers: resp
                .brokers
                .iter()
                .map(|b| {
                    (
                        b.node_id.0,
                        BrokerMeta {
                            id: b.node_id.0,
                            host: b.host.to_string(),
                            port: b.port,
                            rack: b.rack.as_ref().map(|r| r.to_string()),
                        },
                    )
                })
                .collect(),
            topics: if full {
                BTreeMap::new()
            } else {
                self.topics.clone()
            },
            fetched_at: Instant::now(),
        };
        let mut errors = Vec::new();
        for t in &resp.topics {
            let Some(name) = t.name.as_ref().map(|n| n.0.to_string()) else {
                continue;
            };
            if t.error_code != 0 {
                errors.push((name.clone(), t.error_code));
                // Keep stale data for transient errors; drop topics that are gone.
                if t.error_code == 3 || t.error_code == 100 {
                    next.topics.remove(&name);
                }
                continue;
            }
            let partitions = partitions_of(t);
            next.topics.insert(
                name.clone(),
                TopicMeta {
                    name,
                    id: t.topic_id,
                    is_internal: t.is_internal,
                    partitions,
                },
            );
        }
        (next, errors)
    }
}

/// A topic's partitions from its Metadata answer, by index.
fn partitions_of(t: &MetadataResponseTopic) -> BTreeMap<i32, PartitionMeta> {
    t.partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                PartitionMeta {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                    isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                    error_code: p.error_code,
                },
            )
        })
        .collect()
}
