//! `mm2.properties` → Strait TOML.
//!
//! The importer writes out every effective value (defaults included) so the result can be
//! reviewed as a whole. Where MM2's default differs from Strait's in *what* gets written
//! (`sync.group.offsets.enabled` = false, `replication.factor` = 2), MM2's value is written
//! so the imported flow behaves like the MM2 one. Every key it cannot carry over is
//! returned as an [`UnmappedKey`] with the reason.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::properties::{self, PropertiesError, Property};
use crate::config::cluster::{ClusterSpec, split_list};
use crate::config::flow::FlowSpec;
use crate::config::model::ConfigFile;
use crate::config::naming::NamingPolicy;
use crate::config::security::{SecurityProtocol, SecuritySpec};
use crate::config::topics::StartPosition;

mod security;
use crate::config::delivery::{DeliverySpec, Guarantee};
use crate::config::units::HumanDuration;

/// An MM2 key that is not (fully) represented in the generated TOML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmappedKey {
    /// The MM2 key, as written.
    pub key: String,
    /// Its value; secrets are shown as `<redacted>`.
    pub value: String,
    /// 1-based line in the properties file; 0 for a key that was missing.
    pub line: usize,
    /// Why it was not carried over, and what to do instead.
    pub reason: String,
}

/// Why a properties file could not be converted at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The text is not a valid properties file.
    #[error("not a valid properties file: {0}")]
    Properties(#[from] PropertiesError),
    /// `clusters` is missing or empty, so nothing can be converted.
    #[error(
        "no `clusters = A, B` key: this does not look like an MM2 (connect-mirror-maker) properties file"
    )]
    NoClusters,
    /// The TOML could not be written (a bug: every model value is representable).
    #[error("cannot write the converted config as TOML: {0}")]
    Write(String),
}

const HEADER: &str = "\
# Converted from a MirrorMaker 2 properties file by `strait config import-mm2`.
# Every effective value is written out; review it, then check it with
# `strait config validate -c <this file>`. MM2 defaults that change what is written
# (sync.group_offsets = false, topics.replication_factor = 2) are kept as MM2 had them.
# Keys that could not be converted were listed on stderr by the importer.
";

const DEFAULT_POLICY: &str = "DefaultReplicationPolicy";
const IDENTITY_POLICY: &str = "IdentityReplicationPolicy";
/// MM2's `replication.factor` default (Strait's is the broker default, -1).
const MM2_REPLICATION_FACTOR: i64 = 2;

/// Converts MM2 properties text into Strait TOML, plus the keys it could not map.
pub fn import_mm2(properties_text: &str) -> Result<(String, Vec<UnmappedKey>), ImportError> {
    let mut props = Props::new(properties::parse(properties_text)?);
    let aliases = props
        .take("clusters")
        .map(|v| split_list(&v))
        .unwrap_or_default();
    if aliases.is_empty() {
        return Err(ImportError::NoClusters);
    }

    let mut file = ConfigFile::default();
    for alias in &aliases {
        let cluster = props.cluster(alias);
        file.clusters.insert(alias.clone(), cluster);
    }
    for (source, target) in props.flow_pairs(&aliases) {
        let flow = props.flow(&source, &target);
        file.flows.push(flow);
    }
    if file.flows.is_empty() {
        props.note(
            "clusters",
            "",
            "no `A->B.enabled` or other `A->B.*` key: no flow was converted; add a [[flows]] table",
        );
    }

    let mut table = toml::Table::try_from(&file).map_err(|e| ImportError::Write(e.to_string()))?;
    // Process-wide sections have no MM2 equivalent: leave them to their defaults.
    for section in ["engine", "metrics", "logging"] {
        table.remove(section);
    }
    let body = toml::to_string_pretty(&table).map_err(|e| ImportError::Write(e.to_string()))?;
    let comments: String = props
        .comments
        .iter()
        // A value with a newline escape must not end the comment.
        .map(|c| format!("#\n# {}\n", c.replace(|ch: char| ch.is_control(), " ")))
        .collect();
    Ok((format!("{HEADER}{comments}\n{body}"), props.finish()))
}

/// The properties, with a record of which were used.
struct Props {
    map: HashMap<String, Property>,
    order: Vec<String>,
    used: HashSet<String>,
    unmapped: Vec<UnmappedKey>,
    /// `${VAR}` placeholders written into the TOML, with what each one holds.
    env: Vec<(String, String)>,
    /// Lines for the TOML's header comment (no secrets: paths and names only).
    comments: Vec<String>,
}

impl Props {
    fn new(entries: Vec<Property>) -> Self {
        let mut props = Self {
            map: HashMap::new(),
            order: Vec::new(),
            used: HashSet::new(),
            unmapped: Vec::new(),
            env: Vec::new(),
            comments: Vec::new(),
        };
        for p in entries {
            // MM2 config providers (`${file:/path:key}`) cannot be resolved here.
            if p.value.contains("${") {
                props.used.insert(p.key.clone());
                props.unmapped.push(UnmappedKey {
                    reason: "uses a config provider reference (`${provider:path:key}`), which Strait does not have; \
                             write `${ENV_VAR}` in the TOML instead"
                        .to_owned(),
                    value: shown(&p.key, &p.value),
                    key: p.key.clone(),
                    line: p.line,
                });
            }
            props.order.push(p.key.clone());
            props.map.insert(p.key.clone(), p);
        }
        props
    }

    /// The value of `key`, marking it used.
    fn take(&mut self, key: &str) -> Option<String> {
        if self.is_provider(key) {
            return None;
        }
        let p = self.map.get(key)?;
        self.used.insert(key.to_owned());
        Some(p.value.trim().to_owned())
    }

    /// The first of `keys` that is set (marking only that one used).
    fn first(&mut self, keys: &[String]) -> Option<(String, String)> {
        keys.iter()
            .find(|k| self.map.contains_key(k.as_str()) && !self.is_provider(k))
            .cloned()
            .and_then(|k| self.take(&k).map(|v| (k, v)))
    }

    fn is_provider(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|p| p.value.contains("${"))
    }

    /// `A.<k>`, else the global `<k>` (MM2 applies unprefixed client keys to every
    /// cluster). A set global key counts as used once a cluster has consulted it.
    fn cluster_value(&mut self, alias: &str, k: &str) -> Option<(String, String)> {
        let found = self.first(&[format!("{alias}.{k}"), k.to_owned()]);
        if self.map.contains_key(k) && !self.is_provider(k) {
            self.used.insert(k.to_owned());
        }
        found
    }

    /// A `${VAR}` placeholder for `what`, remembered for the list of variables to export.
    fn env_placeholder(&mut self, alias: &str, what: &str, holds: &str) -> String {
        let var = env_name(alias, what);
        if !self.env.iter().any(|(v, _)| *v == var) {
            self.env.push((var.clone(), holds.to_owned()));
        }
        format!("${{{var}}}")
    }

    /// Records an unmapped key (or a note about a missing one); the same key with the same
    /// reason (a global key consulted by several clusters) is listed once.
    fn unmapped(&mut self, key: &str, reason: impl Into<String>) {
        let reason = reason.into();
        self.used.insert(key.to_owned());
        if self
            .unmapped
            .iter()
            .any(|u| u.key == key && u.reason == reason)
        {
            return;
        }
        let (value, line) = self
            .map
            .get(key)
            .map_or((String::new(), 0), |p| (shown(key, &p.value), p.line));
        self.unmapped.push(UnmappedKey {
            key: key.to_owned(),
            value,
            line,
            reason,
        });
    }

    fn note(&mut self, key: &str, value: &str, reason: &str) {
        self.unmapped.push(UnmappedKey {
            key: key.to_owned(),
            value: value.to_owned(),
            line: 0,
            reason: reason.to_owned(),
        });
    }

    fn cluster(&mut self, alias: &str) -> ClusterSpec {
        let key = |k: &str| format!("{alias}.{k}");
        let mut spec = ClusterSpec {
            bootstrap_servers: Vec::new(),
            client_id: crate::config::defaults::CLIENT_ID.to_owned(),
            request_timeout: crate::config::defaults::REQUEST_TIMEOUT,
            connect_timeout: crate::config::defaults::CONNECT_TIMEOUT,
            metadata_refresh_interval: crate::config::defaults::METADATA_REFRESH_INTERVAL,
            security: SecuritySpec::default(),
        };
        match self.take(&key("bootstrap.servers")) {
            Some(v) if !v.is_empty() => {
                spec.bootstrap_servers = split_list(&v).iter().map(|s| literal(s)).collect()
            }
            _ => {
                let var = env_name(alias, "BOOTSTRAP_SERVERS");
                spec.bootstrap_servers =
                    vec![self.env_placeholder(alias, "BOOTSTRAP_SERVERS", "bootstrap servers")];
                self.note(
                    &key("bootstrap.servers"),
                    "",
                    &format!("missing: the TOML reads it from the environment variable {var}"),
                );
            }
        }
        if let Some(v) = self.take(&key("client.id")) {
            spec.client_id = literal(&v);
        }
        for (mm2, slot) in [
            ("request.timeout.ms", &mut spec.request_timeout),
            (
                "socket.connection.setup.timeout.ms",
                &mut spec.connect_timeout,
            ),
            ("metadata.max.age.ms", &mut spec.metadata_refresh_interval),
        ] {
            if let Some(d) = self.millis(&key(mm2)) {
                *slot = d;
            }
        }
        if let Some((k, v)) = self.cluster_value(alias, "security.protocol") {
            match v.to_ascii_uppercase().as_str() {
                "PLAINTEXT" => {}
                "SSL" => spec.security.protocol = SecurityProtocol::Ssl,
                "SASL_PLAINTEXT" => spec.security.protocol = SecurityProtocol::SaslPlaintext,
                "SASL_SSL" => spec.security.protocol = SecurityProtocol::SaslSsl,
                _ => self.unmapped(&k, "unknown security protocol; PLAINTEXT was used"),
            }
        }
        spec.security.tls = self.tls(alias, spec.security.protocol);
        spec.security.sasl = self.sasl(alias, spec.security.protocol);
        spec
    }

    /// Ordered pairs that have any `A->B.*` key, in order of first appearance.
    fn flow_pairs(&mut self, aliases: &[String]) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for key in self.order.clone() {
            let Some((pair, _)) = key
                .split_once("->")
                .and_then(|(s, rest)| rest.split_once('.').map(|(t, k)| ((s, t), k)))
            else {
                continue;
            };
            let (s, t) = (pair.0.to_owned(), pair.1.to_owned());
            if !aliases.contains(&s) || !aliases.contains(&t) {
                self.unmapped(&key, "names a cluster that is not listed in `clusters`");
            } else if !pairs.contains(&(s.clone(), t.clone())) {
                pairs.push((s, t));
            }
        }
        pairs
    }

    fn flow(&mut self, source: &str, target: &str) -> FlowSpec {
        let mut flow = FlowSpec {
            name: None,
            source: source.to_owned(),
            target: target.to_owned(),
            enabled: false,
            state_topic: None,
            topics: Default::default(),
            naming: Default::default(),
            groups: Default::default(),
            topic_configs: Default::default(),
            sync: Default::default(),
            intervals: Default::default(),
            delivery: Default::default(),
            scale_out: None,
        };
        let fk = |k: &str| vec![format!("{source}->{target}.{k}"), k.to_owned()];
        // MM2 default: a flow is off unless enabled.
        if let Some(b) = self.boolean(&fk("enabled")) {
            flow.enabled = b;
        }
        if let Some((_, v)) = self.first(&fk("topics")) {
            flow.topics.include = regex_list(&v);
        }
        // `topics.blacklist` is the pre-3.0 name of `topics.exclude`; the new name wins.
        let exclude = [fk("topics.exclude"), fk("topics.blacklist")].concat();
        if let Some((_, v)) = self.first(&exclude) {
            flow.topics.exclude = regex_list(&v);
        }
        if let Some((_, v)) = self.first(&fk("groups")) {
            flow.groups.include = regex_list(&v);
        }
        if let Some((_, v)) = self.first(&[fk("groups.exclude"), fk("groups.blacklist")].concat()) {
            flow.groups.exclude = regex_list(&v);
        }
        if let Some((_, v)) = self.first(
            &[
                fk("config.properties.exclude"),
                fk("config.properties.blacklist"),
            ]
            .concat(),
        ) {
            flow.topic_configs.exclude = regex_list(&v);
        }
        if let Some((k, v)) = self.first(&fk("replication.policy.class")) {
            let class = v.rsplit('.').next().unwrap_or(&v);
            match class {
                DEFAULT_POLICY => flow.naming.policy = NamingPolicy::Prefix,
                IDENTITY_POLICY => flow.naming.policy = NamingPolicy::Identity,
                _ => self.unmapped(
                    &k,
                    "custom replication policies cannot be loaded; only DefaultReplicationPolicy (naming.policy = \"prefix\") \
                     and IdentityReplicationPolicy (\"identity\") are supported; prefix was used",
                ),
            }
        }
        if let Some((_, v)) = self.first(&fk("replication.policy.separator")) {
            flow.naming.separator = literal(&v);
        }
        flow.topics.replication_factor = MM2_REPLICATION_FACTOR;
        if let Some((k, v)) = self.first(&fk("replication.factor")) {
            match v.parse::<i64>() {
                Ok(rf) => flow.topics.replication_factor = rf,
                Err(_) => self.unmapped(&k, "not an integer; MM2's default 2 was used"),
            }
        }
        if let Some((k, v)) = self.first(&[
            format!("{source}->{target}.consumer.auto.offset.reset"),
            format!("{source}.consumer.auto.offset.reset"),
            "consumer.auto.offset.reset".to_owned(),
        ]) {
            match v.to_ascii_lowercase().as_str() {
                "earliest" => flow.topics.start_position = StartPosition::Earliest,
                "latest" => flow.topics.start_position = StartPosition::Latest,
                _ => self.unmapped(
                    &k,
                    "only earliest and latest have an equivalent (`topics.start_position`)",
                ),
            }
        }

        flow.sync.topic_configs = self
            .boolean(&fk("sync.topic.configs.enabled"))
            .unwrap_or(true);
        // MM2's default is false; Strait's is true. Keep MM2's behaviour.
        flow.sync.group_offsets = self
            .boolean(&fk("sync.group.offsets.enabled"))
            .unwrap_or(false);
        flow.sync.heartbeats = self.boolean(&fk("emit.heartbeats.enabled")).unwrap_or(true);
        flow.sync.checkpoints = self
            .boolean(&fk("emit.checkpoints.enabled"))
            .unwrap_or(true);
        flow.sync.topic_acls = self.boolean(&fk("sync.topic.acls.enabled")).unwrap_or(true);

        let iv = &mut flow.intervals;
        for (mm2, slot) in [
            ("refresh.topics.interval.seconds", &mut iv.topic_refresh),
            (
                "sync.topic.configs.interval.seconds",
                &mut iv.topic_config_sync,
            ),
            ("emit.checkpoints.interval.seconds", &mut iv.checkpoint),
            ("sync.topic.acls.interval.seconds", &mut iv.topic_acl_sync),
            ("emit.heartbeats.interval.seconds", &mut iv.heartbeat),
        ] {
            if let Some(d) = self.seconds(&fk(mm2)) {
                *slot = d;
            }
        }
        // Strait discovers groups and syncs their offsets in one pass: the shorter MM2 cadence.
        let group_syncs = [
            self.seconds(&fk("sync.group.offsets.interval.seconds")),
            self.seconds(&fk("refresh.groups.interval.seconds")),
        ];
        if let Some(d) = group_syncs.into_iter().flatten().min() {
            iv.group_sync = d;
        }
        self.delivery(&mut flow.delivery, &fk, target);
        flow
    }

    /// `exactly.once.source.support` (the worker's switch: `enabled` turns exactly-once
    /// on; `preparing` and `disabled` keep at-least-once), `transaction.boundary`
    /// (`poll` and `interval` both commit on Strait's interval; `connector` has no
    /// equivalent), `transaction.boundary.interval.ms`, and the producer's
    /// `transaction.timeout.ms`.
    fn delivery(&mut self, d: &mut DeliverySpec, fk: &dyn Fn(&str) -> Vec<String>, target: &str) {
        // Also the target cluster's worker setting (`B.exactly.once.source.support`).
        let mut support = fk("exactly.once.source.support");
        support.insert(1, format!("{target}.exactly.once.source.support"));
        if let Some((k, v)) = self.first(&support) {
            match v.to_ascii_lowercase().as_str() {
                "enabled" => d.guarantee = Guarantee::ExactlyOnce,
                "preparing" | "disabled" => d.guarantee = Guarantee::AtLeastOnce,
                _ => self.unmapped(
                    &k,
                    "not enabled, preparing or disabled; at-least-once was used",
                ),
            }
        }
        if let Some((k, v)) = self.first(&fk("transaction.boundary")) {
            match v.to_ascii_lowercase().as_str() {
                "poll" | "interval" => {}
                _ => self.unmapped(
                    &k,
                    "only poll and interval have an equivalent: Strait commits every \
                     `delivery.transaction_interval`",
                ),
            }
        }
        for (key, slot) in [
            (
                "transaction.boundary.interval.ms",
                &mut d.transaction_interval,
            ),
            (
                "producer.transaction.timeout.ms",
                &mut d.transaction_timeout,
            ),
        ] {
            let mut keys = fk(key);
            keys.insert(1, format!("{target}.{key}"));
            let found = keys.into_iter().find(|k| self.map.contains_key(k.as_str()));
            if let Some(k) = found
                && let Some(v) = self.millis(&k)
            {
                *slot = v;
            }
        }
    }

    fn boolean(&mut self, keys: &[String]) -> Option<bool> {
        let (k, v) = self.first(keys)?;
        match v.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => {
                self.unmapped(&k, "not `true` or `false`; the default was used");
                None
            }
        }
    }

    fn seconds(&mut self, keys: &[String]) -> Option<HumanDuration> {
        let (k, v) = self.first(keys)?;
        match v.parse::<u64>() {
            Ok(s) => Some(HumanDuration::secs(s)),
            Err(_) => {
                self.unmapped(
                    &k,
                    "not a non-negative number of seconds; the default was used",
                );
                None
            }
        }
    }

    fn millis(&mut self, key: &str) -> Option<HumanDuration> {
        let v = self.take(key)?;
        match v.parse::<u64>() {
            Ok(ms) => Some(HumanDuration::millis(ms)),
            Err(_) => {
                self.unmapped(
                    key,
                    "not a non-negative number of milliseconds; the default was used",
                );
                None
            }
        }
    }

    /// Every key not used, with its reason, in file order.
    fn finish(mut self) -> Vec<UnmappedKey> {
        let mut reasons: BTreeMap<usize, UnmappedKey> = BTreeMap::new();
        for key in &self.order {
            if self.used.contains(key) {
                continue;
            }
            let p = &self.map[key];
            reasons.insert(
                p.line,
                UnmappedKey {
                    key: key.clone(),
                    value: shown(key, &p.value),
                    line: p.line,
                    reason: reason(key).to_owned(),
                },
            );
        }
        self.unmapped.extend(reasons.into_values());
        self.unmapped.sort_by_key(|u| (u.line == 0, u.line));
        if !self.env.is_empty() {
            let vars: Vec<String> = self
                .env
                .iter()
                .map(|(var, holds)| format!("{var} ({holds})"))
                .collect();
            self.unmapped.push(UnmappedKey {
                key: "environment".to_owned(),
                value: String::new(),
                line: 0,
                reason: format!(
                    "the TOML reads these variables; export them before `strait config validate` or a run: {}",
                    vars.join(", ")
                ),
            });
        }
        self.unmapped
    }
}

/// Why an MM2 key has no Strait equivalent. `key` may carry an `A.` or `A->B.` prefix.
fn reason(key: &str) -> &'static str {
    let suffix = key
        .split_once("->")
        .and_then(|(_, rest)| rest.split_once('.'))
        .map_or(key, |(_, k)| k);
    // Connector-level keys match on the whole suffix; cluster-level ones after `A.`.
    let cluster_suffix = suffix.split_once('.').map_or(suffix, |(_, k)| k);
    match suffix {
        "tasks.max" => {
            return "Strait has no Connect tasks: one process pipelines every partition of a flow, and more \
                    processes share a flow's partitions with `[flows.scale_out]` (a Kafka group on the target)";
        }
        "offset-syncs.topic.location"
        | "offset-syncs.topic.replication.factor"
        | "emit.offset-syncs.enabled"
        | "offset.lag.max" => {
            return "Strait keeps exact offset maps in its state topic on the target (`state_topic`); there is no \
                    offset-syncs topic and no sync spacing";
        }
        "heartbeats.topic.replication.factor" | "checkpoints.topic.replication.factor" => {
            return "Strait creates its own topics with the flow's `topics.replication_factor`";
        }
        "refresh.topics.enabled" | "refresh.groups.enabled" => {
            return "Strait always discovers new topics and groups; tune `intervals.topic_refresh` / `intervals.group_sync`";
        }
        "heartbeats.replication.enabled" => {
            return "heartbeats topics are replicated whenever `sync.heartbeats` is on";
        }
        "topic.filter.class" | "group.filter.class" | "config.property.filter.class" => {
            return "custom filter classes cannot be loaded; use the include/exclude regex lists";
        }
        "replication.policy.internal.topic.separator.enabled" => {
            return "Strait's own topics have fixed names (`state_topic`, `heartbeats`)";
        }
        "use.defaults.from" => {
            return "topic configs are copied from the source; excluded ones keep the target's defaults";
        }
        "exactly.once.support" => {
            return "a connector's request for exactly-once; the worker's \
                    `exactly.once.source.support` decides (`delivery.guarantee`)";
        }
        "consumer.poll.timeout.ms" | "admin.timeout.ms" => {
            return "Strait's client uses each cluster's `request_timeout`";
        }
        "forwarding.admin.class" => return "custom admin classes cannot be loaded",
        "replication.factor" | "topics" | "groups" => return "no flow uses it",
        _ => {}
    }
    let connect = [
        "offset.storage.",
        "config.storage.",
        "status.storage.",
        "key.converter",
        "value.converter",
        "header.converter",
        "rest.",
        "listeners",
    ];
    if suffix == "dedicated.mode.enable.internal.rest"
        || suffix == "offset.flush.interval.ms"
        || suffix == "group.id"
        || connect.iter().any(|p| suffix.starts_with(p))
    {
        return "a Kafka Connect worker setting; Strait does not run on Kafka Connect";
    }
    if suffix.starts_with("config.providers") {
        return "config providers are not supported; use `${ENV_VAR}` substitution in the TOML";
    }
    if let Some(r) = security::reason(suffix, cluster_suffix) {
        return r;
    }
    if cluster_suffix.starts_with("producer.") {
        return "the forwarder sends source batches as they are (compression included); producer tuning does not apply";
    }
    if cluster_suffix.starts_with("consumer.") || cluster_suffix.starts_with("admin.") {
        return "per-client Kafka properties are not configurable; see `[engine]` for fetch tuning";
    }
    "not a MirrorMaker 2 key that Strait knows"
}

/// Values of secret-looking keys are never echoed: passwords, JAAS lines, secrets, tokens,
/// credentials, private keys and inline certificates, API and access keys, and anything
/// about authentication
/// (Schema Registry's `basic.auth.user.info` is `user:password`).
fn shown(key: &str, value: &str) -> String {
    let k = key.to_ascii_lowercase();
    if [
        "password",
        "jaas",
        "secret",
        "token",
        "credential",
        "private",
        // Inline PEM (KIP-651): long, and a chain's file may carry its key too.
        "certificate",
        "auth",
        "user.info",
        "userinfo",
        "api.key",
        "apikey",
        "access.key",
    ]
    .iter()
    .any(|s| k.contains(s))
        // `ssl.keystore.key` (inline PEM key, KIP-651) and the like.
        || k.ends_with(".key")
        || value.contains("PRIVATE KEY")
    {
        "<redacted>".to_owned()
    } else {
        value.trim().to_owned()
    }
}

/// An MM2 comma-separated regex list.
fn regex_list(v: &str) -> Vec<String> {
    split_list(v).iter().map(|s| literal(s)).collect()
}

/// A literal `${` in an MM2 value must not be taken for a substitution in the TOML.
fn literal(v: &str) -> String {
    v.replace("${", "$${")
}

/// `A`, `BOOTSTRAP_SERVERS` → `A_BOOTSTRAP_SERVERS` (non-alphanumerics become `_`).
fn env_name(alias: &str, what: &str) -> String {
    let alias: String = alias
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    // A variable name must not start with a digit.
    let lead = if alias.starts_with(|c: char| c.is_ascii_digit()) {
        "CLUSTER_"
    } else {
        ""
    };
    format!("{lead}{alias}_{what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_cover_prefixed_keys() {
        assert!(reason("tasks.max").contains("Connect tasks"));
        assert!(reason("a->b.tasks.max").contains("Connect tasks"));
        assert!(reason("a.ssl.cipher.suites").contains("TLS"));
        assert!(reason("ssl.truststore.location").contains("no cluster"));
        assert!(reason("a.sasl.kerberos.service.name").contains("Kerberos"));
        assert!(reason("a.consumer.ssl.keystore.location").contains("one security setting"));
        assert!(reason("consumer.sasl.jaas.config").contains("one security setting"));
        assert!(reason("b.producer.compression.type").contains("compression"));
        assert!(reason("offset.storage.topic").contains("Kafka Connect"));
        assert!(reason("something.else").contains("not a MirrorMaker 2 key"));
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(shown("a.ssl.key.password", "hunter2"), "<redacted>");
        assert_eq!(
            shown("value.converter.basic.auth.user.info", "KEY:SuperSecret123"),
            "<redacted>"
        );
        assert_eq!(
            shown(
                "value.converter.schema.registry.basic.auth.user.info",
                "k:s"
            ),
            "<redacted>"
        );
        assert_eq!(shown("a.confluent.api.key", "ABC"), "<redacted>");
        assert_eq!(shown("a.sasl.jaas.config", "x"), "<redacted>");
        assert_eq!(shown("a.ssl.keystore.key", "x"), "<redacted>");
        assert_eq!(
            shown(
                "a.ssl.keystore.certificate.chain",
                "-----BEGIN PRIVATE KEY-----"
            ),
            "<redacted>"
        );
        assert_eq!(shown("a.ssl.truststore.certificates", "MIIB"), "<redacted>");
        assert_eq!(shown("tasks.max", " 4 "), "4");
    }

    #[test]
    fn env_names() {
        assert_eq!(
            env_name("us-east", "SASL_PASSWORD"),
            "US_EAST_SASL_PASSWORD"
        );
        assert_eq!(
            env_name("1dc", "BOOTSTRAP_SERVERS"),
            "CLUSTER_1DC_BOOTSTRAP_SERVERS"
        );
    }
}
