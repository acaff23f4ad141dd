//! Corruption tests that need to forge well-checksummed frames.

use super::varint;
use super::*;
use crate::frame::{HEADER, TRAILER};
use crate::{DecodeError, OffsetMap, ReplayError};

fn sample() -> OffsetMap {
    let mut map = OffsetMap::with_budget(6);
    map.advance(1_000, 0).unwrap();
    for i in 0..12u64 {
        map.append_dense(1_000 + i * 7, 5, i * 5).unwrap();
    }
    map.set_source_log_start(1_010).unwrap();
    map.advance_source(1_100).unwrap();
    map
}

/// A frame with the given bytes after the header and a correct checksum.
fn forge(version: u8, kind: u8, body: &[u8]) -> Vec<u8> {
    let mut buf = vec![version, kind];
    buf.extend_from_slice(body);
    seal(buf)
}

fn body(bytes: &[u8]) -> &[u8] {
    &bytes[HEADER..bytes.len() - TRAILER]
}

#[test]
fn snapshot_round_trip() {
    let mut map = sample();
    assert!(!map.coarse_segments().is_empty());
    let checkpoint = map.snapshot();
    let restored = OffsetMap::from_snapshot(&checkpoint.bytes, 6).unwrap();
    assert_eq!(restored, map);
    assert_eq!(restored.seq(), map.seq());
    for c in 990..1_110 {
        assert_eq!(restored.translate(c), map.translate(c));
    }
}

#[test]
fn every_truncation_is_rejected() {
    let bytes = sample().snapshot().bytes;
    for len in 0..bytes.len() {
        assert!(
            OffsetMap::from_snapshot(&bytes[..len], 6).is_err(),
            "prefix of {len} bytes"
        );
    }
}

#[test]
fn every_bit_flip_is_rejected() {
    let bytes = sample().snapshot().bytes;
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(OffsetMap::from_snapshot(&flipped, 6).is_err(), "bit {bit}");
    }
}

#[test]
fn unknown_version_and_wrong_kind() {
    let bytes = sample().snapshot().bytes;
    let future = forge(VERSION + 1, KIND_SNAPSHOT, body(&bytes));
    assert_eq!(
        OffsetMap::from_snapshot(&future, 6),
        Err(DecodeError::UnknownVersion(VERSION + 1))
    );
    assert_eq!(
        crate::Delta::decode(&bytes),
        Err(DecodeError::WrongKind {
            found: KIND_SNAPSHOT,
            expected: KIND_DELTA
        })
    );
}

#[test]
fn checksum_error_is_reported() {
    let mut bytes = sample().snapshot().bytes;
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    assert!(matches!(
        OffsetMap::from_snapshot(&bytes, 6),
        Err(DecodeError::Checksum { .. })
    ));
}

#[test]
fn trailing_bytes_are_rejected() {
    let bytes = sample().snapshot().bytes;
    let mut longer = body(&bytes).to_vec();
    longer.push(0);
    assert_eq!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &longer), 6),
        Err(DecodeError::TrailingBytes(1))
    );
}

#[test]
fn a_version_1_snapshot_reads_as_replicated_from_the_start() {
    // Version 1 had six positions and no replication start.
    let mut body = Vec::new();
    for value in [3, 10, 10, 0, 0, 0, 0, 0, 1, 0, 0, 10] {
        varint::put(&mut body, value);
    }
    let map = OffsetMap::from_snapshot(&forge(1, KIND_SNAPSHOT, &body), 6).unwrap();
    assert_eq!(map.replication_start(crate::Side::Source), 0);
    assert_eq!(map.seq(), 3);
    assert!(map.translate(0).is_exact());
}

#[test]
fn the_replication_start_survives_a_snapshot() {
    let mut map = OffsetMap::new();
    map.start_at(500, 40).unwrap();
    map.append_dense(500, 10, 40).unwrap();
    let restored = OffsetMap::from_snapshot(&map.snapshot().bytes, 6).unwrap();
    assert_eq!(restored, map);
    assert_eq!(restored.replication_start(crate::Side::Source), 500);
    assert_eq!(restored.replication_start(crate::Side::Target), 40);
    // A start above the position is refused.
    let mut body = Vec::new();
    for value in [0, 10, 10, 0, 0, 0, 0, 11, 0, 0, 0] {
        varint::put(&mut body, value);
    }
    assert!(OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &body), 6).is_err());
}

#[test]
fn counts_are_capped_before_allocating() {
    let mut body = Vec::new();
    for _ in 0..9 {
        varint::put(&mut body, 0); // seq and the eight positions
    }
    varint::put(&mut body, u64::MAX); // coarse count
    assert!(matches!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &body), 6),
        Err(DecodeError::TooMany { cap: 0, .. })
    ));

    let mut delta = Vec::new();
    varint::put(&mut delta, 1);
    varint::put(&mut delta, 1 << 40);
    assert!(matches!(
        crate::Delta::decode(&forge(DELTA_VERSION, KIND_DELTA, &delta)),
        Err(DecodeError::TooMany { .. })
    ));
}

#[test]
fn overlong_varints_and_out_of_range_offsets() {
    let overlong = [0xffu8; 11];
    assert_eq!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &overlong), 6),
        Err(DecodeError::VarintOverflow)
    );
    let mut body = Vec::new();
    varint::put(&mut body, 0);
    varint::put(&mut body, u64::MAX); // source_next
    assert_eq!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &body), 6),
        Err(DecodeError::Malformed("offset out of range"))
    );
}

#[test]
fn invariants_are_checked() {
    // One run 0..10, but a source position of 5: below the run's end.
    let mut body = Vec::new();
    for value in [0, 5, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 10] {
        varint::put(&mut body, value);
    }
    assert_eq!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &body), 6),
        Err(DecodeError::Malformed("position below the last entry"))
    );
    // An empty run.
    let mut body = Vec::new();
    for value in [0, 10, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0] {
        varint::put(&mut body, value);
    }
    assert_eq!(
        OffsetMap::from_snapshot(&forge(VERSION, KIND_SNAPSHOT, &body), 6),
        Err(DecodeError::Malformed("empty run"))
    );
}

#[test]
fn delta_round_trip_and_corruption() {
    let mut map = OffsetMap::new();
    map.append_dense(5, 3, 0).unwrap();
    map.append_listed(&[10, 12, 13], 3).unwrap();
    map.advance(20, 7).unwrap();
    map.set_target_log_start(1).unwrap();
    map.target_recreated(0, 20).unwrap();
    map.append_dense(20, 1, 0).unwrap();
    let checkpoint = map.take_checkpoint().unwrap();
    let delta = crate::Delta::decode(&checkpoint.bytes).unwrap();
    assert_eq!(delta.seq(), 1);
    assert_eq!(delta.updates().len(), 7);
    assert_eq!(encoding_of(&delta), checkpoint.bytes);

    let mut replayed = OffsetMap::new();
    replayed.replay(&checkpoint.bytes).unwrap();
    assert_eq!(replayed, map);

    for len in 0..checkpoint.bytes.len() {
        assert!(crate::Delta::decode(&checkpoint.bytes[..len]).is_err());
    }
    for bit in 0..checkpoint.bytes.len() * 8 {
        let mut flipped = checkpoint.bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(crate::Delta::decode(&flipped).is_err(), "bit {bit}");
    }
    let unknown_tag = forge(DELTA_VERSION, KIND_DELTA, &[1, 1, 9, 0, 0]);
    assert_eq!(
        crate::Delta::decode(&unknown_tag),
        Err(DecodeError::Malformed("unknown update tag"))
    );
}

fn encoding_of(delta: &crate::Delta) -> Vec<u8> {
    delta::encode(delta)
}

#[test]
fn replay_enforces_sequence() {
    let mut map = OffsetMap::new();
    map.append_dense(0, 1, 0).unwrap();
    let first = map.take_checkpoint().unwrap();
    map.append_dense(5, 1, 1).unwrap();
    let second = map.take_checkpoint().unwrap();

    let mut replayed = OffsetMap::new();
    assert_eq!(
        replayed.replay(&second.bytes),
        Err(ReplayError::SequenceGap {
            applied: 0,
            found: 2
        })
    );
    replayed.replay(&first.bytes).unwrap();
    assert_eq!(
        replayed.replay(&first.bytes),
        Ok(crate::Replayed::AlreadyIncluded)
    );
    replayed.replay(&second.bytes).unwrap();
    assert_eq!(replayed, map);

    // A delta whose update contradicts the map is rejected with its position.
    let mut other = OffsetMap::new();
    other.advance(100, 100).unwrap();
    other.take_checkpoint().unwrap();
    let mut conflicting = OffsetMap::new();
    conflicting.append_dense(0, 1, 0).unwrap();
    let mut diverged = other.clone();
    diverged.journal.seq = 0;
    let bytes = conflicting.take_checkpoint().unwrap().bytes;
    assert!(matches!(
        diverged.replay(&bytes),
        Err(ReplayError::Rejected {
            seq: 1,
            index: 0,
            ..
        })
    ));

    // Live updates first, then replay: refused.
    let mut live = OffsetMap::new();
    live.append_dense(0, 1, 0).unwrap();
    assert_eq!(
        live.replay(&first.bytes),
        Err(ReplayError::PendingUpdates(1))
    );
}
