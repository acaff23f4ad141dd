//! Sparse source→target offset maps for Strait: record what was replicated where, translate
//! committed consumer positions exactly in both directions, bound memory, and persist the
//! maps compactly. Pure: no I/O, no async.
//!
//! # Model
//!
//! Per partition, an [`OffsetMap`] holds sorted runs `(source_start, target_start, len)`:
//! source offsets `source_start..source_start + len` landed at the matching target
//! offsets. Offsets between runs are gaps (compaction, transaction markers, aborted or
//! filtered records, replication starting mid-log). A partition without gaps costs one run
//! whatever its size. Beside the runs the map tracks, per side, the replicated end
//! ([`OffsetMap::next`]; on the source, the replicator's fetch position, which may lie past
//! the last run when trailing markers were skipped), the log start, and where positions
//! start to depend on records lost on the other side.
//!
//! # Using it from the replication engine
//!
//! - Per acknowledged batch: [`OffsetMap::append_dense`] (fast path) or
//!   [`OffsetMap::append_listed`] (re-encoded batch), then [`OffsetMap::advance`] if the
//!   fetch position is past the batch's last record.
//! - Retention and recreation: [`OffsetMap::set_source_log_start`],
//!   [`OffsetMap::set_target_log_start`], [`OffsetMap::source_recreated`],
//!   [`OffsetMap::target_recreated`].
//! - Group offsets: [`OffsetMap::translate`] (source → target) and
//!   [`OffsetMap::translate_reverse`] (target → source, for failback). See
//!   [`Translation`] for the possible answers.
//! - Persistence: [`OffsetMap::take_checkpoint`] / [`OffsetMap::snapshot`] produce
//!   [`Checkpoint`]s for the state topic; on restart [`OffsetMap::from_snapshot`] and
//!   [`OffsetMap::replay`] rebuild the identical map.
//! - Concurrency: a [`Registry`] of per-partition maps, each with one [`MapWriter`] and
//!   any number of [`MapReader`]s.
//!
//! # Guarantee
//!
//! Translation never returns an offset past a record the consumer has not read (DESIGN
//! invariant 7). It is exact unless the position lies in history coarsened to keep the map
//! within its budget, where it rounds down ([`Precision::RoundedDown`]): duplicates, never
//! loss. [`OffsetMap::exact_from`] reports where exactness starts.
//!
//! # Layout
//!
//! | module | concern |
//! |---|---|
//! | `side` | [`Side`], offset range |
//! | `run` | [`Run`]: an exact dense range |
//! | `coarsen` | [`Segment`]: merged runs, its bounds, the coarsening policy, [`Precision`] |
//! | `map` | [`OffsetMap`] state and batch mutations |
//! | `translate` | [`Translation`], lookups in both directions |
//! | `truncate` | log starts and recreated topics |
//! | `update` | [`Update`] vocabulary, the journal, [`Delta`] |
//! | `checkpoint` | [`Checkpoint`]s out of the journal, delta replay |
//! | `encoding` | versioned, checksummed varint encodings |
//! | [`frame`] | the checksummed frame those encodings (and scale-out metadata) share |
//! | `registry` | [`Registry`], [`MapWriter`], [`MapReader`] |
//! | `error` | the map's and the registry's errors (decoding and replay keep theirs) |

mod checkpoint;
mod coarsen;
mod encoding;
mod error;
pub mod frame;
mod map;
mod registry;
mod run;
mod side;
mod translate;
mod truncate;
mod update;

pub use checkpoint::{Checkpoint, CheckpointKind, ReplayError, Replayed};
pub use coarsen::Precision;
pub use coarsen::Segment;
pub use encoding::DecodeError;
pub use encoding::VERSION as ENCODING_VERSION;
pub use encoding::snapshot::MAX_SNAPSHOT_ENTRIES;
pub use error::{MapError, RegistryError};
pub use map::{DEFAULT_RUN_BUDGET, MIN_RUN_BUDGET, MapStats, OffsetMap};
pub use registry::{MapReader, MapWriter, Registry};
pub use run::Run;
pub use side::{MAX_OFFSET, Side};
pub use translate::Translation;
pub use update::{Delta, MAX_PENDING_UPDATES, Update};
