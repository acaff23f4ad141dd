//! Target topic naming and cycle detection, after MM2's `ReplicationPolicy`, with exact
//! renames applied before the policy (`naming.rename`).

use std::collections::BTreeMap;

use super::model::NamingPolicy;

/// MM2's heartbeats topic name; kept so MM2-aware tooling recognises ours.
pub const HEARTBEATS_TOPIC: &str = "heartbeats";

/// How a flow names target topics and recognises topics that came from elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationPolicy {
    kind: NamingPolicy,
    separator: String,
    source_alias: String,
    renames: BTreeMap<String, String>,
}

impl ReplicationPolicy {
    /// The policy of a flow from cluster `source_alias`.
    pub fn new(
        kind: NamingPolicy,
        separator: impl Into<String>,
        source_alias: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            separator: separator.into(),
            source_alias: source_alias.into(),
            renames: BTreeMap::new(),
        }
    }

    /// With exact renames: source topic `k` is replicated as if it were named `v` (the
    /// policy still applies: `<alias><sep>v` with `prefix`).
    pub fn with_renames(mut self, renames: BTreeMap<String, String>) -> Self {
        self.renames = renames;
        self
    }

    /// The renames.
    pub fn renames(&self) -> &BTreeMap<String, String> {
        &self.renames
    }

    /// `prefix` or `identity`.
    pub fn kind(&self) -> NamingPolicy {
        self.kind
    }

    /// The separator between alias and topic.
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// The target name of source topic `topic`: its rename if it has one, through the
    /// policy.
    ///
    /// With `identity`, heartbeats topics are still prefixed (as MM2's
    /// IdentityReplicationPolicy does), so heartbeats of both directions of an
    /// active/active pair never collide (validation keeps them out of the renames).
    pub fn remote_topic(&self, topic: &str) -> String {
        let topic = self.renames.get(topic).map_or(topic, String::as_str);
        match self.kind {
            NamingPolicy::Identity if !self.is_heartbeats_topic(topic) => topic.to_owned(),
            _ => format!("{}{}{topic}", self.source_alias, self.separator),
        }
    }

    /// The cluster `topic` was replicated from, as encoded in its name: the text before the
    /// first separator (MM2's `topicSource`). `None` for a name without a separator, and for
    /// every non-heartbeats topic under `identity`, whose names carry no origin.
    pub fn upstream_cluster<'t>(&self, topic: &'t str) -> Option<&'t str> {
        if self.kind == NamingPolicy::Identity && !self.is_heartbeats_topic(topic) {
            return None;
        }
        self.split(topic).map(|(cluster, _)| cluster)
    }

    /// `topic` without its first alias prefix (MM2's `upstreamTopic`).
    pub fn upstream_topic<'t>(&self, topic: &'t str) -> Option<&'t str> {
        if self.kind == NamingPolicy::Identity && !self.is_heartbeats_topic(topic) {
            return None;
        }
        self.split(topic).map(|(_, rest)| rest)
    }

    /// True when `topic` came from `target` by any chain of prefixes, so replicating it to
    /// `target` would close a loop (MM2's `isCycle`): with `prefix`, a topic named
    /// `<target><sep>…` or `<x><sep><target><sep>…` is never replicated to `target`.
    pub fn is_cycle(&self, topic: &str, target: &str) -> bool {
        let mut current = topic;
        while let Some(cluster) = self.upstream_cluster(current) {
            if cluster == target {
                return true;
            }
            match self.upstream_topic(current) {
                Some(up) if up != current => current = up,
                _ => return false,
            }
        }
        false
    }

    /// `heartbeats`, or a replicated heartbeats topic such as `a.heartbeats` or `b.a.heartbeats`.
    pub fn is_heartbeats_topic(&self, topic: &str) -> bool {
        topic == HEARTBEATS_TOPIC
            || topic.strip_suffix(HEARTBEATS_TOPIC).is_some_and(|head| {
                !self.separator.is_empty() && head.ends_with(self.separator.as_str())
            })
    }

    fn split<'t>(&self, topic: &'t str) -> Option<(&'t str, &'t str)> {
        if self.separator.is_empty() {
            return None;
        }
        topic
            .split_once(self.separator.as_str())
            .filter(|(cluster, rest)| !cluster.is_empty() && !rest.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn prefix(src: &str) -> ReplicationPolicy {
        ReplicationPolicy::new(NamingPolicy::Prefix, ".", src)
    }

    #[test]
    fn prefix_naming_like_mm2() {
        let p = prefix("us");
        assert_eq!(p.remote_topic("orders"), "us.orders");
        assert_eq!(p.upstream_cluster("us.orders"), Some("us"));
        assert_eq!(p.upstream_topic("us.orders"), Some("orders"));
        assert_eq!(p.upstream_cluster("orders"), None);
        assert_eq!(p.upstream_cluster(".orders"), None);
    }

    #[test]
    fn cycles_are_detected_through_chains() {
        let p = prefix("us");
        assert!(p.is_cycle("eu.orders", "eu"), "came from the target");
        assert!(
            p.is_cycle("ap.eu.orders", "eu"),
            "came from the target via ap"
        );
        assert!(!p.is_cycle("ap.orders", "eu"));
        assert!(!p.is_cycle("orders", "eu"));
    }

    #[test]
    fn custom_separator() {
        let p = ReplicationPolicy::new(NamingPolicy::Prefix, "__", "us");
        assert_eq!(p.remote_topic("a.b"), "us__a.b");
        assert_eq!(p.upstream_cluster("us__a.b"), Some("us"));
        assert!(p.is_cycle("eu__x", "eu"));
        assert!(p.is_heartbeats_topic("eu__heartbeats"));
        assert!(!p.is_heartbeats_topic("eu.heartbeats"));
    }

    #[test]
    fn identity_keeps_names_but_prefixes_heartbeats() {
        let p = ReplicationPolicy::new(NamingPolicy::Identity, ".", "us");
        assert_eq!(p.remote_topic("orders"), "orders");
        assert_eq!(p.remote_topic("heartbeats"), "us.heartbeats");
        assert_eq!(p.upstream_cluster("eu.orders"), None);
        assert!(
            !p.is_cycle("eu.orders", "eu"),
            "identity names carry no origin"
        );
        assert!(p.is_cycle("eu.heartbeats", "eu"));
    }

    #[test]
    fn renames_apply_before_the_policy_and_cycles_still_hold() {
        let renames = BTreeMap::from([("orders".to_owned(), "orders-v2".to_owned())]);
        let p = prefix("us").with_renames(renames.clone());
        assert_eq!(p.remote_topic("orders"), "us.orders-v2");
        assert_eq!(p.remote_topic("payments"), "us.payments");
        // What this flow wrote is still recognised as coming from the source.
        assert!(p.is_cycle("us.orders-v2", "us"));
        let i = ReplicationPolicy::new(NamingPolicy::Identity, ".", "us").with_renames(renames);
        assert_eq!(i.remote_topic("orders"), "orders-v2");
        assert_eq!(i.remote_topic("heartbeats"), "us.heartbeats");
    }

    #[test]
    fn heartbeats_topics() {
        let p = prefix("us");
        assert!(p.is_heartbeats_topic("heartbeats"));
        assert!(p.is_heartbeats_topic("eu.heartbeats"));
        assert!(p.is_heartbeats_topic("ap.eu.heartbeats"));
        assert!(!p.is_heartbeats_topic("myheartbeats"));
    }

    proptest! {
        /// A topic this flow wrote is recognised as coming from the source, and replicating
        /// it back to the source is a cycle.
        #[test]
        fn remote_topics_round_trip(src in "[a-z]{1,6}", topic in "[a-z0-9_.-]{1,20}") {
            let p = prefix(&src);
            let remote = p.remote_topic(&topic);
            prop_assert_eq!(p.upstream_cluster(&remote), Some(src.as_str()));
            prop_assert_eq!(p.upstream_topic(&remote), Some(topic.as_str()));
            prop_assert!(p.is_cycle(&remote, &src));
        }
    }
}
