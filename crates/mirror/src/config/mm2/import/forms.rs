//! The forms an MM2 configuration comes in besides `mm2.properties`, each rewritten as the
//! equivalent `mm2.properties` entries so one mapping serves them all.
//!
//! - [`json`]: Kafka Connect REST JSON of the MirrorSource, MirrorCheckpoint and
//!   MirrorHeartbeat connectors (MM2 run on a Connect cluster);
//! - [`strimzi`]: a Strimzi `KafkaMirrorMaker2` custom resource (YAML).
//!
//! MirrorMaker 1 files and other YAML are recognised and refused with what they are.

use std::collections::HashMap;

use super::super::properties::{Overridden, Property};
use super::ImportError;

pub(super) mod json;
pub(super) mod mm1;
pub(super) mod strimzi;

/// What a text to import is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// `connect-mirror-maker` properties (or anything else in properties syntax).
    Properties,
    /// Kafka Connect REST JSON.
    ConnectJson,
    /// A Strimzi `KafkaMirrorMaker2` resource.
    Strimzi,
    /// A MirrorMaker 1 consumer config, with the producer config and topic regex given
    /// as options.
    MirrorMaker1,
}

impl Form {
    /// How the TOML's header names the input.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Properties => "a MirrorMaker 2 properties file",
            Self::ConnectJson => "Kafka Connect REST JSON of MirrorMaker 2 connectors",
            Self::Strimzi => "a Strimzi KafkaMirrorMaker2 resource",
            Self::MirrorMaker1 => "a MirrorMaker 1 consumer.properties + producer.properties pair",
        }
    }
}

/// Recognises the form of `text`; YAML that is not a `KafkaMirrorMaker2` is refused here.
pub(super) fn detect(text: &str) -> Result<Form, ImportError> {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') || body.starts_with('[') {
        return Ok(Form::ConnectJson);
    }
    let yaml_line = |l: &str| {
        let l = l.trim_end();
        l == "---" || l.starts_with("apiVersion:") || l.starts_with("kind:")
    };
    if body.lines().any(yaml_line) {
        let kind = body
            .lines()
            .find_map(|l| l.trim_end().strip_prefix("kind:"))
            .map(|k| k.trim().trim_matches(['"', '\'']).to_owned())
            .unwrap_or_default();
        return match kind.as_str() {
            "KafkaMirrorMaker2" => Ok(Form::Strimzi),
            _ => Err(ImportError::UnsupportedForm(format!(
                "this is YAML of kind `{kind}`, not a Strimzi `KafkaMirrorMaker2` resource; \
                 import-mm2 reads mm2.properties, Kafka Connect REST JSON of the MirrorMaker 2 \
                 connectors, or a `KafkaMirrorMaker2` (for Strimzi's older `KafkaMirrorMaker`, \
                 MirrorMaker 1, write the mm2.properties equivalent)"
            ))),
        };
    }
    Ok(Form::Properties)
}

/// A form rewritten as MM2 properties, with what the rewrite has to say.
pub(super) struct Rewritten {
    /// The equivalent `mm2.properties` entries (lines point into the original text
    /// where the key can be found there, else 0).
    pub entries: Vec<Property>,
    /// A key set twice with different values, and which won.
    pub overridden: Vec<Overridden>,
    /// Remarks on the rewrite: `(key, reason)`.
    pub notes: Vec<(String, String)>,
    /// Lines for the TOML's header comment (names of secrets, never values).
    pub comments: Vec<String>,
}

impl Rewritten {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            overridden: Vec::new(),
            notes: Vec::new(),
            comments: Vec::new(),
        }
    }

    /// Sets `key`; a second, different value wins, and the first is reported.
    pub(super) fn set(&mut self, key: String, value: String, line: usize) {
        if let Some(at) = self.entries.iter().position(|p| p.key == key) {
            if self.entries[at].value == value {
                return;
            }
            let old = self.entries.remove(at);
            self.overridden.push(Overridden {
                key: key.clone(),
                line: old.line,
                winner: line,
            });
        }
        self.entries.push(Property { key, value, line });
    }

    /// Sets `key` unless it is set already.
    pub(super) fn set_default(&mut self, key: String, value: String) {
        if !self.entries.iter().any(|p| p.key == key) {
            self.entries.push(Property {
                key,
                value,
                line: 0,
            });
        }
    }
}

/// Which MM2 connectors a source → target pair has.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Present {
    /// A MirrorSourceConnector: data is replicated.
    pub source: bool,
    /// A MirrorCheckpointConnector: checkpoints and group offset sync.
    pub checkpoint: bool,
    /// A MirrorHeartbeatConnector: heartbeats.
    pub heartbeat: bool,
}

impl Rewritten {
    /// The flow `s->t` as its connectors make it: disabled without a source connector,
    /// heartbeats and checkpoints off without theirs (as in MM2), each said in a note.
    pub(super) fn connectors(&mut self, s: &str, t: &str, present: Present) {
        let flow = format!("{s}->{t}");
        self.set_default(format!("{flow}.enabled"), present.source.to_string());
        if !present.source {
            self.notes.push((
                format!("{flow}.enabled"),
                "no MirrorSourceConnector for this pair: the flow is imported disabled \
                 (a checkpoint or heartbeat connector alone replicates no data)"
                    .to_owned(),
            ));
        }
        if !present.heartbeat {
            self.set_default(
                format!("{flow}.emit.heartbeats.enabled"),
                "false".to_owned(),
            );
            self.notes.push((
                format!("{flow}.emit.heartbeats.enabled"),
                "no MirrorHeartbeatConnector for this pair: heartbeats are off (`sync.heartbeats = false`)"
                    .to_owned(),
            ));
        }
        if !present.checkpoint {
            self.set_default(
                format!("{flow}.emit.checkpoints.enabled"),
                "false".to_owned(),
            );
            self.set_default(
                format!("{flow}.sync.group.offsets.enabled"),
                "false".to_owned(),
            );
            self.notes.push((
                format!("{flow}.emit.checkpoints.enabled"),
                "no MirrorCheckpointConnector for this pair: checkpoints and group offset sync are off"
                    .to_owned(),
            ));
        }
    }
}

/// The 1-based line of `"key"` (JSON) or `key:` (YAML) in `text` when it occurs on one
/// line only; 0 when it is absent or repeated (several connectors or clusters set it), so
/// a reported line is never another entry's.
pub(super) fn line_of(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    let yaml = format!("{key}:");
    let mut found = text.lines().enumerate().filter(|(_, l)| {
        l.contains(&quoted) || l.trim_start().trim_start_matches("- ").starts_with(&yaml)
    });
    match (found.next(), found.next()) {
        (Some((i, _)), None) => i + 1,
        _ => 0,
    }
}

/// A properties file without `clusters` that is one half of a MirrorMaker 1 pair (the
/// `--consumer.config` or `--producer.config` of `kafka-mirror-maker.sh`): the error saying
/// so, else `None`.
pub(super) fn mirror_maker_1(props: &HashMap<String, Property>) -> Option<ImportError> {
    let has = |k: &str| props.contains_key(k);
    if !has("bootstrap.servers") && !has("zookeeper.connect") {
        return None;
    }
    let consumer = [
        "group.id",
        "auto.offset.reset",
        "key.deserializer",
        "partition.assignment.strategy",
    ]
    .iter()
    .any(|k| has(k));
    let producer = [
        "acks",
        "key.serializer",
        "batch.size",
        "linger.ms",
        "compression.type",
    ]
    .iter()
    .any(|k| has(k));
    let half = match (consumer, producer) {
        (true, _) => "consumer.properties (`--consumer.config`)",
        (false, true) => "producer.properties (`--producer.config`)",
        (false, false) => return None,
    };
    Some(ImportError::UnsupportedForm(format!(
        "this looks like a MirrorMaker 1 {half}, not an MM2 file (no `clusters = A, B`); \
         to convert a MirrorMaker 1 setup, give its consumer config as the file, with \
         `--producer-config <producer.properties>` and `--include '<the --include/--whitelist regex>'`"
    )))
}

#[cfg(test)]
mod tests;
