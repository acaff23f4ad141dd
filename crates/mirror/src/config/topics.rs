//! `[flows.topics]`, `[flows.groups]` and `[flows.topic_configs]`: which topics, consumer
//! groups and topic configs a flow takes, and how it creates and watches topics — the
//! file's form, the resolved form ([`Selection`]) and their checks.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::defaults::{self as d, owned};
use super::filter::{NameFilter, check_patterns};
use super::problem::{KeyPath, Problem};

/// Topic selection and creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopicsSpec {
    /// Regexes (whole-name match); a topic is replicated if one matches.
    pub include: Vec<String>,
    /// Regexes; a topic matching one is never replicated (exclude wins).
    pub exclude: Vec<String>,
    /// Replication factor of created topics; -1 = the target broker's default.
    pub replication_factor: i64,
    /// Where replication starts in a partition Strait has never seen.
    pub start_position: StartPosition,
    /// What to do when the source deleted records Strait has not copied yet.
    pub on_source_truncation: IncidentPolicy,
    /// What to do when a source topic was deleted and created again (new topic id).
    pub on_topic_recreation: IncidentPolicy,
    /// What to do when the target partition does not hold what Strait wrote to it
    /// (truncated, re-created, written by someone else).
    pub on_target_mismatch: IncidentPolicy,
}

impl Default for TopicsSpec {
    fn default() -> Self {
        Self {
            include: vec![d::INCLUDE_ALL.to_owned()],
            exclude: owned(d::TOPIC_EXCLUDES),
            replication_factor: d::REPLICATION_FACTOR,
            start_position: StartPosition::default(),
            on_source_truncation: IncidentPolicy::default(),
            on_topic_recreation: IncidentPolicy::default(),
            on_target_mismatch: IncidentPolicy::default(),
        }
    }
}

/// Start of replication in a new partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartPosition {
    /// From the log start: copy everything still retained (MM2's behaviour).
    #[default]
    Earliest,
    /// From the log end: copy only what is produced from now on.
    Latest,
    /// From the first record whose timestamp is at or after this, in ms since the epoch
    /// (an RFC 3339 timestamp in the file, e.g. `"2026-11-30T00:00:00Z"`; ListOffsets by
    /// timestamp; the log end when no record is that recent).
    Timestamp(i64),
    /// Right after the last record MirrorMaker 2 copied to the target, proven by content
    /// ([`crate::takeover`]); a target partition never written starts at the log start.
    Takeover,
}

impl StartPosition {
    /// Parses `earliest`, `latest`, `takeover` or an RFC 3339 timestamp.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "earliest" => Some(StartPosition::Earliest),
            "latest" => Some(StartPosition::Latest),
            "takeover" => Some(StartPosition::Takeover),
            t => {
                let at = humantime::parse_rfc3339(t).ok()?;
                let ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
                i64::try_from(ms).ok().map(StartPosition::Timestamp)
            }
        }
    }
}

impl fmt::Display for StartPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartPosition::Earliest => f.write_str("earliest"),
            StartPosition::Latest => f.write_str("latest"),
            StartPosition::Takeover => f.write_str("takeover"),
            StartPosition::Timestamp(ms) => {
                let at = std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(u64::try_from(*ms).unwrap_or(0));
                write!(f, "{}", humantime::format_rfc3339_millis(at))
            }
        }
    }
}

impl Serialize for StartPosition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StartPosition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        StartPosition::parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "invalid start position \"{text}\": expected \"earliest\", \"latest\", \"takeover\" or an \
                 RFC 3339 timestamp such as \"2026-11-30T00:00:00Z\""
            ))
        })
    }
}

/// Reaction to an incident: source truncation, topic re-creation, target mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentPolicy {
    /// Stop replicating the partition and report it (health and metrics) until an operator acts.
    #[default]
    Fail,
    /// Log it, count it in metrics, and carry on from the earliest available offset.
    Skip,
}

/// Consumer-group selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupsSpec {
    /// Regexes (whole-name match); a group is synced if one matches.
    pub include: Vec<String>,
    /// Regexes; a group matching one is never synced (exclude wins).
    pub exclude: Vec<String>,
}

impl Default for GroupsSpec {
    fn default() -> Self {
        Self {
            include: vec![d::INCLUDE_ALL.to_owned()],
            exclude: owned(d::GROUP_EXCLUDES),
        }
    }
}

/// Topic-config selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopicConfigsSpec {
    /// Regexes of config names never copied to the target.
    pub exclude: Vec<String>,
}

impl Default for TopicConfigsSpec {
    fn default() -> Self {
        Self {
            exclude: owned(d::CONFIG_EXCLUDES),
        }
    }
}

/// The three tables resolved: the name filters and the replication factor.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Which source topics.
    pub topics: NameFilter,
    /// Which consumer groups.
    pub groups: NameFilter,
    /// Which topic configs are copied.
    pub topic_configs: NameFilter,
    /// Replication factor for created topics; `None` = the target broker's default.
    pub replication_factor: Option<i16>,
}

/// Checks the three tables of the flow at `at`; every problem goes to `problems`.
pub fn resolve(
    topics: &TopicsSpec,
    groups: &GroupsSpec,
    topic_configs: &TopicConfigsSpec,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Selection> {
    let before = problems.len();
    let topics_at = at.key("topics");
    let groups_at = at.key("groups");
    for (patterns, non_empty, list_at) in [
        (&topics.include, true, topics_at.key("include")),
        (&topics.exclude, false, topics_at.key("exclude")),
        (&groups.include, false, groups_at.key("include")),
        (&groups.exclude, false, groups_at.key("exclude")),
        (
            &topic_configs.exclude,
            false,
            at.key("topic_configs").key("exclude"),
        ),
    ] {
        check_patterns(patterns, non_empty, &list_at, problems);
    }
    let rf = topics.replication_factor;
    let replication_factor = match rf {
        -1 => None,
        1..=32767 => i16::try_from(rf).ok(),
        _ => {
            problems.push(
                Problem::new(
                    topics_at.key("replication_factor"),
                    format!("invalid replication factor {rf}"),
                )
                .expected("-1 (the target broker's default) or 1..=32767"),
            );
            None
        }
    };
    if problems.len() != before {
        return None;
    }
    // Every pattern compiled on its own above, so the sets compile too.
    Some(Selection {
        topics: NameFilter::new(&topics.include, &topics.exclude).ok()?,
        groups: NameFilter::new(&groups.include, &groups.exclude).ok()?,
        topic_configs: NameFilter::exclude_only(&topic_configs.exclude).ok()?,
        replication_factor,
    })
}
