//! Whether a replay may write into the topic its flow replicates to (pure).
//!
//! The flow is the only writer it expects on its target partitions. Replayed records land
//! after the flow's own, and the flow tells them apart from a foreign writer only as
//! repeats of records it wrote within the last [`LOOKBACK`] target offsets before its
//! position (its live and recovery duplicate checks). Rules:
//!
//! 18. *Into another topic, or a partition the flow has never started, anything goes*: a
//!     flow starting a partition begins its map at the target's end, after them.
//! 19. *Into the flow's topic, the range must already be replicated by the flow*: records
//!     the flow has not copied yet would land before its own copies, which then look like
//!     a foreign writer's.
//! 20. *…and close enough to the flow's end*: from the flow's copy of the range's first
//!     record to the target's end, plus the range itself (the flow's position moves past
//!     the replayed records as they land), must fit in [`LOOKBACK`].

use strait_offsets::Translation;

use crate::datapath::tail::LOOKBACK;

/// Where the flow's copy of the range's first source record is, as its map translates it.
pub type FlowCopy = Translation;

/// `Ok` when the replay of `len` records starting where `flow_copy` says (`None`: the flow
/// has no map for the partition), into the flow's own target partition ending at
/// `target_end`, is recognised by the flow; else why not.
pub fn into_flow_topic(
    flow_copy: Option<FlowCopy>,
    target_end: i64,
    len: i64,
) -> Result<(), String> {
    let at = match flow_copy {
        None => return Ok(()),
        Some(Translation::Mapped { offset, .. }) => offset as i64,
        Some(Translation::NotYetReplicated { .. }) => {
            return Err(
                "the flow's saved state has not reached the start of the range (the flow \
                 saves it every intervals.checkpoint: a running flow may be there already, \
                 try again shortly); records it has not copied yet would land after the \
                 replayed ones and look like a foreign writer's"
                    .to_owned(),
            );
        }
        Some(other) => {
            return Err(format!(
                "the flow's map cannot place the start of the range ({other:?})"
            ));
        }
    };
    let span = (target_end - at).max(0) + len.max(0);
    if span > LOOKBACK {
        return Err(format!(
            "the flow wrote the range's first record {} offsets before the target's end; with \
             the {len} replayed records that is {span}, more than the {LOOKBACK} offsets within \
             which the flow recognises its own records, so it would take the replayed ones for \
             a foreign writer (on_target_mismatch)",
            target_end - at
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
