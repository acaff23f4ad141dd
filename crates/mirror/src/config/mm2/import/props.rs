//! Reading the properties being converted ([`Props`]): a value taken (marked used, its
//! `${…}` references listed to export), typed values, the flows named, what the importer
//! refuses, and the keys it could not carry over.

use std::collections::{HashMap, HashSet};

use super::properties::Property;
use super::reasons::shown;
use super::{ImportError, Props, TYPED_REFERENCE, UnmappedKey, env_name, placeholders};
use crate::config::units::HumanDuration;

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

impl Props {
    pub(super) fn new(entries: Vec<Property>) -> Self {
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
    pub(super) fn as_written<'p>(&'p self, p: &'p Property) -> &'p str {
        self.written.get(&p.key).map_or(&p.value, String::as_str)
    }

    /// Refuses what cannot be imported without replicating more than MM2 does: a filter
    /// whose `${…}` is not an environment variable, and `refresh.topics.enabled = false`.
    pub(super) fn check_refusals(&self) -> Result<(), ImportError> {
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
    pub(super) fn take(&mut self, key: &str) -> Option<String> {
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
    pub(super) fn first(&mut self, keys: &[String]) -> Option<(String, String)> {
        keys.iter()
            .find(|k| self.map.contains_key(k.as_str()))
            .cloned()
            .and_then(|k| self.take(&k).map(|v| (k, v)))
    }

    /// [`Self::first`] for a value the importer must read (a number, a boolean, a
    /// choice): a `${…}` reference there is reported, and `None` returned.
    pub(super) fn typed(&mut self, keys: &[String]) -> Option<(String, String)> {
        let (k, v) = self.first(keys)?;
        if v.contains(placeholders::OPEN) {
            self.unmapped(&k, TYPED_REFERENCE);
            return None;
        }
        Some((k, v))
    }

    /// `A.<k>`, else the global `<k>` (MM2 applies unprefixed client keys to every
    /// cluster). A set global key counts as used once a cluster has consulted it.
    pub(super) fn cluster_value(&mut self, alias: &str, k: &str) -> Option<(String, String)> {
        let found = self.first(&[format!("{alias}.{k}"), k.to_owned()]);
        if self.map.contains_key(k) && !self.unconvertible.contains(k) {
            self.used.insert(k.to_owned());
        }
        found
    }

    /// A `${VAR}` placeholder for `what`, remembered for the list of variables to export.
    pub(super) fn env_placeholder(&mut self, alias: &str, what: &str, holds: &str) -> String {
        let var = env_name(alias, what);
        if !self.env.iter().any(|(v, _)| *v == var) {
            self.env.push((var.clone(), holds.to_owned()));
        }
        format!("${{{var}}}")
    }

    /// Records an unmapped key (or a note about a missing one); the same key with the same
    /// reason (a global key consulted by several clusters) is listed once.
    pub(super) fn unmapped(&mut self, key: &str, reason: impl Into<String>) {
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

    pub(super) fn note(&mut self, key: &str, value: &str, reason: &str) {
        self.unmapped.push(UnmappedKey {
            key: key.to_owned(),
            value: value.to_owned(),
            line: 0,
            reason: reason.to_owned(),
        });
    }

    /// Ordered pairs that have any `A->B.*` key, in order of first appearance.
    pub(super) fn flow_pairs(&mut self, aliases: &[String]) -> Vec<(String, String)> {
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

    pub(super) fn boolean(&mut self, keys: &[String]) -> Option<bool> {
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

    pub(super) fn seconds(&mut self, keys: &[String]) -> Option<HumanDuration> {
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

    pub(super) fn millis(&mut self, key: &str) -> Option<HumanDuration> {
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
