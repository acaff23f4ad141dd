//! `[clusters.<name>]`: one Kafka cluster — the file's form, the resolved form and its
//! checks. Its `security` table has its own file, [`super::security`].

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::defaults as d;
use super::problem::{INTERVAL_BOUNDS, KeyPath, Problem, TIMEOUT_BOUNDS, duration_out_of_range};
use super::security::{self, Security, SecuritySpec};
use super::units::HumanDuration;

/// One Kafka cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// `host:port` list; a string is split on commas, so `"${BOOTSTRAP}"` may hold a list.
    #[serde(deserialize_with = "string_or_list")]
    pub bootstrap_servers: Vec<String>,
    /// Kafka client id.
    #[serde(default = "client_id")]
    pub client_id: String,
    /// How long one request may take before it is retried.
    #[serde(default = "request_timeout")]
    pub request_timeout: HumanDuration,
    /// How long a TCP connect may take.
    #[serde(default = "connect_timeout")]
    pub connect_timeout: HumanDuration,
    /// How often metadata is refreshed even when nothing failed.
    #[serde(default = "metadata_refresh_interval")]
    pub metadata_refresh_interval: HumanDuration,
    /// TLS / SASL (`[clusters.<name>.security]`).
    #[serde(default)]
    pub security: SecuritySpec,
}

fn client_id() -> String {
    d::CLIENT_ID.to_owned()
}
fn request_timeout() -> HumanDuration {
    d::REQUEST_TIMEOUT
}
fn connect_timeout() -> HumanDuration {
    d::CONNECT_TIMEOUT
}
fn metadata_refresh_interval() -> HumanDuration {
    d::METADATA_REFRESH_INTERVAL
}

/// A Kafka cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The name (MM2's alias).
    pub name: String,
    /// `host:port` strings.
    pub bootstrap_servers: Vec<String>,
    /// Kafka client id.
    pub client_id: String,
    /// Per-request timeout.
    pub request_timeout: Duration,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Periodic metadata refresh.
    pub metadata_refresh_interval: Duration,
    /// Connection security.
    pub security: Security,
}

/// Checks `spec` (at `at`, the table of cluster `name`, its security included); every
/// problem goes to `problems`.
pub fn resolve(
    spec: &ClusterSpec,
    name: &str,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Cluster> {
    let before = problems.len();
    check_names(spec, name, at, problems);
    for (key, d, bounds) in [
        ("request_timeout", spec.request_timeout, TIMEOUT_BOUNDS),
        ("connect_timeout", spec.connect_timeout, TIMEOUT_BOUNDS),
        (
            "metadata_refresh_interval",
            spec.metadata_refresh_interval,
            INTERVAL_BOUNDS,
        ),
    ] {
        problems.extend(duration_out_of_range(at.key(key), d, bounds));
    }
    let security = security::resolve(&spec.security, &at.key("security"), problems);
    (problems.len() == before).then(|| Cluster {
        name: name.to_owned(),
        bootstrap_servers: spec.bootstrap_servers.clone(),
        client_id: spec.client_id.clone(),
        request_timeout: spec.request_timeout.0,
        connect_timeout: spec.connect_timeout.0,
        metadata_refresh_interval: spec.metadata_refresh_interval.0,
        security: security.unwrap_or_default(),
    })
}

/// The cluster's name, its bootstrap servers and its client id, each well formed.
fn check_names(spec: &ClusterSpec, name: &str, at: &KeyPath, problems: &mut Vec<Problem>) {
    if !is_alias(name) {
        problems.push(
            Problem::new(at.clone(), format!("invalid cluster name \"{name}\""))
                .expected("letters, digits, `_` and `-` (the name becomes part of topic names)"),
        );
    }
    if spec.bootstrap_servers.is_empty() {
        problems.push(
            Problem::new(at.key("bootstrap_servers"), "no bootstrap servers")
                .expected("at least one \"host:port\""),
        );
    }
    for (i, server) in spec.bootstrap_servers.iter().enumerate() {
        if !is_host_port(server) {
            problems.push(
                Problem::new(
                    at.key("bootstrap_servers").index(i),
                    format!("invalid bootstrap server \"{server}\""),
                )
                .expected("\"host:port\" with a port in 1..=65535"),
            );
        }
    }
    if spec.client_id.is_empty()
        || !spec
            .client_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        problems.push(
            Problem::new(
                at.key("client_id"),
                format!("invalid client id \"{}\"", spec.client_id),
            )
            .expected("a non-empty string of letters, digits, `.`, `_` and `-`"),
        );
    }
}

fn is_alias(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_host_port(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    !host.is_empty()
        && !host.contains(char::is_whitespace)
        && port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// Accepts `"a:9092,b:9092"` as well as `["a:9092", "b:9092"]`; every element is split on
/// commas so one `${VAR}` can carry a whole list.
fn string_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of \"host:port\" strings, or one comma-separated string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
            Ok(split_list(v))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(item) = seq.next_element::<String>()? {
                out.extend(split_list(&item));
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// Splits a comma-separated list, trimming blanks and dropping empty entries.
pub(crate) fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}
