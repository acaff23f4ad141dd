//! Reading a config: file → env substitution → TOML → [`ConfigFile`] → [`validate`] → the
//! files it names.
//!
//! Every stage reports all the problems it can find before giving up, each with the key
//! and, where the key occurs in the file, its line. [`validate`] only looks at the config;
//! whether the PEM files it names can be opened is the loader's question, asked of a
//! config that will run and skipped by [`load_offline`], which also lets unset variables
//! stand in (a lint for CI, without the secrets or the files).

use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::env::substitute;
use super::model::ConfigFile;
use super::problem::{ConfigError, KeyPath, Problem, Segment};
use super::resolved::Config;
use super::security::unreadable_files;
use super::suggest::did_you_mean;
use super::validate::validate;

/// Bound on the unknown-key/type-error collection loop, so a pathological file cannot
/// make it spin.
const MAX_PROBLEMS: usize = 100;

/// What stands in for an unset `${VAR}` in [`load_offline`]: a value that parses as a
/// string, a host:port list and a secret.
pub const OFFLINE_PLACEHOLDER: &str = "placeholder:9092";

/// Loads and validates the config at `path`, substituting from the process environment.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = read(path)?;
    load_str(&text, &path.display().to_string(), &|name| {
        std::env::var(name).ok()
    })
}

/// Checks the structure and values of the config at `path` without its secrets or files:
/// a variable that is unset stands in as [`OFFLINE_PLACEHOLDER`], and the PEM files it
/// names are not opened (`strait config validate --offline`).
pub fn load_offline(path: &Path) -> Result<Config, ConfigError> {
    let text = read(path)?;
    let env =
        |name: &str| Some(std::env::var(name).unwrap_or_else(|_| OFFLINE_PLACEHOLDER.to_owned()));
    let origin = path.display().to_string();
    let (file, substituted) = parse_with_text(&text, &origin, &env)?;
    validate(&file).map_err(|problems| invalid(&origin, &substituted, problems))
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Loads and validates config `text`; `origin` names it in errors, `env` looks up variables.
pub fn load_str(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let (file, substituted) = parse_with_text(text, origin, env)?;
    let unreadable: Vec<Problem> = file
        .clusters
        .iter()
        .flat_map(|(name, spec)| {
            let at = KeyPath::root().key("clusters").key(name).key("security");
            unreadable_files(&spec.security, &at)
        })
        .collect();
    match validate(&file) {
        Ok(config) if unreadable.is_empty() => Ok(config),
        Ok(_) => Err(invalid(origin, &substituted, unreadable)),
        Err(mut problems) => {
            problems.extend(unreadable);
            Err(invalid(origin, &substituted, problems))
        }
    }
}

/// Parses config `text` without validating it.
pub fn parse_str(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConfigFile, ConfigError> {
    parse_with_text(text, origin, env).map(|(file, _)| file)
}

fn parse_with_text(
    text: &str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(ConfigFile, String), ConfigError> {
    let substituted = substitute(text, env).map_err(|problems| ConfigError::Invalid {
        origin: origin.to_owned(),
        problems,
    })?;
    let table: toml::Table = toml::from_str(&substituted).map_err(|e| {
        let mut p = Problem::new(
            KeyPath::root(),
            format!("invalid TOML: {}", e.message().trim()),
        );
        if let Some(span) = e.span() {
            p = p.at_line(line_of(&substituted, span.start));
        }
        ConfigError::Invalid {
            origin: origin.to_owned(),
            problems: vec![p],
        }
    })?;
    let file = deserialize_all(toml::Value::Table(table))
        .map_err(|problems| invalid(origin, &substituted, problems))?;
    Ok((file, substituted))
}

/// Deserializes, and on each error records it, removes the offending key and tries again,
/// so one run reports every unknown key and wrongly typed value.
fn deserialize_all(value: toml::Value) -> Result<ConfigFile, Vec<Problem>> {
    let mut pass = Pass {
        value,
        problems: Vec::new(),
        removed: Vec::new(),
        placeholders: Vec::new(),
    };
    while pass.problems.len() < MAX_PROBLEMS {
        let err = match serde_path_to_error::deserialize::<_, ConfigFile>(pass.value.clone()) {
            Ok(file) if pass.problems.is_empty() => return Ok(file),
            Ok(_) => return Err(pass.problems),
            Err(e) => e,
        };
        let path = key_path(err.path());
        let message = err.inner().message().to_owned();
        let go_on = if let Some((field, expected)) = unknown_field(&message) {
            pass.unknown_key(&path, field, &expected)
        } else if let Some(field) = missing_field(&message) {
            pass.missing_key(&path, field)
        } else {
            pass.bad_value(path, &message)
        };
        if !go_on {
            break;
        }
    }
    Err(pass.problems)
}

/// [`deserialize_all`]'s state: the value as it is changed to read on past each problem,
/// and the problems found. Each step reports one problem and changes the value so the
/// next read gets past it; `false` when it cannot (the reading stops there).
struct Pass {
    value: toml::Value,
    problems: Vec<Problem>,
    /// Keys removed after their bad value was reported.
    removed: Vec<KeyPath>,
    /// Keys given a stand-in value after they were reported missing.
    placeholders: Vec<KeyPath>,
}

impl Pass {
    /// The unknown key `field` under `path` (one of `expected` was meant): reported, with
    /// a suggestion, and removed.
    fn unknown_key(&mut self, path: &KeyPath, field: String, expected: &[String]) -> bool {
        // serde_path_to_error already ends the path with the unknown key.
        let key = match path.0.last() {
            Some(Segment::Key(k)) if *k == field => path.clone(),
            _ => path.key(field.as_str()),
        };
        // `bootstrap.servers = …` is TOML for `bootstrap = { servers = … }`: compare the
        // dotted form too, so MM2-style keys get a suggestion.
        let dotted = match get_mut(&mut self.value, &key.0) {
            Some(toml::Value::Table(t)) if t.len() == 1 => {
                t.keys().next().map(|k| format!("{field}.{k}"))
            }
            _ => None,
        };
        let candidates = || expected.iter().map(String::as_str);
        let suggestion = renamed(&field, candidates())
            .or_else(|| did_you_mean(&field, candidates()))
            .or_else(|| {
                dotted
                    .as_deref()
                    .and_then(|d| did_you_mean(d, candidates()))
            });
        self.problems.push(
            Problem::new(
                key.clone(),
                format!("unknown key `{}`", dotted.as_deref().unwrap_or(&field)),
            )
            .expected(expected_names(expected))
            .suggest(suggestion.map(str::to_owned)),
        );
        remove(&mut self.value, &key)
    }

    /// The missing key `field` under `path`: reported (unless a step before explains it),
    /// and given a stand-in value.
    fn missing_key(&mut self, path: &KeyPath, field: String) -> bool {
        let key = path.key(field.as_str());
        if self.placeholders.contains(&key) {
            return false;
        }
        // A key removed after reporting a bad value, or already suggested for a misspelled
        // key, shows up again as missing: no new problem.
        let suggested = self.problems.iter().any(|p| {
            p.suggestion.as_deref() == Some(field.as_str()) && p.path.0.starts_with(&path.0)
        });
        if !self.removed.contains(&key) && !suggested {
            self.problems.push(Problem::new(
                key.clone(),
                format!("missing required key `{field}`"),
            ));
        }
        // Stand in a value so the rest of the file is still checked; problems with the
        // stand-in itself are not reported.
        if !insert(&mut self.value, &key, toml::Value::String(String::new())) {
            return false;
        }
        self.placeholders.push(key);
        true
    }

    /// A bad value at `path`: reported (unless under a stand-in), and removed.
    fn bad_value(&mut self, path: KeyPath, message: &str) -> bool {
        if !self.placeholders.iter().any(|p| path.0.starts_with(&p.0)) {
            self.problems.push(value_problem(path.clone(), message));
        }
        // A bad array element: drop the whole array so later indices do not shift.
        let drop = match path.0.last() {
            Some(Segment::Index(_)) => KeyPath(path.0[..path.0.len() - 1].to_vec()),
            _ => path,
        };
        if drop.is_root() || !remove(&mut self.value, &drop) {
            return false;
        }
        self.removed.push(drop);
        true
    }
}

/// Whether the value at `path` is a secret (a password, a client secret, a token): its value
/// is never quoted back in a problem.
fn is_secret_key(path: &KeyPath) -> bool {
    path.0.iter().any(|s| match s {
        Segment::Key(k) => {
            let k = k.to_ascii_lowercase();
            ["password", "secret", "token", "jaas"]
                .iter()
                .any(|w| k.contains(w))
        }
        Segment::Index(_) => false,
    })
}

/// `message` with every backticked value replaced: serde quotes the offending value
/// (`invalid type: integer \`123456\``).
fn hide_quoted(message: &str) -> String {
    let mut out = String::new();
    let mut parts = message.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for (i, part) in parts.enumerate() {
        if i % 2 == 0 {
            out.push_str("(value hidden)");
        } else {
            out.push_str(part);
        }
    }
    out
}

fn key_path(path: &serde_path_to_error::Path) -> KeyPath {
    use serde_path_to_error::Segment as S;
    KeyPath(
        path.iter()
            .filter_map(|s| match s {
                S::Seq { index } => Some(Segment::Index(*index)),
                S::Map { key } => Some(Segment::Key(key.clone())),
                S::Enum { .. } | S::Unknown => None,
            })
            .collect(),
    )
}

/// Keys people reach for that are spelled differently here (a plain "did you mean" would
/// pick a wrong neighbour): `(what they wrote, the key)`.
const RENAMED_KEYS: &[(&str, &str)] = &[
    // Everything about the target is one policy (crate::incident).
    ("on_target_truncation", "on_target_mismatch"),
    ("on_target_recreation", "on_target_mismatch"),
    ("on_target_reset", "on_target_mismatch"),
];

/// The key that replaces `field`, when it is one of the `expected` keys.
fn renamed<'a>(field: &str, mut expected: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let (_, key) = RENAMED_KEYS.iter().find(|(from, _)| *from == field)?;
    expected.find(|e| e == key)
}

/// Parses serde's "unknown field `x`, expected one of `a`, `b`" (or "there are no fields").
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    Some((field.to_owned(), backticked(rest)))
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split_once('`').map(|(f, _)| f.to_owned())
}

/// Turns serde's messages about values into ours, with a suggestion for a misspelled
/// enum value ("unknown variant `prefx`, expected `prefix` or `identity`").
fn value_problem(path: KeyPath, message: &str) -> Problem {
    let hidden;
    let message = if is_secret_key(&path) {
        hidden = hide_quoted(message);
        hidden.as_str()
    } else {
        message
    };
    if let Some((variant, rest)) = message
        .strip_prefix("unknown variant `")
        .and_then(|r| r.split_once('`'))
    {
        let expected = backticked(rest);
        return Problem::new(path, format!("unknown value \"{variant}\""))
            .expected(expected_names(&expected).replace('`', "\""))
            .suggest(
                did_you_mean(variant, expected.iter().map(String::as_str)).map(str::to_owned),
            );
    }
    if let Some((what, expected)) = message.split_once(", expected ") {
        let expected = match expected {
            "a sequence" => "an array",
            "a map" => "a table",
            other => other,
        };
        return Problem::new(path, what.to_owned()).expected(expected.to_owned());
    }
    if let Some((what, expected)) = message.split_once("; expected ") {
        return Problem::new(path, what.to_owned()).expected(expected.to_owned());
    }
    Problem::new(path, message.to_owned())
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn expected_names(names: &[String]) -> String {
    match names {
        [] => "no keys here".to_owned(),
        [one] => format!("`{one}`"),
        many => format!(
            "one of {}",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The value at `path`.
fn get_mut<'v>(value: &'v mut toml::Value, path: &[Segment]) -> Option<&'v mut toml::Value> {
    let mut cur = value;
    for seg in path {
        cur = match (seg, cur) {
            (Segment::Key(k), toml::Value::Table(t)) => t.get_mut(k)?,
            (Segment::Index(i), toml::Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Sets table key `path` to `new`; false if its parent is not a table.
fn insert(value: &mut toml::Value, path: &KeyPath, new: toml::Value) -> bool {
    let Some((Segment::Key(k), parents)) = path.0.split_last() else {
        return false;
    };
    match get_mut(value, parents) {
        Some(toml::Value::Table(t)) => t.insert(k.clone(), new).is_none(),
        _ => false,
    }
}

/// Removes the value at `path`; false if it is not there.
fn remove(value: &mut toml::Value, path: &KeyPath) -> bool {
    let Some((last, parents)) = path.0.split_last() else {
        return false;
    };
    let Some(cur) = get_mut(value, parents) else {
        return false;
    };
    match (last, cur) {
        (Segment::Key(k), toml::Value::Table(t)) => t.remove(k).is_some(),
        (Segment::Index(i), toml::Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}

fn invalid(origin: &str, text: &str, mut problems: Vec<Problem>) -> ConfigError {
    if let Ok(doc) = DeTable::parse(text) {
        for p in &mut problems {
            if p.line.is_none() {
                p.line = offset_of(doc.get_ref(), &p.path).map(|off| line_of(text, off));
            }
        }
    }
    problems.sort_by_key(|p| p.line.unwrap_or(0));
    ConfigError::Invalid {
        origin: origin.to_owned(),
        problems,
    }
}

/// Byte offset of the deepest part of `path` found in the document: a key's own position
/// for table keys, the element's for array indices.
fn offset_of(table: &DeTable<'_>, path: &KeyPath) -> Option<usize> {
    let mut found = None;
    let mut current: Option<&DeValue<'_>> = None;
    for (n, seg) in path.0.iter().enumerate() {
        let t = match (n, current) {
            (0, _) => Some(table),
            (_, Some(DeValue::Table(t))) => Some(t),
            _ => None,
        };
        match (seg, t, current) {
            (Segment::Key(k), Some(t), _) => {
                let Some((key, val)) = t
                    .iter()
                    .find(|(key, _)| key.get_ref().as_ref() == k.as_str())
                else {
                    break;
                };
                found = Some(key.span().start);
                current = Some(val.get_ref());
            }
            (Segment::Index(i), _, Some(DeValue::Array(a))) => {
                let Some(item) = a.get(*i) else { break };
                found = Some(item.span().start);
                current = Some(item.get_ref());
            }
            _ => break,
        }
    }
    found
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |head| head.matches('\n').count() + 1)
}
