//! Include/exclude regex lists: each pattern checked on its own, then the lists compiled
//! once into a [`NameFilter`].

use regex::{Regex, RegexSet};

use super::problem::{KeyPath, Problem};

/// A name filter: accepted when some `include` regex matches the whole name and no
/// `exclude` regex does (exclude wins), as MM2's default topic and group filters do.
#[derive(Debug, Clone)]
pub struct NameFilter {
    include: RegexSet,
    exclude: RegexSet,
    include_written: Vec<String>,
    exclude_written: Vec<String>,
}

impl NameFilter {
    /// Compiles both lists. Validation checks each pattern on its own first, so that every
    /// bad pattern is reported with its key; this error is only a backstop.
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self, regex::Error> {
        Ok(Self {
            include: whole_name_set(include)?,
            exclude: whole_name_set(exclude)?,
            include_written: include.to_vec(),
            exclude_written: exclude.to_vec(),
        })
    }

    /// A filter accepting every name not matched by `exclude`.
    pub fn exclude_only(exclude: &[String]) -> Result<Self, regex::Error> {
        Self::new(&[".*".to_owned()], exclude)
    }

    /// Whether `name` passes the filter.
    pub fn accepts(&self, name: &str) -> bool {
        self.include.is_match(name) && !self.exclude.is_match(name)
    }

    /// The include patterns, as written.
    pub fn include_patterns(&self) -> &[String] {
        &self.include_written
    }

    /// The exclude patterns, as written.
    pub fn exclude_patterns(&self) -> &[String] {
        &self.exclude_written
    }
}

/// Java's `Matcher.matches()` semantics: the pattern must match the whole name.
fn whole_name(pattern: &str) -> String {
    format!("^(?:{pattern})$")
}

fn whole_name_set(patterns: &[String]) -> Result<RegexSet, regex::Error> {
    RegexSet::new(patterns.iter().map(|p| whole_name(p)))
}

/// Checks the patterns of the list at `at` each on its own, so every bad one is reported
/// with its index; `non_empty`: an empty list is a problem too. Every problem goes to
/// `problems`.
pub(super) fn check_patterns(
    patterns: &[String],
    non_empty: bool,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) {
    if non_empty && patterns.is_empty() {
        problems.push(
            Problem::new(
                at.clone(),
                "the list is empty, so nothing would be replicated",
            )
            .expected("at least one regex, e.g. \".*\""),
        );
    }
    for (i, p) in patterns.iter().enumerate() {
        if let Err(e) = Regex::new(&whole_name(p)) {
            let why = match e {
                regex::Error::Syntax(s) => last_line(&s),
                other => other.to_string(),
            };
            problems.push(
                Problem::new(at.index(i), format!("invalid regex \"{p}\": {why}")).expected(
                    "a regular expression (Rust `regex` syntax: no look-around or backreferences)",
                ),
            );
        }
    }
}

/// `regex` syntax errors are multi-line with a caret diagram; the last line says why.
fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .trim_start_matches("error: ")
        .to_owned()
}

#[cfg(test)]
mod tests;
