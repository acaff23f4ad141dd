//! Which target group positions forward sync wrote itself, so that reverse sync never sends
//! them back. Pure; shared by a flow's [`GroupSync`](super::GroupSync) and
//! [`ReverseSync`](super::ReverseSync) behind one lock.
//!
//! Rules:
//! 1. **forward sync records what it commits**: per (group, target topic, partition), the
//!    target offset it committed and the source position it translated.
//! 2. **reverse sync leaves forward sync's own positions alone**: a target position equal to
//!    the one forward sync last committed there derives from the source group itself.
//!    Sending it back could only undo a newer source commit (a group reset backwards on the
//!    source) or move the group past source records that were never replicated (a group
//!    older than the replication start): both skip records on the source.
//! 3. **after a start, only target positions that move are reverse-synced**: the positions
//!    reverse sync finds at its first round have unknown provenance (forward sync's record
//!    of rule 1 lives in the process), so each is left alone until the group commits
//!    another position on the target — a consumer reading there.
//! 4. **a source reset backwards is followed**: forward sync may move a target position
//!    backwards when it is the one forward sync wrote itself (nobody has consumed on the
//!    target since); a position someone else committed never moves backwards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// (group, target topic, partition).
type Key = (String, String, i32);

/// What forward sync wrote, and what reverse sync saw first. See the module rules.
#[derive(Debug, Default)]
pub struct Provenance {
    /// Rule 1: target offset committed → the source position it came from.
    written: HashMap<Key, (i64, i64)>,
    /// Rule 3: the target positions of reverse sync's first round, until each moves.
    first_seen: Option<HashMap<Key, i64>>,
}

/// A flow's [`Provenance`], shared by its forward and reverse sync.
pub type SharedProvenance = Arc<Mutex<Provenance>>;

impl Provenance {
    /// A new, shared record.
    pub fn shared() -> SharedProvenance {
        Arc::new(Mutex::new(Provenance::default()))
    }

    /// Rule 1: forward sync committed `target_offset` for `group` on `topic`-`partition`,
    /// translated from source position `source_offset`.
    pub fn forward_committed(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        target_offset: i64,
        source_offset: i64,
    ) {
        self.written.insert(
            (group.to_owned(), topic.to_owned(), partition),
            (target_offset, source_offset),
        );
    }

    /// Rule 4: whether `target_offset` is the position forward sync itself last wrote.
    pub fn is_forward_written(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        target_offset: i64,
    ) -> bool {
        self.written
            .get(&(group.to_owned(), topic.to_owned(), partition))
            .is_some_and(|(t, _)| *t == target_offset)
    }

    /// Reverse sync starts a round; true for its first since the start (rule 3).
    pub fn begin_reverse_round(&mut self) -> bool {
        let first = self.first_seen.is_none();
        self.first_seen.get_or_insert_with(HashMap::new);
        first
    }

    /// Whether reverse sync may send `target_offset` of `group` on `topic`-`partition` back
    /// to the source (rules 2 and 3); `first_round` from [`begin_reverse_round`](Self::begin_reverse_round).
    pub fn may_send_back(
        &mut self,
        first_round: bool,
        group: &str,
        topic: &str,
        partition: i32,
        target_offset: i64,
    ) -> bool {
        if self.is_forward_written(group, topic, partition, target_offset) {
            return false;
        }
        let key = (group.to_owned(), topic.to_owned(), partition);
        let seen = self.first_seen.get_or_insert_with(HashMap::new);
        if first_round {
            seen.insert(key, target_offset);
            return false;
        }
        match seen.get(&key) {
            Some(&at_start) if at_start == target_offset => false,
            Some(_) => {
                // It moved: a consumer committed on the target since the start.
                seen.remove(&key);
                true
            }
            None => true,
        }
    }
}

/// Locks a shared record (a panic elsewhere leaves the data valid: every update is one
/// insert or remove).
pub fn lock(p: &SharedProvenance) -> std::sync::MutexGuard<'_, Provenance> {
    p.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
