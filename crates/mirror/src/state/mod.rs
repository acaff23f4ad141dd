//! Per-flow durable state: a compacted, single-partition topic on the target holding,
//! per source partition, the source topic id, the target topic and the partition's offset
//! map ([`codec`]). The data path writes it every `intervals.checkpoint` for partitions
//! that changed and at a graceful stop; on start it is read to its end (the Fetch high
//! watermark, not ListOffsets) and the last value per key wins. Readers that read it
//! again and again (scale-out takeovers, group sync) keep a [`StateTail`], which reads
//! only what was appended since its last read.
//!
//! [`load_maps`] gives other commands (`offsets translate`, `status`) the maps of a flow.
//! Exactly-once flows also write per-transaction deltas of the maps ([`delta`]), folded
//! into the snapshots by [`read_state`].
//! Replays (`strait replay`) keep their own maps in the same topic under keys of their own
//! kind ([`replay`]), read with [`read_replays`] and never seen by [`read_state`].
//! Scale-out members also report what they own under keys of kind 5 ([`members`]).
//! Scale-out members stamp their records with their group generation ([`stamp`]); a
//! stale owner's late write is ignored on reading.
//! The topic ACLs the flow created on the target are recorded there too ([`acls`], key
//! kind 4), read with [`read_created_acls`].

pub mod acls;
pub mod codec;
pub mod delta;
pub mod members;
pub mod replay;
pub mod stamp;
mod store;

use std::collections::BTreeMap;

pub use acls::read_created_acls;
pub use codec::PartitionState;
pub use replay::{ReplayKey, ReplayState, ReplayStatus};
pub use store::{
    DeltaSeqs, STATE_TOPIC_CONFIGS, StateTail, StateWriter, ensure_state_topic, read_replays,
    read_state, read_state_and_deltas,
};

use strait_client::Client;
use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap, Registry};

use crate::config::Flow;
use crate::error::MirrorError;

/// The saved state of every partition of a flow, by (source topic, partition).
pub type SavedState = BTreeMap<(String, i32), PartitionState>;

/// The saved replay records of a flow, by (replay id, run, partition).
pub type SavedReplays = BTreeMap<ReplayKey, ReplayState>;

/// Reads `flow`'s state topic from the `target` cluster and rebuilds its offset maps,
/// keyed by *source* topic and partition. A flow that never ran gives an empty registry.
pub async fn load_maps(target: &Client, flow: &Flow) -> Result<Registry, MirrorError> {
    registry_of(read_state(target, flow).await?, flow)
}

impl StateTail {
    /// [`load_maps`], reading only what the state topic gained since the last call.
    pub async fn maps(&mut self, target: &Client, flow: &Flow) -> Result<Registry, MirrorError> {
        let (saved, _) = self.read(target, flow).await?;
        registry_of(saved, flow)
    }
}

/// The offset maps of a flow's saved state, keyed by source topic and partition.
fn registry_of(saved: SavedState, flow: &Flow) -> Result<Registry, MirrorError> {
    let registry = Registry::new();
    for ((topic, partition), state) in saved {
        let map = decode_map(&state).map_err(|e| e.flow(&flow.name))?;
        // The writer handle is not needed: readers go through the registry.
        registry
            .register(&topic, partition, map)
            .map_err(|e| MirrorError::state(e.to_string()).flow(&flow.name))?;
    }
    Ok(registry)
}

/// Rebuilds one partition's map from its saved snapshot.
pub fn decode_map(state: &PartitionState) -> Result<OffsetMap, MirrorError> {
    OffsetMap::from_snapshot(&state.snapshot, DEFAULT_RUN_BUDGET).map_err(|e| {
        MirrorError::state(format!("offset map snapshot: {e}")).topic(&state.target_topic)
    })
}
