//! Generation stamps on state records (scale-out). A member of a flow's group writes its
//! partitions' state records with a `strait.generation` header: the group generation in
//! which it owned them. Reading the state topic, [`Fence::admit`] decides per record
//! whether it counts. Pure. The rules:
//!
//! 1. **unstamped records count**: a record without the header (one process, no group, or
//!    an older Strait) is taken as before — the last one per key wins.
//! 2. **a stale owner's late write is ignored**: a stamped record whose generation is
//!    lower than the one last taken for its key *and* whose timestamp (CreateTime, set by
//!    its writer) is earlier was written by an owner that had already lost the partition
//!    and landed late (a request delayed in the network); the newer owner's state stands.
//! 3. **a new group life is not stale**: a lower generation with a *later* timestamp is a
//!    group that was deleted and started again at generation 0 or 1 (Kafka forgets an
//!    empty group); it is taken.
//! 4. **tombstones count**: a deleted partition state is deleted whatever its stamp, and
//!    forgets the key's stamp.
//!
//! A stale write that slips past rule 2 (a writer's clock ahead of the next owner's by more
//! than the hand-over took) costs no data either: the next start checks the target's tail
//! past whatever state it reads by content (docs/architecture.md, "Scale-out").

use std::collections::BTreeMap;

/// The header carrying the generation.
pub const GENERATION_HEADER: &str = "strait.generation";

/// The header value for `generation`.
pub fn encode(generation: i32) -> [u8; 4] {
    generation.to_be_bytes()
}

/// The generation in `headers`, if a well-formed stamp is there.
pub fn generation_of<'a>(
    mut headers: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
) -> Option<i32> {
    headers.find_map(|(k, v)| {
        let v: [u8; 4] = v?.try_into().ok()?;
        (k == GENERATION_HEADER.as_bytes()).then(|| i32::from_be_bytes(v))
    })
}

/// Per key, the stamp of the record last taken.
#[derive(Debug, Default)]
pub struct Fence<K: Ord> {
    last: BTreeMap<K, (i32, i64)>,
    ignored: u64,
}

impl<K: Ord + Clone> Fence<K> {
    /// Whether the record for `key` counts: `generation` from its header, `timestamp` its
    /// CreateTime, `tombstone` for a deletion.
    pub fn admit(
        &mut self,
        key: &K,
        generation: Option<i32>,
        timestamp: i64,
        tombstone: bool,
    ) -> bool {
        if tombstone {
            self.last.remove(key);
            return true;
        }
        let Some(g) = generation else {
            self.last.remove(key);
            return true;
        };
        if let Some(&(lg, lt)) = self.last.get(key)
            && g < lg
            && timestamp < lt
        {
            self.ignored += 1;
            return false;
        }
        self.last.insert(key.clone(), (g, timestamp));
        true
    }

    /// Records ignored by rule 2 so far.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }
}

#[cfg(test)]
mod tests;
