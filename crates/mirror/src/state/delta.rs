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
mod tests {
    use super::*;
    use strait_offsets::{CheckpointKind, Side};
    use uuid::Uuid;

    #[test]
    fn keys_and_values_round_trip_and_every_bit_flip_is_rejected() {
        let k = encode_delta_key("orders", 3, 42);
        assert_eq!(
            decode_delta_key(&k).unwrap(),
            (("orders".to_owned(), 3), 42)
        );
        let v = encode_delta_value(b"delta-bytes");
        assert_eq!(decode_delta_value(&v).unwrap(), b"delta-bytes");
        for i in 0..v.len() {
            for bit in 0..8 {
                let mut c = v.clone();
                c[i] ^= 1 << bit;
                assert!(
                    decode_delta_value(&c).is_err(),
                    "flip at byte {i} bit {bit}"
                );
            }
        }
        assert!(decode_delta_key(&super::super::codec::encode_key("orders", 3)).is_err());
    }

    #[test]
    fn a_snapshot_and_its_later_deltas_rebuild_the_map_and_covered_ones_are_skipped() {
        let mut live = OffsetMap::new();
        live.append_dense(0, 10, 0).unwrap();
        let base = live.snapshot();
        let mut deltas = BTreeMap::new();
        for i in 1..=3u64 {
            // Each transaction: a batch after our commit marker.
            let t = live.next(Side::Target) + 1;
            live.append_dense(i * 10, 10, t).unwrap();
            let c = live.take_checkpoint().unwrap();
            assert_eq!(c.kind, CheckpointKind::Delta);
            deltas.insert(c.seq, c.bytes);
        }
        let state = PartitionState {
            topic_id: Uuid::nil(),
            target_topic: "t".into(),
            snapshot: base.bytes,
        };
        let rebuilt = rebuild(&state, &deltas).unwrap();
        let map = OffsetMap::from_snapshot(&rebuilt.snapshot, DEFAULT_RUN_BUDGET).unwrap();
        assert_eq!(map.next(Side::Source), 40);
        assert_eq!(map.next(Side::Target), 43);
        assert_eq!(map.runs().len(), 4);
        // A newer snapshot already holding the deltas: replaying them changes nothing.
        let again = rebuild(&rebuilt, &deltas).unwrap();
        assert_eq!(
            OffsetMap::from_snapshot(&again.snapshot, DEFAULT_RUN_BUDGET)
                .unwrap()
                .runs()
                .len(),
            4
        );
    }

    #[test]
    fn a_missing_delta_is_an_error() {
        let mut live = OffsetMap::new();
        live.append_dense(0, 10, 0).unwrap();
        let base = live.snapshot();
        let mut deltas = BTreeMap::new();
        for i in 1..=2u64 {
            live.append_dense(i * 10, 10, i * 10).unwrap();
            let c = live.take_checkpoint().unwrap();
            if i == 2 {
                deltas.insert(c.seq, c.bytes);
            }
        }
        let state = PartitionState {
            topic_id: Uuid::nil(),
            target_topic: "t".into(),
            snapshot: base.bytes,
        };
        assert!(rebuild(&state, &deltas).is_err());
    }
}
