//! Reading a cluster's topics and their explicitly set configs.

use std::collections::BTreeMap;

use strait_client::metadata::ClusterMetadata;
use strait_client::{Client, ConfigEntry, ResourceType};

use super::plan::TopicState;

/// Kafka's `DYNAMIC_TOPIC_CONFIG` config source: a value set on the topic itself.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;

/// Every topic in `meta`, without configs.
pub fn topic_states(meta: &ClusterMetadata) -> Vec<TopicState> {
    meta.topics
        .values()
        .map(|t| TopicState {
            name: t.name.clone(),
            partitions: i32::try_from(t.partitions.len()).unwrap_or(i32::MAX),
            internal: t.is_internal,
            configs: None,
        })
        .collect()
}

/// Fills in the configs of the `topics` whose names are in `names` (DescribeConfigs, one
/// request for all; one request per topic if that fails, so one bad topic does not hide
/// the others). A topic whose configs cannot be read keeps `None`: it is then neither
/// copied nor compared, and a warning says so.
pub async fn describe_topics(client: &Client, topics: &mut [TopicState], names: &[&str]) {
    if names.is_empty() {
        return;
    }
    let found = match client
        .describe_configs(ResourceType::Topic, names, None)
        .await
    {
        Ok(all) => all,
        Err(e) => {
            tracing::debug!(error = %e, "DescribeConfigs for many topics failed; asking one by one");
            let mut all = Vec::new();
            for n in names {
                match client
                    .describe_configs(ResourceType::Topic, &[n], None)
                    .await
                {
                    Ok(one) => all.extend(one),
                    Err(e) => tracing::warn!(topic = %n, error = %e,
                        "cannot read topic configs; they are not synced this round"),
                }
            }
            all
        }
    };
    for r in found {
        if let Some(t) = topics.iter_mut().find(|t| t.name == r.name) {
            t.configs = Some(explicit(&r.entries));
        }
    }
}

/// Fewer entries than this, none of them marked as set on the topic: a broker that lists
/// only explicitly set configs. Apache Kafka lists every topic config (more than 25).
const SPARSE_LISTING: usize = 16;

/// The configs set on the topic itself. Defaults, broker-level values, sensitive and
/// read-only entries are left out: copying a default would pin it on the target (MM2's
/// `use.defaults.from = target`). Brokers that report no source (-1/0) are trusted when
/// they do not flag the entry as default.
///
/// Tansu 0.6 lists only the configs set on the topic but labels them `DEFAULT_CONFIG`
/// (source 5); a short listing without any topic-level entry is read that way.
fn explicit(entries: &[ConfigEntry]) -> BTreeMap<String, String> {
    let sparse =
        entries.len() < SPARSE_LISTING && !entries.iter().any(|e| e.source == DYNAMIC_TOPIC_CONFIG);
    entries
        .iter()
        .filter(|e| !e.is_sensitive && !e.read_only)
        .filter(|e| sparse || (!e.is_default && matches!(e.source, DYNAMIC_TOPIC_CONFIG | 0 | -1)))
        .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
        .collect()
}

#[cfg(test)]
mod tests;
