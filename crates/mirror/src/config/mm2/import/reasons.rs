//! Why an MM2 key has no Strait equivalent, which values are never shown, and the list of
//! unconverted keys as the importer returns it.

use std::collections::BTreeMap;

use super::{COLLAPSE_AT, Props, UnmappedKey, security};

impl Props {
    /// The prefix `key` is grouped under: `A->B.` or `A.` (a known alias) and the next
    /// segment, else the first segment (`producer.`); the whole key when it has no more.
    fn family(&self, key: &str) -> String {
        let parts: Vec<&str> = key.split('.').collect();
        let first = parts[0];
        let scoped = first.contains("->") || self.aliases.iter().any(|a| a == first);
        let take = if scoped { 2 } else { 1 };
        if parts.len() <= take {
            return format!("{key}.");
        }
        format!("{}.", parts[..take].join("."))
    }

    /// Every key not used, with its reason, in file order; [`COLLAPSE_AT`] or more of one
    /// prefix (`A.consumer.*`, `producer.*`) with one reason become one entry.
    pub(super) fn finish(mut self) -> Vec<UnmappedKey> {
        // Keyed by (line, position in the file): lines repeat (0 for keys of another
        // file or with no line in a rewritten form).
        let mut reasons: BTreeMap<(usize, usize), UnmappedKey> = BTreeMap::new();
        let mut groups: BTreeMap<(String, &'static str), Vec<(usize, usize)>> = BTreeMap::new();
        for (at, key) in self.order.iter().enumerate() {
            if self.used.contains(key) {
                continue;
            }
            let p = &self.map[key];
            let why = reason(key);
            let slot = (p.line, at);
            groups
                .entry((self.family(key), why))
                .or_default()
                .push(slot);
            reasons.insert(
                slot,
                UnmappedKey {
                    key: key.clone(),
                    value: shown(key, self.as_written(p)),
                    line: p.line,
                    reason: why.to_owned(),
                },
            );
        }
        collapse(&mut reasons, groups);
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
                // One variable a line: export commands are long.
                reason: format!(
                    "the TOML reads these variables; export them before `strait config validate` or a run:\n- {}",
                    vars.join("\n- ")
                ),
            });
        }
        self.unmapped
    }
}

/// Replaces the entries of each group of [`COLLAPSE_AT`] or more keys (one prefix, one
/// reason; `groups` maps it to the keys' slots in `reasons`) with one `prefix*` entry.
fn collapse(
    reasons: &mut BTreeMap<(usize, usize), UnmappedKey>,
    groups: BTreeMap<(String, &'static str), Vec<(usize, usize)>>,
) {
    for ((family, why), slots) in groups {
        if slots.len() < COLLAPSE_AT {
            continue;
        }
        for slot in &slots {
            reasons.remove(slot);
        }
        let lines: Vec<String> = slots
            .iter()
            .filter(|(line, _)| *line > 0)
            .map(|(line, _)| line.to_string())
            .collect();
        let listed = if lines.is_empty() {
            String::new()
        } else {
            format!(" (lines {})", lines.join(", "))
        };
        reasons.insert(
            slots[0],
            UnmappedKey {
                key: format!("{family}*"),
                value: String::new(),
                line: slots[0].0,
                reason: format!("{} keys{listed}: {why}", slots.len()),
            },
        );
    }
}

/// Client-override prefixes of a cluster (`A.consumer.*`) or of every cluster.
const CLIENTS: [&str; 3] = ["consumer.", "producer.", "admin."];
/// Connector-level client overrides (Connect's `*.override.*`).
const OVERRIDES: [&str; 3] = [
    "producer.override.",
    "consumer.override.",
    "admin.override.",
];
/// Kafka Connect worker settings MM2's dedicated mode reads, whole keys.
const CONNECT_WORKER_KEYS: [&str; 9] = [
    "group.id",
    "dedicated.mode.enable.internal.rest",
    "plugin.path",
    "connector.client.config.override.policy",
    "config.action.reload",
    "listeners",
    "admin.listeners",
    "task.shutdown.graceful.timeout.ms",
    "heartbeat.interval.ms",
];
/// Kafka Connect worker settings, by prefix.
const CONNECT_WORKER_PREFIXES: [&str; 14] = [
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "offset.flush.",
    "key.converter",
    "value.converter",
    "header.converter",
    "rest.",
    "listeners.",
    "worker.",
    "scheduled.rebalance.",
    "inter.worker.",
    "session.",
    "rebalance.",
];

/// Why an MM2 key has no Strait equivalent. `key` may carry an `A.` or `A->B.` prefix.
pub(super) fn reason(key: &str) -> &'static str {
    let suffix = key
        .split_once("->")
        .and_then(|(_, rest)| rest.split_once('.'))
        .map_or(key, |(_, k)| k);
    // Connector-level keys match on the whole suffix; cluster-level ones after `A.`.
    let cluster_suffix = suffix.split_once('.').map_or(suffix, |(_, k)| k);
    if let Some(r) = connector_key(suffix) {
        return r;
    }
    // A client override (`consumer.group.id`) is not the worker's `group.id`.
    let client = |k: &str| CLIENTS.iter().any(|c| k.starts_with(c));
    let worker = |k: &str| {
        CONNECT_WORKER_KEYS.contains(&k) || CONNECT_WORKER_PREFIXES.iter().any(|p| k.starts_with(p))
    };
    if !client(suffix) && (worker(suffix) || (!client(cluster_suffix) && worker(cluster_suffix))) {
        return "a Kafka Connect worker setting (MM2 runs on Connect); Strait has no Connect worker, \
                so it needs no internal topics, converters, REST listener or worker group";
    }
    if suffix.starts_with("config.providers") {
        return "config provider definitions: Strait has none; the `${provider:…}` references were \
                converted to `${VAR}` (see the `environment` entry for how to export each one)";
    }
    if suffix.starts_with("metric.reporters") || suffix.starts_with("metrics.") {
        return "Strait exports its own metrics (`[metrics]`, Prometheus); JMX reporters do not apply";
    }
    if let Some(r) = security::reason(suffix, cluster_suffix) {
        return r;
    }
    if [suffix, cluster_suffix]
        .iter()
        .any(|k| OVERRIDES.iter().any(|o| k.starts_with(o)))
    {
        return "a connector's client override: Strait configures its own consumers, producers and admin \
                clients (batches are forwarded as the source wrote them; fetch tuning is in `[engine]`)";
    }
    // `A.producer.*` (a cluster's), `producer.*` and `A->B.producer.*` (every cluster's, a flow's).
    let client_key = |c: &str| suffix.starts_with(c) || cluster_suffix.starts_with(c);
    if client_key("producer.") {
        return "the forwarder sends source batches as they are (compression included); producer tuning does not apply";
    }
    if client_key("consumer.") || client_key("admin.") {
        return "per-client Kafka properties are not configurable; see `[engine]` for fetch tuning";
    }
    "not a MirrorMaker 2 key that Strait knows"
}

/// Why a connector-level key (matched on its whole suffix after any `A->B.`) has no Strait
/// equivalent, for the keys named one by one: a flat table, one arm per key or family.
fn connector_key(suffix: &str) -> Option<&'static str> {
    match suffix {
        "tasks.max" => Some(
            "Strait has no Connect tasks: one process pipelines every partition of a flow, and more \
             processes share a flow's partitions with `[flows.scale_out]` (a Kafka group on the target)",
        ),
        "offset-syncs.topic.location"
        | "offset-syncs.topic.replication.factor"
        | "emit.offset-syncs.enabled"
        | "offset.lag.max" => Some(
            "Strait keeps exact offset maps in its state topic on the target (`state_topic`); there is no \
             offset-syncs topic and no sync spacing",
        ),
        "heartbeats.topic.replication.factor" | "checkpoints.topic.replication.factor" => {
            Some("Strait creates its own topics with the flow's `topics.replication_factor`")
        }
        "source.cluster.alias" => Some("no flow uses it"),
        "target.cluster.alias" => Some(
            "MM2 names its offset-syncs topic after the target alias; Strait has no such topic and \
             names the target by its cluster name",
        ),
        "refresh.topics.enabled" | "refresh.groups.enabled" => Some(
            "Strait always discovers new topics and groups; tune `intervals.topic_refresh` / `intervals.group_sync`",
        ),
        "heartbeats.replication.enabled" => {
            Some("heartbeats topics are replicated whenever `sync.heartbeats` is on")
        }
        "topic.filter.class" | "group.filter.class" | "config.property.filter.class" => {
            Some("custom filter classes cannot be loaded; use the include/exclude regex lists")
        }
        "replication.policy.internal.topic.separator.enabled" => {
            Some("Strait's own topics have fixed names (`state_topic`, `heartbeats`)")
        }
        "use.defaults.from" => Some(
            "topic configs are copied from the source; excluded ones keep the target's defaults",
        ),
        "exactly.once.support" => Some(
            "a connector's request for exactly-once; the worker's \
             `exactly.once.source.support` decides (`delivery.guarantee`)",
        ),
        "consumer.poll.timeout.ms" | "admin.timeout.ms" => {
            Some("Strait's client uses each cluster's `request_timeout`")
        }
        "forwarding.admin.class" => Some("custom admin classes cannot be loaded"),
        "replication.factor" | "topics" | "groups" => Some("no flow uses it"),
        _ => None,
    }
}

/// Keys holding `key` that are known not to be secret, shown as written (matched at the
/// end of the key, so `A.consumer.ssl.keystore.location` is one too).
const NOT_SECRET_KEYS: [&str; 6] = [
    "key.converter",
    "key.converter.schemas.enable",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keymanager.algorithm",
    "session.key.generation.algorithm",
];

/// Values of secret-looking keys are never echoed: any key naming a password, secret,
/// token or key (API, access, private, inline PEM: `ssl.keystore.key`), JAAS lines,
/// credentials, certificates and anything about authentication (Schema Registry's
/// `basic.auth.user.info` is `user:password`); and any value that looks like a JAAS line
/// or holds a private key, whatever its key. When in doubt, redact.
pub(super) fn shown(key: &str, value: &str) -> String {
    let k = key.to_ascii_lowercase();
    let v = value.to_ascii_lowercase();
    let known_plain = NOT_SECRET_KEYS
        .iter()
        .any(|n| k == *n || k.ends_with(&format!(".{n}")));
    let secret_key = [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "jaas",
        "secret",
        "token",
        "credential",
        "private",
        "bearer",
        // Inline PEM (KIP-651): long, and a chain's file may carry its key too.
        "certificate",
        "auth",
        "user.info",
        "userinfo",
        "key",
    ]
    .iter()
    .any(|s| k.contains(s));
    let secret_value = v.contains("private key")
        || v.contains("password=")
        || v.contains("loginmodule")
        || v.contains("secret=");
    if (secret_key && !known_plain) || secret_value {
        "<redacted>".to_owned()
    } else {
        value.trim().to_owned()
    }
}

#[cfg(test)]
mod tests;
