//! `mm2.properties` → Strait TOML.
//!
//! The importer writes out every effective value (defaults included) so the result can be
//! reviewed as a whole. Where MM2's default differs from Strait's in *what* gets written
//! (`sync.group.offsets.enabled` = false, `replication.factor` = 2), MM2's value is written
//! so the imported flow behaves like the MM2 one. Every key it cannot carry over is
//! returned as an [`UnmappedKey`] with the reason.

use std::collections::{HashMap, HashSet};

use super::properties::{self, PropertiesError, Property};
use crate::config::cluster::split_list;
use crate::config::model::ConfigFile;
use crate::config::naming::NamingPolicy;

mod cluster;
mod flow;
mod forms;
mod jaas;
mod placeholders;
mod reasons;
mod security;
use crate::config::units::HumanDuration;
use reasons::shown;

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
    /// A topic, group or config filter holds a `${…}` reference the importer cannot carry
    /// over; dropping it would widen what is replicated.
    #[error(
        "line {line}: `{key}` holds a `${{…}}` reference other than `${{NAME}}` or `${{env:NAME}}`; \
         the importer cannot know what it selects, and leaving it out would replicate every topic \
         (or sync every group or config): write the list out, or use `${{NAME}}` / `${{env:NAME}}`"
    )]
    TemplatedFilter {
        /// The MM2 key.
        key: String,
        /// 1-based line.
        line: usize,
    },
    /// A `replication.policy.class` other than MM2's two, and no `--policy` choice.
    #[error(
        "line {line}: `{key}` is the custom replication policy {class}, which Strait cannot load; \
         choose how target topics are named: `--policy identity` (the source topic names) or \
         `--policy prefix` (`<source alias>{separator}<topic>`, separator \"{separator}\")"
    )]
    CustomPolicy {
        /// The MM2 key.
        key: String,
        /// 1-based line.
        line: usize,
        /// The class, as written.
        class: String,
        /// The separator the flow would use with `prefix`.
        separator: String,
    },
    /// `refresh.topics.enabled = false`: Strait always discovers new topics.
    #[error(
        "line {line}: `{key}` = false: MM2 then replicates only the topics that exist when it starts, \
         but Strait always discovers new topics (every `intervals.topic_refresh`, at most 1 day) and has \
         no switch to turn that off, so the import would replicate more than MM2 does: list the topics \
         to replicate in `topics` (names, not patterns) and remove this key"
    )]
    RefreshDisabled {
        /// The MM2 key.
        key: String,
        /// 1-based line.
        line: usize,
    },
    /// The text is JSON that cannot be read (the message gives a position, never text).
    #[error("not valid JSON: {0}")]
    Json(String),
    /// The text is YAML that cannot be read.
    #[error("not valid YAML: {0}")]
    Yaml(String),
    /// The text is a form of configuration the importer recognises but does not convert,
    /// or a recognised form without what it needs.
    #[error("{0}")]
    UnsupportedForm(String),
    /// The TOML could not be written (a bug: every model value is representable).
    #[error("cannot write the converted config as TOML: {0}")]
    Write(String),
}

const HEADER: &str = "\
# Every effective value is written out; review it, then check it with
# `strait config validate -c <this file>`. MM2 defaults that change what is written
# (sync.group_offsets = false, topics.replication_factor = 2) are kept as MM2 had them.
# Keys that could not be converted were listed on stderr by the importer.
";

const DEFAULT_POLICY: &str = "DefaultReplicationPolicy";
const IDENTITY_POLICY: &str = "IdentityReplicationPolicy";
/// MM2's `replication.factor` default (Strait's is the broker default, -1).
const MM2_REPLICATION_FACTOR: i64 = 2;

/// Choices the properties file cannot make.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The naming policy for flows whose `replication.policy.class` is a custom class
    /// (`--policy`); without it such a file is refused.
    pub policy: Option<NamingPolicy>,
    /// Read the text as a MirrorMaker 1 consumer config, with this producer config and
    /// topic regex (`--producer-config`, `--include`).
    pub mirror_maker_1: Option<MirrorMaker1>,
}

/// The other two parts of a MirrorMaker 1 setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorMaker1 {
    /// The text of its `--producer.config` file.
    pub producer: String,
    /// Its `--include` (or `--whitelist`) regex; commas separate alternatives, as in
    /// MirrorMaker 1's whitelist.
    pub include: String,
}

/// Topic, group and config filter keys: a value that cannot be converted fails the import.
const FILTER_KEYS: [&str; 8] = [
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "groups",
    "groups.exclude",
    "groups.blacklist",
    "config.properties.exclude",
    "config.properties.blacklist",
];

/// Converts MM2 properties text into Strait TOML, plus the keys it could not map.
pub fn import_mm2(properties_text: &str) -> Result<(String, Vec<UnmappedKey>), ImportError> {
    import_mm2_with(properties_text, &ImportOptions::default())
}

/// [`import_mm2`] with the choices of `options`. Besides `mm2.properties`, `text` may be
/// Kafka Connect REST JSON of the MirrorMaker 2 connectors or a Strimzi
/// `KafkaMirrorMaker2` resource (YAML); each is rewritten as the equivalent properties.
pub fn import_mm2_with(
    text: &str,
    options: &ImportOptions,
) -> Result<(String, Vec<UnmappedKey>), ImportError> {
    let form = match options.mirror_maker_1 {
        Some(_) => forms::Form::MirrorMaker1,
        None => forms::detect(text)?,
    };
    let rewritten = match (form, &options.mirror_maker_1) {
        (forms::Form::MirrorMaker1, Some(mm1)) => {
            forms::mm1::rewrite(text, &mm1.producer, &mm1.include)?
        }
        (forms::Form::Properties | forms::Form::MirrorMaker1, _) => {
            let (entries, overridden) = properties::parse_with_overrides(text)?;
            forms::Rewritten {
                entries,
                overridden,
                ..forms::Rewritten::new()
            }
        }
        (forms::Form::ConnectJson, _) => forms::json::rewrite(text)?,
        (forms::Form::Strimzi, _) => forms::strimzi::rewrite(text)?,
    };
    let mut props = Props::new(rewritten.entries);
    props.policy_choice = options.policy;
    props.comments.extend(rewritten.comments);
    for o in rewritten.overridden {
        let reason = if form == forms::Form::Properties {
            format!(
                "given again on line {}: the last entry wins, as in Java's Properties, so this one is ignored",
                o.winner
            )
        } else {
            "set again with another value by a later connector or section; the MirrorSourceConnector's \
             (else the last) value is used"
                .to_owned()
        };
        props.unmapped.push(UnmappedKey {
            key: o.key,
            value: String::new(),
            line: o.line,
            reason,
        });
    }
    for (key, reason) in rewritten.notes {
        props.note(&key, "", &reason);
    }
    props.check_refusals()?;
    let aliases = props
        .typed(&["clusters".to_owned()])
        .map(|(_, v)| split_list(&v))
        .unwrap_or_default();
    // An alias becomes a TOML table name, where `${` would read as a substitution.
    if aliases.is_empty() || aliases.iter().any(|a| a.contains("${")) {
        return Err(forms::mirror_maker_1(&props.map).unwrap_or(ImportError::NoClusters));
    }

    props.aliases.clone_from(&aliases);
    let mut file = ConfigFile::default();
    for alias in &aliases {
        let cluster = props.cluster(alias);
        file.clusters.insert(alias.clone(), cluster);
    }
    for (source, target) in props.flow_pairs(&aliases) {
        let flow = props.flow(&source, &target)?;
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
    let body = placeholders::resolve(
        &toml::to_string_pretty(&table).map_err(|e| ImportError::Write(e.to_string()))?,
    );
    let comments: String = props
        .comments
        .iter()
        // A value with a newline escape must not end the comment.
        .map(|c| {
            let c = placeholders::resolve(c);
            format!("#\n# {}\n", c.replace(|ch: char| ch.is_control(), " "))
        })
        .collect();
    let mut unmapped = props.finish();
    for u in &mut unmapped {
        u.reason = placeholders::resolve(&u.reason);
    }
    let header = format!(
        "# Converted from {} by `strait config import-mm2`.\n{HEADER}",
        form.describe()
    );
    Ok((format!("{header}{comments}\n{body}"), unmapped))
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
    /// The `${…}` references of each converted value (keys absent: none).
    refs: HashMap<String, Vec<placeholders::Reference>>,
    /// Keys whose value has a `${…}` the importer cannot read.
    unconvertible: HashSet<String>,
    /// The values as written, of keys whose value was converted (shown in messages).
    written: HashMap<String, String>,
    /// `--policy`: the naming of flows with a custom replication policy class.
    policy_choice: Option<NamingPolicy>,
    /// The cluster aliases (`clusters`), to group unused keys by cluster.
    aliases: Vec<String>,
}

/// This many unused keys of one prefix with one reason are listed as one entry.
const COLLAPSE_AT: usize = 3;

/// Why a `${…}` reference cannot stand where a typed value is needed.
const TYPED_REFERENCE: &str = "a `${…}` reference cannot stand for a number, a boolean or a choice \
     in the TOML (the importer has to know the value): write the value; the default was used";

impl Props {
    fn new(entries: Vec<Property>) -> Self {
        let mut props = Self {
            map: HashMap::new(),
            order: Vec::new(),
            used: HashSet::new(),
            unmapped: Vec::new(),
            env: Vec::new(),
            comments: Vec::new(),
            refs: HashMap::new(),
            unconvertible: HashSet::new(),
            written: HashMap::new(),
            policy_choice: None,
            aliases: Vec::new(),
        };
        // Which source each variable name stands for, so two different sources never
        // share one variable.
        let mut vars: HashMap<String, placeholders::Source> = HashMap::new();
        for mut p in entries {
            match placeholders::convert(&p.value) {
                Ok(None) => {}
                Ok(Some((mut text, mut refs))) => {
                    for r in &mut refs {
                        let mut var = r.var.clone();
                        let mut n = 1;
                        while vars.get(&var).is_some_and(|s| *s != r.source) {
                            n += 1;
                            var = format!("{}_{n}", r.var);
                        }
                        if var != r.var {
                            let sentinel = |v: &str| {
                                format!("{}{v}{}", placeholders::OPEN, placeholders::CLOSE)
                            };
                            text = text.replacen(&sentinel(&r.var), &sentinel(&var), 1);
                            r.var = var.clone();
                        }
                        vars.insert(var, r.source.clone());
                    }
                    let written = std::mem::replace(&mut p.value, text);
                    props.written.insert(p.key.clone(), written);
                    props.refs.insert(p.key.clone(), refs);
                }
                Err(placeholders::Unconvertible) => {
                    props.unconvertible.insert(p.key.clone());
                }
            }
            props.order.push(p.key.clone());
            props.map.insert(p.key.clone(), p);
        }
        props
    }

    /// The value of `p` as the file has it (before `${…}` conversion).
    fn as_written<'p>(&'p self, p: &'p Property) -> &'p str {
        self.written.get(&p.key).map_or(&p.value, String::as_str)
    }

    /// Refuses what cannot be imported without replicating more than MM2 does: a filter
    /// whose `${…}` is not an environment variable, and `refresh.topics.enabled = false`.
    fn check_refusals(&self) -> Result<(), ImportError> {
        for key in &self.order {
            let p = &self.map[key];
            let suffix = flow_suffix(key);
            let filter = FILTER_KEYS.contains(&suffix);
            let env_only = self
                .refs
                .get(key)
                .is_none_or(|refs| refs.iter().all(placeholders::Reference::is_env));
            if filter && (self.unconvertible.contains(key) || !env_only) {
                return Err(ImportError::TemplatedFilter {
                    key: key.clone(),
                    line: p.line,
                });
            }
            if suffix == "refresh.topics.enabled" && p.value.trim().eq_ignore_ascii_case("false") {
                return Err(ImportError::RefreshDisabled {
                    key: key.clone(),
                    line: p.line,
                });
            }
        }
        Ok(())
    }

    /// The value of `key`, marking it used; its `${…}` references are listed among the
    /// variables to export.
    fn take(&mut self, key: &str) -> Option<String> {
        let p = self.map.get(key)?;
        let value = p.value.trim().to_owned();
        if self.unconvertible.contains(key) {
            self.unmapped(
                key,
                "holds a `${…}` that is neither `${NAME}` nor a config provider reference \
                 (`${provider:[path:]key}`), so it was not converted: write the value, or `${NAME}`",
            );
            return None;
        }
        self.used.insert(key.to_owned());
        for r in self.refs.get(key).cloned().unwrap_or_default() {
            if !self.env.iter().any(|(v, _)| *v == r.var) {
                self.env.push((r.var.clone(), r.how_to_export()));
            }
        }
        Some(value)
    }

    /// The first of `keys` that is set (marking only that one used).
    fn first(&mut self, keys: &[String]) -> Option<(String, String)> {
        keys.iter()
            .find(|k| self.map.contains_key(k.as_str()))
            .cloned()
            .and_then(|k| self.take(&k).map(|v| (k, v)))
    }

    /// [`Self::first`] for a value the importer must read (a number, a boolean, a
    /// choice): a `${…}` reference there is reported, and `None` returned.
    fn typed(&mut self, keys: &[String]) -> Option<(String, String)> {
        let (k, v) = self.first(keys)?;
        if v.contains(placeholders::OPEN) {
            self.unmapped(&k, TYPED_REFERENCE);
            return None;
        }
        Some((k, v))
    }

    /// `A.<k>`, else the global `<k>` (MM2 applies unprefixed client keys to every
    /// cluster). A set global key counts as used once a cluster has consulted it.
    fn cluster_value(&mut self, alias: &str, k: &str) -> Option<(String, String)> {
        let found = self.first(&[format!("{alias}.{k}"), k.to_owned()]);
        if self.map.contains_key(k) && !self.unconvertible.contains(k) {
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
        let (value, line) = self.map.get(key).map_or((String::new(), 0), |p| {
            (shown(key, self.as_written(p)), p.line)
        });
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

    fn boolean(&mut self, keys: &[String]) -> Option<bool> {
        let (k, v) = self.typed(keys)?;
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
        let (k, v) = self.typed(keys)?;
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
        let (_, v) = self.typed(&[key.to_owned()])?;
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
}

/// `key` without an `A->B.` flow prefix.
fn flow_suffix(key: &str) -> &str {
    key.split_once("->")
        .and_then(|(_, rest)| rest.split_once('.'))
        .map_or(key, |(_, k)| k)
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
    let alias = placeholders::upper_snake(alias);
    // A variable name must not start with a digit.
    let lead = if alias.starts_with(|c: char| c.is_ascii_digit()) {
        "CLUSTER_"
    } else {
        ""
    };
    format!("{lead}{alias}_{what}")
}

#[cfg(test)]
mod tests;
