//! Snapshot: the whole map.
//!
//! ```text
//! seq
//! source_next target_next  source_log_start target_log_start  source_lost_below target_lost_below
//! source_start target_start                          (version 2 on; 0 0 when reading version 1)
//! coarse_count { source_gap target_gap records source_gaps_inside target_gaps_inside }*
//! run_count    { source_gap target_gap len }*
//! ```
//!
//! All varints. `*_gap` is the distance from the previous entry's end (from 0 for the
//! first entry), so it is small whatever the offsets' magnitude.

use std::collections::VecDeque;

use super::DecodeError;
use super::varint::{self, Reader};
use super::{KIND_SNAPSHOT, open_frame, seal, unseal};
use crate::coarsen::Segment;
use crate::map::{MapParts, OffsetMap};
use crate::run::Run;
use crate::side::{MAX_OFFSET, Side};

/// Most entries a snapshot may hold (far above any sensible budget; bounds allocation).
pub const MAX_SNAPSHOT_ENTRIES: usize = 1 << 24;

const SIDES: [Side; 2] = [Side::Source, Side::Target];

pub(crate) fn encode(map: &OffsetMap) -> Vec<u8> {
    let coarse = map.coarse_segments();
    let mut buf = open_frame(KIND_SNAPSHOT, 64 + 3 * map.runs().len() + 8 * coarse.len());
    varint::put(&mut buf, map.seq());
    for value in [
        map.next(Side::Source),
        map.next(Side::Target),
        map.log_start(Side::Source),
        map.log_start(Side::Target),
        map.lost_below(Side::Source),
        map.lost_below(Side::Target),
        map.replication_start(Side::Source),
        map.replication_start(Side::Target),
    ] {
        varint::put(&mut buf, value);
    }
    let mut prev = [0u64; 2];
    varint::put(&mut buf, coarse.len() as u64);
    for seg in coarse {
        for side in SIDES {
            varint::put(&mut buf, seg.start(side) - prev[side.index()]);
        }
        varint::put(&mut buf, seg.records());
        for side in SIDES {
            varint::put(&mut buf, seg.gaps(side));
            prev[side.index()] = seg.end(side);
        }
    }
    varint::put(&mut buf, map.runs().len() as u64);
    for run in map.runs() {
        for side in SIDES {
            varint::put(&mut buf, run.start(side) - prev[side.index()]);
            prev[side.index()] = run.end(side);
        }
        varint::put(&mut buf, run.len());
    }
    seal(buf)
}

impl OffsetMap {
    /// Decodes a snapshot written by [`OffsetMap::snapshot`] into a map keeping at most
    /// `budget` entries (older history is coarsened at once if the snapshot holds more).
    ///
    /// Rejects truncated, corrupted (CRC-32C), unknown-version and malformed input.
    pub fn from_snapshot(bytes: &[u8], budget: usize) -> Result<OffsetMap, DecodeError> {
        let (version, body) = unseal(bytes, KIND_SNAPSHOT)?;
        let mut r = Reader::new(body);
        let seq = r.varint()?;
        let mut fields = [0u64; 8];
        let count = if version >= 2 { 8 } else { 6 };
        for field in &mut fields[..count] {
            *field = r.offset()?;
        }
        let [
            source_next,
            target_next,
            source_log,
            target_log,
            source_lost,
            target_lost,
            source_start,
            target_start,
        ] = fields;

        let mut prev = [0u64; 2];
        let coarse_count = r.count("coarse segment", MAX_SNAPSHOT_ENTRIES, 5)?;
        let mut coarse = Vec::with_capacity(coarse_count);
        for _ in 0..coarse_count {
            let starts = [add(prev[0], r.varint()?)?, add(prev[1], r.varint()?)?];
            let records = r.varint()?;
            if records == 0 {
                return Err(DecodeError::Malformed("empty coarse segment"));
            }
            let spans = [add(records, r.varint()?)?, add(records, r.varint()?)?];
            prev = [add(starts[0], spans[0])?, add(starts[1], spans[1])?];
            coarse.push(Segment::new(
                starts[0], starts[1], spans[0], spans[1], records,
            ));
        }
        let run_count = r.count("run", MAX_SNAPSHOT_ENTRIES - coarse_count, 3)?;
        let mut runs = VecDeque::with_capacity(run_count);
        for _ in 0..run_count {
            let starts = [add(prev[0], r.varint()?)?, add(prev[1], r.varint()?)?];
            let len = r.varint()?;
            if len == 0 {
                return Err(DecodeError::Malformed("empty run"));
            }
            prev = [add(starts[0], len)?, add(starts[1], len)?];
            runs.push_back(Run::new(starts[0], starts[1], len));
        }
        r.finish()?;

        let next = [source_next, target_next];
        for i in 0..2 {
            if next[i] < prev[i] {
                return Err(DecodeError::Malformed("position below the last entry"));
            }
        }
        let log_start = [source_log, target_log];
        let lost_below = [source_lost, target_lost];
        let start = [source_start, target_start];
        if (0..2).any(|i| log_start[i] > next[i] || lost_below[i] > next[i] || start[i] > next[i]) {
            return Err(DecodeError::Malformed(
                "log start, loss mark or replication start above the position",
            ));
        }
        Ok(OffsetMap::from_parts(MapParts {
            budget,
            seq,
            coarse,
            runs,
            next,
            log_start,
            lost_below,
            start,
        }))
    }
}

/// `base + by`, which must stay a valid offset.
fn add(base: u64, by: u64) -> Result<u64, DecodeError> {
    base.checked_add(by)
        .filter(|sum| *sum <= MAX_OFFSET)
        .ok_or(DecodeError::Malformed("offset out of range"))
}
