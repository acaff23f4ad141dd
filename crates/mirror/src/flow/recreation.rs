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
mod tests {
    use super::*;

    const A: Uuid = Uuid::from_bytes([1; 16]);
    const B: Uuid = Uuid::from_bytes([2; 16]);
    const C: Uuid = Uuid::from_bytes([3; 16]);

    #[test]
    fn the_same_id_or_no_ids_change_nothing() {
        let r = Retired::default();
        assert_eq!(r.judge("t", A, A), IdNews::Same);
        assert_eq!(r.judge("t", Uuid::nil(), A), IdNews::Same);
        assert_eq!(r.judge("t", A, Uuid::nil()), IdNews::Same);
    }

    #[test]
    fn another_id_is_a_recreation() {
        assert_eq!(Retired::default().judge("t", A, B), IdNews::Changed);
    }

    #[test]
    fn an_id_the_topic_was_recreated_away_from_is_stale() {
        let mut r = Retired::default();
        r.retire("t", A);
        assert_eq!(r.judge("t", B, A), IdNews::Stale);
        assert_eq!(r.judge("t", B, C), IdNews::Changed, "a second re-creation");
        assert_eq!(r.judge("u", B, A), IdNews::Changed, "per topic");
        r.forget("t");
        assert_eq!(
            r.judge("t", B, A),
            IdNews::Changed,
            "forgotten with the topic"
        );
    }
}
