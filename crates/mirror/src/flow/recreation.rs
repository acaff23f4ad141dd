//! A source topic re-created while its partitions replicate (its topic id changed), found
//! by a topic refresh or by a fetcher whose fetch by topic id was refused
//! ([`crate::datapath::topic_id`]): one path applies `on_topic_recreation` for both.
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

use super::FlowRun;
use crate::datapath::fetcher::Recreation;
use crate::error::MirrorError;
use crate::incident::{Incident, Noticed, Policies};

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

impl FlowRun {
    /// A topic refresh's id for `topic`, or the current one when the refresh reports an id
    /// the topic was re-created away from.
    pub(super) fn refreshed_id(&self, topic: &str, reported: Uuid) -> Uuid {
        let current = self.partitions.current_id(topic);
        match self.retired.judge(topic, current, reported) {
            IdNews::Stale => {
                tracing::debug!(flow = %self.flow.name, topic, "a topic refresh older than \
                    the topic's re-creation: keeping the new topic id");
                current
            }
            _ => reported,
        }
    }

    /// A fetcher found `r.topic` under a new id (the feed is paused).
    pub(super) async fn on_recreation(&mut self, r: Recreation) -> Result<(), MirrorError> {
        if !self.topics.contains_key(&r.topic) || self.partitions.topic_deleting(&r.topic) {
            return Ok(());
        }
        self.partitions
            .keep_ids_of_down(&r.topic, r.new, &self.retired);
        self.apply_topic_id(&r.topic, r.new).await
    }

    /// Applies `on_topic_recreation` when `topic`'s id `id` is a re-creation (rules in the
    /// module doc).
    pub(super) async fn apply_topic_id(
        &mut self,
        topic: &str,
        id: Uuid,
    ) -> Result<(), MirrorError> {
        let current = self.partitions.current_id(topic);
        if self.retired.judge(topic, current, id) != IdNews::Changed {
            return Ok(());
        }
        let incident = Incident::topic_recreated(current, id, Noticed::WhileRunning);
        self.metrics
            .incident(&self.flow.name, topic, -1, incident.kind());
        let skipped = incident
            .decide(&Policies::of(&self.flow))
            .into_result()
            .map_err(|e| e.topic(topic))?;
        tracing::error!(flow = %self.flow.name, topic = %topic, "{skipped}");
        self.retired.retire(topic, current);
        if let Some(t) = self.topics.get_mut(topic) {
            t.topic_id = id;
        }
        self.partitions.recreated(topic, id);
        Ok(())
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
