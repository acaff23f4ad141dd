//! Concurrent access: one writer per partition, many readers, no global lock on the hot
//! path.
//!
//! Each partition's map sits behind its own `RwLock`. The data path holds the partition's
//! [`MapWriter`] (one per map, not `Clone`) and takes the write lock for one O(1)
//! amortised update per acknowledged batch; the group-offset syncer holds [`MapReader`]s
//! and takes read locks for O(log runs) lookups. The [`Registry`] maps (topic, partition)
//! to these handles and is locked only to add, remove or look up a partition — callers
//! keep the handles, not the registry, on their hot paths.
//!
//! A copy-on-write snapshot per batch was rejected: publishing a gapped map of 100k runs
//! would copy megabytes per batch.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::checkpoint::Checkpoint;
use crate::error::{MapError, RegistryError};
use crate::map::{MapStats, OffsetMap};
use crate::translate::Translation;

type Shared = Arc<RwLock<OffsetMap>>;

// Every map mutation validates before it changes anything, so a panic while a lock is
// held cannot leave a half-applied update behind: a poisoned lock is safe to keep using.
fn read(map: &Shared) -> RwLockReadGuard<'_, OffsetMap> {
    map.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(map: &Shared) -> RwLockWriteGuard<'_, OffsetMap> {
    map.write().unwrap_or_else(PoisonError::into_inner)
}

/// The single writer of one partition's map. Methods take `&mut self`: one owner, one
/// writer.
#[derive(Debug)]
pub struct MapWriter {
    map: Shared,
}

impl MapWriter {
    /// Wraps a map (fresh, or restored from checkpoints) outside any registry.
    pub fn new(map: OffsetMap) -> Self {
        MapWriter {
            map: Arc::new(RwLock::new(map)),
        }
    }

    /// A reader of the same map.
    pub fn reader(&self) -> MapReader {
        MapReader {
            map: Arc::clone(&self.map),
        }
    }

    /// [`OffsetMap::append_dense`] under the write lock.
    pub fn append_dense(
        &mut self,
        source_first: u64,
        count: u64,
        target_base: u64,
    ) -> Result<(), MapError> {
        write(&self.map).append_dense(source_first, count, target_base)
    }

    /// [`OffsetMap::append_listed`] under the write lock.
    pub fn append_listed(
        &mut self,
        source_offsets: &[u64],
        target_base: u64,
    ) -> Result<(), MapError> {
        write(&self.map).append_listed(source_offsets, target_base)
    }

    /// [`OffsetMap::advance`] under the write lock.
    pub fn advance(&mut self, source_next: u64, target_next: u64) -> Result<(), MapError> {
        write(&self.map).advance(source_next, target_next)
    }

    /// Any other mutation (log starts, recreation), under the write lock.
    pub fn update<R>(&mut self, f: impl FnOnce(&mut OffsetMap) -> R) -> R {
        f(&mut write(&self.map))
    }

    /// [`OffsetMap::take_checkpoint`]. A snapshot is encoded under the read lock only, so
    /// readers are not held up while a large map is encoded.
    pub fn take_checkpoint(&mut self) -> Option<Checkpoint> {
        let mut map = write(&self.map);
        if !map.journal.overflowed {
            return map.take_checkpoint();
        }
        map.begin_snapshot();
        drop(map);
        // Only this writer mutates the map, so nothing changes between the two locks.
        Some(read(&self.map).encode_snapshot())
    }

    /// [`OffsetMap::snapshot`], encoded under the read lock only.
    pub fn snapshot(&mut self) -> Checkpoint {
        write(&self.map).begin_snapshot();
        read(&self.map).encode_snapshot()
    }

    /// Runs `f` on the map under the read lock.
    pub fn read<R>(&self, f: impl FnOnce(&OffsetMap) -> R) -> R {
        f(&read(&self.map))
    }

    /// Heap bytes this map costs the process: the shared allocation holding the map and
    /// its lock (the map's own fields, two reference counts, the lock), plus what the map's
    /// entries and journal have allocated ([`MapStats::heap_bytes`], from their
    /// capacities). The allocator's own per-allocation overhead is not counted.
    pub fn heap_bytes(&self) -> usize {
        // An `Arc` allocation is the two counts followed by the value.
        2 * size_of::<usize>() + size_of::<RwLock<OffsetMap>>() + read(&self.map).stats().heap_bytes
    }
}

/// A reader of one partition's map; cheap to clone, safe to share between threads.
#[derive(Clone, Debug)]
pub struct MapReader {
    map: Shared,
}

impl MapReader {
    /// [`OffsetMap::translate`] under the read lock.
    pub fn translate(&self, position: u64) -> Translation {
        read(&self.map).translate(position)
    }

    /// [`OffsetMap::translate_reverse`] under the read lock.
    pub fn translate_reverse(&self, position: u64) -> Translation {
        read(&self.map).translate_reverse(position)
    }

    /// [`OffsetMap::stats`] under the read lock.
    pub fn stats(&self) -> MapStats {
        read(&self.map).stats()
    }

    /// Runs `f` on the map under the read lock (e.g. to translate many positions at once).
    pub fn read<R>(&self, f: impl FnOnce(&OffsetMap) -> R) -> R {
        f(&read(&self.map))
    }
}

/// The maps of every partition a process replicates, keyed by topic and partition.
#[derive(Debug, Default)]
pub struct Registry {
    topics: RwLock<HashMap<String, HashMap<i32, Shared>>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a partition's map and returns its only writer.
    pub fn register(
        &self,
        topic: &str,
        partition: i32,
        map: OffsetMap,
    ) -> Result<MapWriter, RegistryError> {
        let mut topics = self.topics.write().unwrap_or_else(PoisonError::into_inner);
        let partitions = topics.entry(topic.to_owned()).or_default();
        if partitions.contains_key(&partition) {
            return Err(RegistryError::AlreadyRegistered {
                topic: topic.to_owned(),
                partition,
            });
        }
        let writer = MapWriter::new(map);
        partitions.insert(partition, Arc::clone(&writer.map));
        Ok(writer)
    }

    /// A reader of a partition's map, if registered.
    pub fn reader(&self, topic: &str, partition: i32) -> Option<MapReader> {
        let topics = self.topics.read().unwrap_or_else(PoisonError::into_inner);
        let map = topics.get(topic)?.get(&partition)?;
        Some(MapReader {
            map: Arc::clone(map),
        })
    }

    /// Removes a partition (e.g. revoked from this process). Existing handles keep working
    /// on the detached map. Returns whether it was registered.
    pub fn remove(&self, topic: &str, partition: i32) -> bool {
        let mut topics = self.topics.write().unwrap_or_else(PoisonError::into_inner);
        let Some(partitions) = topics.get_mut(topic) else {
            return false;
        };
        let removed = partitions.remove(&partition).is_some();
        if partitions.is_empty() {
            topics.remove(topic);
        }
        removed
    }

    /// The registered partitions, sorted.
    pub fn partitions(&self) -> Vec<(String, i32)> {
        let topics = self.topics.read().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<(String, i32)> = topics
            .iter()
            .flat_map(|(topic, parts)| parts.keys().map(move |p| (topic.clone(), *p)))
            .collect();
        all.sort();
        all
    }
}
