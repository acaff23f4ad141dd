//! Kafka Connect REST JSON of MirrorMaker 2 connectors → `mm2.properties` entries.
//!
//! Accepts what `GET /connectors/<name>/config` returns (one config object), what
//! `POST /connectors` takes (`{"name": …, "config": {…}}`), a list of either, and
//! `GET /connectors?expand=info` (`{"<name>": {"info": {"name": …, "config": {…}}}}`).
//! The connectors of one `source.cluster.alias` → `target.cluster.alias` pair become one
//! flow: `source.cluster.<k>` → `S.<k>`, `target.cluster.<k>` → `T.<k>`, the connector
//! client overrides (`source.consumer.*`, `target.producer.*`, `*.admin.*`) → `S.consumer.*`
//! and so on, every other key → `S->T.<k>`. Without a MirrorSourceConnector the flow is
//! imported disabled; without a heartbeat or checkpoint connector, heartbeats or
//! checkpoints are off, as they are in MM2.

use serde_json::{Map, Value};

use super::{ImportError, Present, Rewritten, line_of};

/// MM2's defaults for the two aliases (`MirrorConnectorConfig`).
const DEFAULT_SOURCE: &str = "source";
const DEFAULT_TARGET: &str = "target";

/// Connector-level client prefixes and the cluster-scoped MM2 prefix they become.
const CLIENT_PREFIXES: [(&str, bool, &str); 6] = [
    ("source.consumer.", true, "consumer."),
    ("source.producer.", true, "producer."),
    ("source.admin.", true, "admin."),
    ("target.consumer.", false, "consumer."),
    ("target.producer.", false, "producer."),
    ("target.admin.", false, "admin."),
];

/// The three MM2 connectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    // In this order, so a MirrorSourceConnector's value of a shared key wins.
    Heartbeat,
    Checkpoint,
    Source,
}

/// One connector: its name and config.
struct Connector {
    name: String,
    config: Map<String, Value>,
}

/// Rewrites Connect REST JSON as MM2 properties.
pub(in super::super) fn rewrite(text: &str) -> Result<Rewritten, ImportError> {
    // serde_json's syntax errors give a position, never the text.
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| ImportError::Json(e.to_string()))?;
    let mut connectors = Vec::new();
    collect(&value, &mut connectors)?;
    let mut out = Rewritten::new();
    let mirror = mirror_connectors(connectors, &mut out)?;

    let mut clusters: Vec<String> = Vec::new();
    let mut pairs: Vec<((String, String), Vec<Kind>)> = Vec::new();
    for (kind, c) in &mirror {
        let alias = |key: &str, default: &str| {
            c.config
                .get(key)
                .map(string)
                .filter(|a| !a.trim().is_empty())
                .map_or_else(|| default.to_owned(), |a| a.trim().to_owned())
        };
        let (s, t) = (
            alias("source.cluster.alias", DEFAULT_SOURCE),
            alias("target.cluster.alias", DEFAULT_TARGET),
        );
        for a in [&s, &t] {
            if !clusters.contains(a) {
                clusters.push(a.clone());
            }
        }
        match pairs.iter_mut().find(|(p, _)| *p == (s.clone(), t.clone())) {
            Some((_, kinds)) => kinds.push(*kind),
            None => pairs.push(((s.clone(), t.clone()), vec![*kind])),
        }
        copy_config(text, c, &s, &t, &mut out);
    }

    out.set_default("clusters".to_owned(), clusters.join(", "));
    for ((s, t), kinds) in pairs {
        out.connectors(
            &s,
            &t,
            Present {
                source: kinds.contains(&Kind::Source),
                checkpoint: kinds.contains(&Kind::Checkpoint),
                heartbeat: kinds.contains(&Kind::Heartbeat),
            },
        );
    }
    Ok(out)
}

/// The MirrorMaker 2 connectors of `connectors`, by kind (a MirrorSourceConnector's last,
/// so its values win); any other connector is skipped with a note in `out`. An error when
/// there is none.
fn mirror_connectors(
    connectors: Vec<Connector>,
    out: &mut Rewritten,
) -> Result<Vec<(Kind, Connector)>, ImportError> {
    let mut mirror: Vec<(Kind, Connector)> = Vec::new();
    for c in connectors {
        let class = c
            .config
            .get("connector.class")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let kind = match class.rsplit('.').next().unwrap_or_default() {
            "MirrorSourceConnector" => Kind::Source,
            "MirrorCheckpointConnector" => Kind::Checkpoint,
            "MirrorHeartbeatConnector" => Kind::Heartbeat,
            _ => {
                out.notes.push((
                    format!("{}.connector.class", c.name),
                    format!(
                        "connector `{}` is `{class}`, not a MirrorMaker 2 connector: skipped",
                        c.name
                    ),
                ));
                continue;
            }
        };
        mirror.push((kind, c));
    }
    if mirror.is_empty() {
        return Err(ImportError::UnsupportedForm(
            "this JSON holds no MirrorSourceConnector, MirrorCheckpointConnector or \
             MirrorHeartbeatConnector config (`connector.class`)"
                .to_owned(),
        ));
    }
    mirror.sort_by_key(|(kind, _)| *kind);
    Ok(mirror)
}

/// Copies connector `c`'s config (of the flow `s` → `t`) into `out` as MM2 properties.
fn copy_config(text: &str, c: &Connector, s: &str, t: &str, out: &mut Rewritten) {
    for (k, v) in &c.config {
        let line = line_of(text, k);
        let v = string(v);
        match k.as_str() {
            "name" | "connector.class" | "target.cluster.alias" => continue,
            // Kept for naming: an empty one is the identity trick, another names replicas.
            "source.cluster.alias" => {
                out.set(format!("{s}->{t}.source.cluster.alias"), v, line);
                continue;
            }
            _ => {}
        }
        out.set(key_for(k, s, t), v, line);
    }
}

/// The MM2 property a connector key `k` of the flow `s` → `t` becomes: cluster keys and
/// client overrides scoped to their cluster, every other key to the flow.
fn key_for(k: &str, s: &str, t: &str) -> String {
    let client = CLIENT_PREFIXES
        .iter()
        .find_map(|(p, source, to)| k.strip_prefix(p).map(|rest| (*source, *to, rest)));
    if let Some(rest) = k.strip_prefix("source.cluster.") {
        format!("{s}.{rest}")
    } else if let Some(rest) = k.strip_prefix("target.cluster.") {
        format!("{t}.{rest}")
    } else if let Some((source, to, rest)) = client {
        format!("{}.{to}{rest}", if source { s } else { t })
    } else {
        format!("{s}->{t}.{k}")
    }
}

/// The connectors in `v`: a config object, `{"name", "config"}`, a list, or an
/// `expand=info` map.
fn collect(v: &Value, out: &mut Vec<Connector>) -> Result<(), ImportError> {
    let not_connectors = || {
        ImportError::UnsupportedForm(
            "this JSON is not Kafka Connect connector config: expected a config object with \
             `connector.class`, `{\"name\": …, \"config\": {…}}`, a list of them, or the output \
             of `GET /connectors?expand=info`"
                .to_owned(),
        )
    };
    match v {
        Value::Array(items) => {
            for item in items {
                collect(item, out)?;
            }
            Ok(())
        }
        Value::Object(map) if map.contains_key("connector.class") => {
            out.push(Connector {
                name: map.get("name").map_or_else(|| "?".to_owned(), string),
                config: map.clone(),
            });
            Ok(())
        }
        Value::Object(map) => match map.get("config") {
            Some(Value::Object(config)) => {
                let name = map
                    .get("name")
                    .or_else(|| config.get("name"))
                    .map_or_else(|| "?".to_owned(), string);
                out.push(Connector {
                    name,
                    config: config.clone(),
                });
                Ok(())
            }
            Some(_) => Err(not_connectors()),
            None if !map.is_empty() && map.values().all(Value::is_object) => {
                for entry in map.values() {
                    collect(entry.get("info").unwrap_or(entry), out)?;
                }
                Ok(())
            }
            None => Err(not_connectors()),
        },
        _ => Err(not_connectors()),
    }
}

/// A JSON value as a properties value (Connect accepts numbers and booleans too).
fn string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
