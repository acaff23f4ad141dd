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
mod props;
mod reasons;
mod security;

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
    let (form, rewritten) = rewrite(text, options)?;
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
    let file = convert(&mut props, &aliases)?;
    write(form, &file, props)
}

/// `text` in its form (MirrorMaker 1 when `options` say so, else as detected), rewritten
/// as `mm2.properties` entries.
fn rewrite(
    text: &str,
    options: &ImportOptions,
) -> Result<(forms::Form, forms::Rewritten), ImportError> {
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
    Ok((form, rewritten))
}

/// The config of the clusters `aliases` and of every flow between them that `props` name.
fn convert(props: &mut Props, aliases: &[String]) -> Result<ConfigFile, ImportError> {
    props.aliases = aliases.to_vec();
    let mut file = ConfigFile::default();
    for alias in aliases {
        let cluster = props.cluster(alias);
        file.clusters.insert(alias.clone(), cluster);
    }
    for (source, target) in props.flow_pairs(aliases) {
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
    Ok(file)
}

/// The TOML of `file` under its header and the comments `props` gathered, and the keys
/// they could not carry over.
fn write(
    form: forms::Form,
    file: &ConfigFile,
    props: Props,
) -> Result<(String, Vec<UnmappedKey>), ImportError> {
    let mut table = toml::Table::try_from(file).map_err(|e| ImportError::Write(e.to_string()))?;
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
