//! The steps of [`FetchSession::fetch`]: when to start the session over, what each request
//! sends and forgets, and how a successful answer moves the session on.

use std::collections::HashMap;

use super::{Asked, FetchPosition, FetchSession};

impl FetchSession {
    /// Starts the session over when addressing switches between ids and names, or when a
    /// partition's topic id changed since it was sent (a re-created topic).
    pub(super) fn restart_if_changed(&mut self, positions: &[FetchPosition], by_id: bool) {
        let renamed = positions.iter().any(|p| {
            self.sent
                .get(&(p.topic.clone(), p.partition))
                .is_some_and(|s| s.topic_id != p.topic_id)
        });
        if self.id != 0 && (by_id != self.by_id || renamed) {
            self.reset();
        }
    }

    /// What to send (everything when `full`, else what changed since the last request) and
    /// what the broker should forget (partitions sent before and no longer wanted).
    pub(super) fn changes<'a>(
        &self,
        positions: &'a [FetchPosition],
        full: bool,
    ) -> (Vec<&'a FetchPosition>, Vec<FetchPosition>) {
        if full {
            return (positions.iter().collect(), Vec::new());
        }
        let wanted: HashMap<(&str, i32), &FetchPosition> = positions
            .iter()
            .map(|p| ((p.topic.as_str(), p.partition), p))
            .collect();
        let send = positions
            .iter()
            .filter(|p| self.sent.get(&(p.topic.clone(), p.partition)) != Some(*p))
            .collect();
        let forgotten = self
            .sent
            .iter()
            .filter(|((t, p), _)| !wanted.contains_key(&(t.as_str(), *p)))
            .map(|(_, s)| s.clone())
            .collect();
        (send, forgotten)
    }

    /// Moves the session on after a successful answer: takes the broker's session id after a
    /// full fetch, else advances the epoch, and remembers what was sent.
    pub(super) fn advance(
        &mut self,
        positions: &[FetchPosition],
        full: bool,
        session_id: i32,
        by_id: bool,
    ) {
        if full {
            self.id = session_id;
            self.epoch = 1;
            self.by_id = by_id;
        } else {
            // Epochs wrap to 1 (0 would mean "new session").
            self.epoch = if self.epoch == i32::MAX {
                1
            } else {
                self.epoch + 1
            };
        }
        if self.id != 0 {
            self.sent = positions
                .iter()
                .map(|p| ((p.topic.clone(), p.partition), p.clone()))
                .collect();
        }
    }
}

/// The topic id of every position that carries one, by topic name.
pub(super) fn topic_ids(positions: &[FetchPosition]) -> Asked {
    positions
        .iter()
        .filter_map(|p| Some((p.topic.clone(), p.topic_id?)))
        .collect()
}
