//! Include/exclude regex lists, compiled once.

use regex::RegexSet;

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
pub(crate) fn whole_name(pattern: &str) -> String {
    format!("^(?:{pattern})$")
}

fn whole_name_set(patterns: &[String]) -> Result<RegexSet, regex::Error> {
    RegexSet::new(patterns.iter().map(|p| whole_name(p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::defaults::{GROUP_EXCLUDES, TOPIC_EXCLUDES, owned};

    #[test]
    fn mm2_default_topic_excludes() {
        let f = NameFilter::exclude_only(&owned(TOPIC_EXCLUDES)).unwrap();
        for t in ["orders", "payments.v1", "internal-ish", "a.heartbeats"] {
            assert!(f.accepts(t), "{t}");
        }
        for t in [
            "__consumer_offsets",
            "__transaction_state",
            "connect-offsets.internal",
            "app-internal",
            "b.checkpoints.internal",
            "mm2-offset-syncs.b.internal",
            "mm2-status",
            "orders.replica",
            "strait-state.a-to-b.internal",
        ] {
            assert!(!f.accepts(t), "{t}");
        }
    }

    #[test]
    fn patterns_match_whole_names_and_exclude_wins() {
        let f = NameFilter::new(&owned(&["orders.*", "pay"]), &owned(&["orders-test"])).unwrap();
        assert!(f.accepts("orders"));
        assert!(f.accepts("orders-prod"));
        assert!(!f.accepts("orders-test"));
        assert!(f.accepts("pay"));
        assert!(
            !f.accepts("payments"),
            "a pattern must match the whole name"
        );
        assert!(!f.accepts("my-orders"));
    }

    #[test]
    fn mm2_default_group_excludes() {
        let f = NameFilter::exclude_only(&owned(GROUP_EXCLUDES)).unwrap();
        assert!(f.accepts("billing"));
        assert!(!f.accepts("console-consumer-1234"));
        assert!(!f.accepts("connect-sink"));
        assert!(!f.accepts("__internal"));
    }
}
