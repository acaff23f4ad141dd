//! Delta: the updates since the previous checkpoint.
//!
//! ```text
//! seq count { tag fields }*
//!   1 append     source_start target_start (zigzag distances from the previous append's end) len
//!   2 advance    source_next target_next
//!   3 log start  side offset
//!   4 recreated  side log_start counterpart_next
//! ```

use super::DecodeError;
use super::varint::{self, Reader};
use super::{KIND_DELTA, open_frame, seal, unseal};
use crate::update::{Delta, MAX_PENDING_UPDATES, Update};

const TAG_APPEND: u8 = 1;
const TAG_ADVANCE: u8 = 2;
const TAG_LOG_START: u8 = 3;
const TAG_RECREATED: u8 = 4;

/// Smallest encoded update: a tag and two one-byte fields.
const MIN_UPDATE_BYTES: usize = 3;

pub(crate) fn encode(delta: &Delta) -> Vec<u8> {
    let mut buf = open_frame(KIND_DELTA, 8 + 6 * delta.updates.len());
    varint::put(&mut buf, delta.seq);
    varint::put(&mut buf, delta.updates.len() as u64);
    // Distances are signed: a recreated topic restarts its offsets.
    let mut prev = [0u64; 2];
    for update in &delta.updates {
        match *update {
            Update::Append {
                source_start,
                target_start,
                len,
            } => {
                buf.push(TAG_APPEND);
                varint::put(&mut buf, varint::zigzag(distance(prev[0], source_start)));
                varint::put(&mut buf, varint::zigzag(distance(prev[1], target_start)));
                varint::put(&mut buf, len);
                prev = [source_start + len, target_start + len];
            }
            Update::Advance {
                source_next,
                target_next,
            } => {
                buf.push(TAG_ADVANCE);
                varint::put(&mut buf, source_next);
                varint::put(&mut buf, target_next);
            }
            Update::LogStart { side, offset } => {
                buf.push(TAG_LOG_START);
                varint::put_side(&mut buf, side);
                varint::put(&mut buf, offset);
            }
            Update::Recreated {
                side,
                log_start,
                counterpart_next,
            } => {
                buf.push(TAG_RECREATED);
                varint::put_side(&mut buf, side);
                varint::put(&mut buf, log_start);
                varint::put(&mut buf, counterpart_next);
            }
        }
    }
    seal(buf)
}

/// Both offsets are at most `i64::MAX`, so the difference fits.
fn distance(from: u64, to: u64) -> i64 {
    (to as i64) - (from as i64)
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Delta, DecodeError> {
    let (version, body) = unseal(bytes, KIND_DELTA)?;
    if version != super::DELTA_VERSION {
        return Err(DecodeError::UnknownVersion(version));
    }
    let mut r = Reader::new(body);
    let seq = r.varint()?;
    let count = r.count("update", MAX_PENDING_UPDATES, MIN_UPDATE_BYTES)?;
    let mut updates = Vec::with_capacity(count);
    let mut prev = [0u64; 2];
    for _ in 0..count {
        let update = match r.byte()? {
            TAG_APPEND => {
                let source_start = r.offset_from(prev[0])?;
                let target_start = r.offset_from(prev[1])?;
                let len = r.offset()?;
                let ends = [source_start.checked_add(len), target_start.checked_add(len)];
                let [Some(source_end), Some(target_end)] = ends else {
                    return Err(DecodeError::Malformed("offset out of range"));
                };
                prev = [source_end, target_end];
                Update::Append {
                    source_start,
                    target_start,
                    len,
                }
            }
            TAG_ADVANCE => Update::Advance {
                source_next: r.offset()?,
                target_next: r.offset()?,
            },
            TAG_LOG_START => Update::LogStart {
                side: r.side()?,
                offset: r.offset()?,
            },
            TAG_RECREATED => Update::Recreated {
                side: r.side()?,
                log_start: r.offset()?,
                counterpart_next: r.offset()?,
            },
            _ => return Err(DecodeError::Malformed("unknown update tag")),
        };
        updates.push(update);
    }
    r.finish()?;
    Ok(Delta { seq, updates })
}
