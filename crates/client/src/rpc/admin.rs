//! Admin RPCs: CreateTopics, CreatePartitions, DeleteTopics, DescribeConfigs,
//! IncrementalAlterConfigs, DescribeCluster.

use std::time::Duration;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::Client;
use crate::error::{Error, Result};

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count (-1 = broker default).
    pub partitions: i32,
    /// Replication factor (-1 = broker default).
    pub replication_factor: i16,
    /// Topic configs (`name`, `value`).
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    /// A topic with `partitions` partitions and the broker's default replication factor.
    pub fn new(name: impl Into<String>, partitions: i32) -> Self {
        NewTopic {
            name: name.into(),
            partitions,
            replication_factor: -1,
            configs: Vec::new(),
        }
    }

    /// Adds a config entry.
    pub fn with_config(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((name.into(), value.into()));
        self
    }

    /// Sets the replication factor.
    pub fn with_replication_factor(mut self, rf: i16) -> Self {
        self.replication_factor = rf;
        self
    }
}

/// The per-topic outcome of an admin call (`Err` carries the Kafka code and message).
pub type TopicResult = (String, Result<()>);

/// A config resource kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    /// A topic.
    Topic,
    /// A broker (Tansu 0.6 never answers for this one).
    Broker,
}

impl ResourceType {
    fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Broker => 4,
        }
    }
}

/// One config entry from DescribeConfigs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Config name.
    pub name: String,
    /// Value (`None` if sensitive or unset).
    pub value: Option<String>,
    /// Read-only.
    pub read_only: bool,
    /// Kafka's config source code (1 = dynamic topic config, 5 = static broker, 6 = default…).
    pub source: i8,
    /// True when the value is the default (source 5 or 6, or -1 unknown with v0 semantics).
    pub is_default: bool,
    /// Sensitive.
    pub is_sensitive: bool,
}

/// The configs of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceConfigs {
    /// Resource name.
    pub name: String,
    /// Entries.
    pub entries: Vec<ConfigEntry>,
}

/// An IncrementalAlterConfigs operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterConfigOp {
    /// Set `name` to `value`.
    Set(String, String),
    /// Reset `name` to its default.
    Delete(String),
    /// Append to a list config.
    Append(String, String),
    /// Remove from a list config.
    Subtract(String, String),
}

fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One topic of a CreatePartitions request: grow `topic` to `count` partitions and let the
/// controller place them. The assignments must be null, not an empty array: Kafka reads an
/// empty array as "0 assignments given" and refuses the request (INVALID_REPLICA_ASSIGNMENT,
/// "Attempted to add 2 additional partition(s), but only 0 assignment(s) were specified").
fn grow_topic(topic: &str, count: i32) -> CreatePartitionsTopic {
    CreatePartitionsTopic::default()
        .with_name(TopicName(name(topic)))
        .with_count(count)
        .with_assignments(None)
}

fn topic_err(code: i16, msg: Option<&StrBytes>, api: ApiKey, topic: &str) -> Result<()> {
    Error::check_code(code, msg.map(|m| m.as_str())).map_err(|e| e.api(api).topic(topic))
}

impl Client {
    /// Creates topics. Per-topic outcomes; TOPIC_ALREADY_EXISTS (36) is reported, not hidden.
    pub async fn create_topics(
        &self,
        topics: &[NewTopic],
        timeout: Duration,
    ) -> Result<Vec<TopicResult>> {
        let tmo = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let resp = self
            .with_retries("create_topics", || {
                self.send_to_controller(|_| {
                    Ok(CreateTopicsRequest::default()
                        .with_timeout_ms(tmo)
                        .with_topics(
                            topics
                                .iter()
                                .map(|t| {
                                    CreatableTopic::default()
                                        .with_name(TopicName(name(&t.name)))
                                        .with_num_partitions(t.partitions)
                                        .with_replication_factor(t.replication_factor)
                                        .with_configs(
                                            t.configs
                                                .iter()
                                                .map(|(k, v)| {
                                                    CreatableTopicConfig::default()
                                                        .with_name(name(k))
                                                        .with_value(Some(name(v)))
                                                })
                                                .collect(),
                                        )
                                })
                                .collect(),
                        ))
                })
            })
            .await?;
        self.invalidate_metadata();
        Ok(resp
            .topics
            .into_iter()
            .map(|t| {
                let n = t.name.0.to_string();
                let r = topic_err(
                    t.error_code,
                    t.error_message.as_ref(),
                    ApiKey::CreateTopics,
                    &n,
                );
                (n, r)
            })
            .collect())
    }

    /// Grows topics to `(topic, new total partition count)`. Brokers without the API (Tansu
    /// 0.6) give an [`crate::error::ErrorKind::UnsupportedVersion`] error naming CreatePartitions.
    pub async fn create_partitions(
        &self,
        topics: &[(&str, i32)],
        timeout: Duration,
    ) -> Result<Vec<TopicResult>> {
        let tmo = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let resp = self
            .with_retries("create_partitions", || {
                self.send_to_controller(|_| {
                    Ok(CreatePartitionsRequest::default()
                        .with_timeout_ms(tmo)
                        .with_topics(topics.iter().map(|(t, n)| grow_topic(t, *n)).collect()))
                })
            })
            .await?;
        self.invalidate_metadata();
        Ok(resp
            .results
            .into_iter()
            .map(|t| {
                let n = t.name.0.to_string();
                let r = topic_err(
                    t.error_code,
                    t.error_message.as_ref(),
                    ApiKey::CreatePartitions,
                    &n,
                );
                (n, r)
            })
            .collect())
    }

    /// Deletes topics by name.
    pub async fn delete_topics(
        &self,
        topics: &[&str],
        timeout: Duration,
    ) -> Result<Vec<TopicResult>> {
        let tmo = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let resp = self
            .with_retries("delete_topics", || {
                self.send_to_controller(|v| {
                    let mut r = DeleteTopicsRequest::default().with_timeout_ms(tmo);
                    if v >= 6 {
                        r.topics = topics
                            .iter()
                            .map(|t| {
                                DeleteTopicState::default().with_name(Some(TopicName(name(t))))
                            })
                            .collect();
                    } else {
                        r.topic_names = topics.iter().map(|t| TopicName(name(t))).collect();
                    }
                    Ok(r)
                })
            })
            .await?;
        self.invalidate_metadata();
        Ok(resp
            .responses
            .into_iter()
            .map(|t| {
                let n = t.name.map(|n| n.0.to_string()).unwrap_or_default();
                let r = topic_err(
                    t.error_code,
                    t.error_message.as_ref(),
                    ApiKey::DeleteTopics,
                    &n,
                );
                (n, r)
            })
            .collect())
    }

    /// Describes the configs of resources of one kind. `keys = None` returns every config the
    /// broker reports (Tansu: only explicitly set topic configs). `keys` are filtered here
    /// rather than sent: Tansu 0.6 cannot parse a DescribeConfigs request with
    /// `configuration_keys` and drops the connection.
    pub async fn describe_configs(
        &self,
        kind: ResourceType,
        names: &[&str],
        keys: Option<&[&str]>,
    ) -> Result<Vec<ResourceConfigs>> {
        let resp = self
            .with_retries("describe_configs", || async {
                let (_, _, r) = self
                    .send_any(|_| {
                        Ok(DescribeConfigsRequest::default().with_resources(
                            names
                                .iter()
                                .map(|n| {
                                    DescribeConfigsResource::default()
                                        .with_resource_type(kind.code())
                                        .with_resource_name(name(n))
                                        .with_configuration_keys(None)
                                })
                                .collect(),
                        ))
                    })
                    .await?;
                Ok(r)
            })
            .await?;
        let mut out = Vec::new();
        for r in resp.results {
            let n = r.resource_name.to_string();
            Error::check_code(r.error_code, r.error_message.as_deref()).map_err(|e| {
                e.api(ApiKey::DescribeConfigs)
                    .message(format!("resource {n}"))
            })?;
            out.push(ResourceConfigs {
                name: n,
                entries: r
                    .configs
                    .into_iter()
                    .filter(|c| keys.is_none_or(|ks| ks.contains(&c.name.as_str())))
                    .map(|c| ConfigEntry {
                        name: c.name.to_string(),
                        value: c.value.map(|v| v.to_string()),
                        read_only: c.read_only,
                        source: c.config_source,
                        is_default: matches!(c.config_source, 5 | 6),
                        is_sensitive: c.is_sensitive,
                    })
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Applies config operations to one resource.
    pub async fn incremental_alter_configs(
        &self,
        kind: ResourceType,
        resource: &str,
        ops: &[AlterConfigOp],
    ) -> Result<()> {
        let configs: Vec<AlterableConfig> = ops
            .iter()
            .map(|op| {
                let (n, code, v) = match op {
                    AlterConfigOp::Set(n, v) => (n, 0, Some(v)),
                    AlterConfigOp::Delete(n) => (n, 1, None),
                    AlterConfigOp::Append(n, v) => (n, 2, Some(v)),
                    AlterConfigOp::Subtract(n, v) => (n, 3, Some(v)),
                };
                AlterableConfig::default()
                    .with_name(name(n))
                    .with_config_operation(code)
                    .with_value(v.map(|v| name(v)))
            })
            .collect();
        let resp = self
            .with_retries("incremental_alter_configs", || {
                self.send_to_controller(|_| {
                    Ok(
                        IncrementalAlterConfigsRequest::default().with_resources(vec![
                            AlterConfigsResource::default()
                                .with_resource_type(kind.code())
                                .with_resource_name(name(resource))
                                .with_configs(configs.clone()),
                        ]),
                    )
                })
            })
            .await?;
        for r in resp.responses {
            Error::check_code(r.error_code, r.error_message.as_deref()).map_err(|e| {
                e.api(ApiKey::IncrementalAlterConfigs)
                    .message(format!("resource {resource}"))
            })?;
        }
        Ok(())
    }

    /// DescribeCluster (cluster id, controller, brokers) from any broker.
    pub async fn describe_cluster(&self) -> Result<DescribeClusterResponse> {
        self.with_retries("describe_cluster", || async {
            let (_, _, r) = self
                .send_any(|_| Ok(DescribeClusterRequest::default()))
                .await?;
            Error::check_code(r.error_code, r.error_message.as_deref())
                .map_err(|e| e.api(ApiKey::DescribeCluster))?;
            Ok(r)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
