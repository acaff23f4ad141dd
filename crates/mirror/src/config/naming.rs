//! `[flows.naming]`: target topic naming and cycle detection — the file's form, the
//! resolved form ([`ReplicationPolicy`], after MM2's, with exact renames applied before
//! the policy) and its checks, with the rules of legal topic names.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::defaults as d;
use super::problem::{KeyPath, Problem};

/// MM2's heartbeats topic name; kept so MM2-aware tooling recognises ours.
pub const HEARTBEATS_TOPIC: &str = "heartbeats";
/// Kafka's limit on topic name length.
pub(super) const MAX_TOPIC_LEN: usize = 249;

/// Target topic naming.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NamingSpec {
    /// `prefix` (MM2's DefaultReplicationPolicy) or `identity`.
    pub policy: NamingPolicy,
    /// Between the source alias and the topic name (MM2's `replication.policy.separator`).
    pub separator: String,
    /// The name written before the separator with `prefix` (MM2's `source.cluster.alias`);
    /// unset, the source cluster's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Exact source topic names replicated under another name (applied before the
    /// policy): `rename = { "orders" = "orders-v2" }`.
    pub rename: BTreeMap<String, String>,
}

impl Default for NamingSpec {
    fn default() -> Self {
        Self {
            policy: NamingPolicy::default(),
            separator: d::SEPARATOR.to_owned(),
            alias: None,
            rename: BTreeMap::new(),
        }
    }
}

/// Target topic naming policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NamingPolicy {
    /// `<source alias><separator><topic>`, like MM2's DefaultReplicationPolicy.
    #[default]
    Prefix,
    /// The source topic name, like MM2's IdentityReplicationPolicy.
    Identity,
}

impl fmt::Display for NamingPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Prefix => "prefix",
            Self::Identity => "identity",
        })
    }
}

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

/// Checks `spec` (at `at`, the `naming` table of a flow from cluster `source`); every
/// problem goes to `problems`.
pub fn resolve(
    spec: &NamingSpec,
    source: &str,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<ReplicationPolicy> {
    let before = problems.len();
    let sep_at = at.key("separator");
    if let Some(alias) = &spec.alias
        && !is_topic_name(alias)
    {
        problems.push(
            Problem::new(at.key("alias"), format!("invalid alias \"{alias}\""))
                .expected("1 to 249 of `.`, `_`, `-`, letters or digits"),
        );
    }
    let what = if spec.alias.is_some() {
        "alias"
    } else {
        "source cluster name"
    };
    let source = spec.alias.as_deref().unwrap_or(source);
    if spec.separator.is_empty() || !is_topic_chars(&spec.separator) {
        problems.push(
            Problem::new(
                sep_at.clone(),
                format!("invalid separator \"{}\"", spec.separator),
            )
            .expected("a non-empty string of `.`, `_`, `-`, letters or digits"),
        );
    } else if spec.policy == NamingPolicy::Prefix && source.contains(spec.separator.as_str()) {
        problems.push(
            Problem::new(
                sep_at,
                format!(
                    "{what} \"{source}\" contains the separator \"{}\", so the origin of prefixed topics would be ambiguous",
                    spec.separator
                ),
            )
            .expected("a separator that does not occur in the source alias (the cluster name unless `alias` is set)"),
        );
    }
    let policy = ReplicationPolicy::new(spec.policy, spec.separator.clone(), source);
    check_renames(&spec.rename, &policy, &at.key("rename"), problems);
    (problems.len() == before).then(|| policy.with_renames(spec.rename.clone()))
}

/// `naming.rename`: legal topic names on both sides, no heartbeats topic, and no two
/// sources given one name (they would be written into one target topic).
fn check_renames(
    renames: &BTreeMap<String, String>,
    policy: &ReplicationPolicy,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (from, to) in renames {
        let here = at.key(from.clone());
        for name in [from, to] {
            if !is_topic_name(name) {
                problems.push(
                    Problem::new(here.clone(), format!("invalid topic name \"{name}\""))
                        .expected("1 to 249 of `.`, `_`, `-`, letters or digits"),
                );
            }
        }
        if policy.is_heartbeats_topic(from) || policy.is_heartbeats_topic(to) {
            problems.push(
                Problem::new(here.clone(), "heartbeats topics cannot be renamed")
                    .expected("renames of data topics only"),
            );
        }
        if let Some(other) = seen.insert(to.as_str(), from.as_str()) {
            problems.push(
                Problem::new(
                    here,
                    format!("\"{other}\" and \"{from}\" are both renamed to \"{to}\": two topics would be written into one"),
                )
                .expected("a different target name for each renamed topic"),
            );
        }
    }
}

/// A legal Kafka topic name: 1 to [`MAX_TOPIC_LEN`] of `.`, `_`, `-`, letters or digits,
/// and neither `.` nor `..`.
pub(super) fn is_topic_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_TOPIC_LEN && s != "." && s != ".." && is_topic_chars(s)
}

/// Only characters legal in topic names.
pub(super) fn is_topic_chars(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

#[cfg(test)]
mod tests;
