//! The fold of the state topic's records ([`Fold`]): the last admitted snapshot per
//! partition, the deltas not tombstoned, the stale-owner fence, and the state they add up
//! to.

use std::collections::BTreeMap;

use super::{DeltaSeqs, RecordMeta};
use crate::config::Flow;
use crate::error::MirrorError;
use crate::state::SavedState;
use crate::state::codec::{PartitionState, decode_key, decode_value, key_kind, kind};
use crate::state::delta::{DELTA_KEY_KIND, decode_delta_key, decode_delta_value, rebuild};
use crate::state::stamp::Fence;

/// What the records read so far add up to: the last admitted snapshot per key, the
/// deltas not tombstoned, and the stale-owner fence.
#[derive(Debug, Default)]
pub(super) struct Fold {
    saved: SavedState,
    deltas: BTreeMap<(String, i32), BTreeMap<u64, Vec<u8>>>,
    fence: Fence<(String, i32)>,
    /// Stale-owner records ignored and already reported.
    reported: u64,
    /// Partitions with deltas as [`Fold::result`] last rebuilt them (snapshot with its
    /// deltas replayed), reused while neither changed.
    rebuilt: BTreeMap<(String, i32), PartitionState>,
    /// Partitions whose snapshot or deltas changed since the last [`Fold::result`].
    changed: std::collections::BTreeSet<(String, i32)>,
}

impl Fold {
    /// Takes one committed record of the state topic (the rules of [`super::read_state`]).
    pub(super) fn apply(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        meta: RecordMeta,
    ) -> Result<(), String> {
        if matches!(key_kind(key), Some(kind::REPLAY | kind::ACL | kind::MEMBER)) {
            return Ok(());
        }
        if key_kind(key) == Some(DELTA_KEY_KIND) {
            let (key, seq) = decode_delta_key(key).map_err(|e| format!("delta key: {e}"))?;
            self.changed.insert(key.clone());
            match value {
                None => {
                    if let Some(d) = self.deltas.get_mut(&key) {
                        d.remove(&seq);
                    }
                }
                Some(v) => {
                    let bytes = decode_delta_value(v).map_err(|e| format!("delta value: {e}"))?;
                    self.deltas.entry(key).or_default().insert(seq, bytes);
                }
            }
            return Ok(());
        }
        let key = decode_key(key).map_err(|e| format!("key: {e}"))?;
        if !self
            .fence
            .admit(&key, meta.generation, meta.timestamp, value.is_none())
        {
            return Ok(());
        }
        self.changed.insert(key.clone());
        match value {
            // A tombstone: the partition's state was deleted.
            None => {
                self.saved.remove(&key);
            }
            Some(v) => {
                let value = decode_value(v).map_err(|e| format!("value: {e}"))?;
                self.saved.insert(key, value);
            }
        }
        Ok(())
    }

    /// The state as the records read so far leave it: each partition's snapshot with its
    /// deltas folded in, and the deltas' sequence numbers.
    pub(super) fn result(&mut self, flow: &Flow) -> Result<(SavedState, DeltaSeqs), MirrorError> {
        let ignored = self.fence.ignored();
        if ignored > self.reported {
            tracing::warn!(flow = %flow.name, ignored = ignored - self.reported,
                "state records of an owner that had already lost its partitions landed late; \
                 ignored (the newer owner's state stands)");
            self.reported = ignored;
        }
        let mut saved = self.saved.clone();
        let mut seqs = DeltaSeqs::new();
        let changed = std::mem::take(&mut self.changed);
        self.rebuilt
            .retain(|k, _| !changed.contains(k) && self.deltas.contains_key(k));
        for (key, ds) in &self.deltas {
            if ds.is_empty() {
                continue;
            }
            seqs.insert(key.clone(), ds.keys().copied().collect());
            // Deltas of a partition whose state was deleted are left for the tombstones.
            let Some(state) = saved.get_mut(key) else {
                continue;
            };
            if let Some(done) = self.rebuilt.get(key) {
                *state = done.clone();
                continue;
            }
            *state = rebuild(state, ds).map_err(|e| {
                MirrorError::state(format!("{}/{}: {e}", key.0, key.1))
                    .flow(&flow.name)
                    .cluster(&flow.target)
            })?;
            self.rebuilt.insert(key.clone(), state.clone());
        }
        Ok((saved, seqs))
    }
}
