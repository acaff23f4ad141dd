//! A source topic re-created while its partitions replicate (its topic id changed), found
//! by a topic refresh or by a fetcher whose fetch by topic id was refused
//! ([`crate::datapath::topic_id`]): one path applies `on_topic_recreation` for both.
//!
//! The run's table of partitions applies them ([`super::partitions::Partitions`]: the
//! ids its partitions fetch by, and the ids each topic was re-created away from).
//!
//! Rules ([`Retired`], pure):
//! - A report of the id the topic's partitions already have, or with no id on either side
//!   (a broker without topic ids), changes nothing.
//! - An id the topic was already re-created away from is stale news (a topic refresh
//!   begun before a fetcher's report was applied): it changes nothing, and the refresh's
//!   view of the topic keeps the current id.
//! - Any other id is a re-creation: `fail` stops the flow with the incident; `skip`
//!   retires the old id and restarts every partition of the topic on the new one (map
//!   restarted at the new topic's log start, fetching by the new id). A partition that is
//!   down keeps the id its map belongs to, so its restart applies the policy against the
//!   saved state.

use std::collections::BTreeSet;

use uuid::Uuid;

/// What a report of a topic's id means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IdNews {
    /// The id the partitions have, or ids not known.
    Same,
    /// An id the topic was re-created away from.
    Stale,
    /// A re-creation.
    Changed,
}

/// The ids each source topic was re-created away from.
#[derive(Debug, Default)]
pub(super) struct Retired(BTreeSet<(String, Uuid)>);

impl Retired {
    /// What a report that `topic` has id `reported` means while its partitions fetch by
    /// `current`.
    pub(super) fn judge(&self, topic: &str, current: Uuid, reported: Uuid) -> IdNews {
        if current.is_nil() || reported.is_nil() || current == reported {
            IdNews::Same
        } else if self.0.contains(&(topic.to_owned(), reported)) {
            IdNews::Stale
        } else {
            IdNews::Changed
        }
    }

    /// `topic` was re-created away from `old`.
    pub(super) fn retire(&mut self, topic: &str, old: Uuid) {
        self.0.insert((topic.to_owned(), old));
    }

    /// Forgets a topic whose partitions all stopped (deleted).
    pub(super) fn forget(&mut self, topic: &str) {
        self.0.retain(|(t, _)| t != topic);
    }
}

#[cfg(test)]
mod tests;
