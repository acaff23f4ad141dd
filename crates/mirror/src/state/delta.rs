//! Offset-map deltas in the state topic (pure): exactly-once flows commit, with each
//! transaction, only the updates of each partition's map since the previous one (a
//! strait-offsets [`Delta`](strait_offsets::Delta)), and a whole snapshot (the partition's
//! ordinary record, [`super::codec`]) every [`SNAPSHOT_EVERY`] deltas, which tombstones
//! the deltas it covers. A snapshot per transaction would grow with the map: every
//! transaction adds a run per partition (our commit marker is a gap).
//!
//! Key: `u8 kind (3) | u16 topic length | topic | i32 partition | u64 seq`, big-endian —
//! one key per delta, so compaction keeps them until their tombstone.
//! Value: `u8 version (1) | u32 length | delta bytes | u32 CRC-32C` of everything before
//! it (the delta bytes carry their own version and checksum too).
//!
//! Reading: a partition's map is its snapshot with every later delta replayed in sequence
//! order ([`rebuild`]); a delta at or below the snapshot's sequence is already in it, a
//! missing one is an error (never a guess).

use std::collections::BTreeMap;

use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap, Replayed};

use super::codec::{PartitionState, Reader, StateDecodeError, put_str};

/// The first key byte of a delta record.
pub const DELTA_KEY_KIND: u8 = super::codec::kind::DELTA;
/// The value encoding version written.
pub const DELTA_VALUE_VERSION: u8 = 1;
/// Deltas of a partition between two snapshots.
pub const SNAPSHOT_EVERY: usize = 64;

/// Encodes a delta's key.
pub fn encode_delta_key(topic: &str, partition: i32, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(15 + topic.len());
    k.push(DELTA_KEY_KIND);
    put_str(&mut k, topic);
    k.extend_from_slice(&partition.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Decodes a delta's key into (source topic, partition, seq).
pub fn decode_delta_key(bytes: &[u8]) -> Result<((String, i32), u64), StateDecodeError> {
    let mut r = Reader::new(bytes);
    let kind = r.u8()?;
    if kind != DELTA_KEY_KIND {
        return Err(StateDecodeError::Version(kind));
    }
    let topic = r.str()?;
    let partition = i32::from_be_bytes(r.array()?);
    let seq = u64::from_be_bytes(r.array()?);
    r.end()?;
    Ok(((topic, partition), seq))
}

/// Encodes a delta's value.
pub fn encode_delta_value(delta: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + delta.len());
    v.push(DELTA_VALUE_VERSION);
    let len = u32::try_from(delta.len()).unwrap_or(u32::MAX);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(delta);
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_be_bytes());
    v
}

/// Decodes a delta's value into the delta bytes.
pub fn decode_delta_value(bytes: &[u8]) -> Result<Vec<u8>, StateDecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.u8()?;
    if version != DELTA_VALUE_VERSION {
        return Err(StateDecodeError::Version(version));
    }
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or(StateDecodeError::Truncated)?;
    let len = u32::from_be_bytes(r.array()?) as usize;
    let delta = r.take(len)?.to_vec();
    let crc = u32::from_be_bytes(r.array()?);
    r.end()?;
    if crc32c::crc32c(&bytes[..body_len]) != crc {
        return Err(StateDecodeError::Checksum);
    }
    Ok(delta)
}

/// `state` with `deltas` (by sequence number) replayed onto its snapshot, re-encoded as one
/// snapshot. Deltas the snapshot covers are skipped; a gap is an error.
pub fn rebuild(
    state: &PartitionState,
    deltas: &BTreeMap<u64, Vec<u8>>,
) -> Result<PartitionState, String> {
    let mut map = OffsetMap::from_snapshot(&state.snapshot, DEFAULT_RUN_BUDGET)
        .map_err(|e| format!("offset map snapshot: {e}"))?;
    for (seq, bytes) in deltas {
        match map.replay(bytes) {
            Ok(Replayed::Applied | Replayed::AlreadyIncluded) => {}
            Err(e) => return Err(format!("offset map delta {seq}: {e}")),
        }
    }
    Ok(PartitionState {
        topic_id: state.topic_id,
        target_topic: state.target_topic.clone(),
        snapshot: map.snapshot().bytes,
    })
}

#[cfg(test)]
mod tests;
