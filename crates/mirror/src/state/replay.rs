//! The state topic's replay records (pure): one per (replay id, run, source partition),
//! beside the flow's own partition records and never under their keys, so a replay never
//! disturbs the flow's maps (see [`crate::replay`]).
//!
//! Key: `u8 kind (2) | u16 id length | id (UTF-8) | u32 run | i32 partition`, big-endian.
//! The first byte of every state key says what it is: 1 is a flow partition
//! ([`super::codec`]), 2 a replay partition; readers refuse kinds they do not know.
//!
//! Value: `u8 version (1) | u8 status | 16-byte source topic id | u16 length + source topic
//! | u16 length + target topic | i64 from (ms) | u8 has until | i64 until (ms) | i64 first
//! source offset | i64 end source offset | u32 partitions | u32 snapshot length |
//! strait-offsets snapshot | u32 CRC-32C` of everything before it.

use uuid::Uuid;

use super::codec::{Reader, StateDecodeError, put_str};

/// The first key byte of a replay record.
pub const REPLAY_KEY_KIND: u8 = super::codec::kind::REPLAY;
/// The value encoding version written.
pub const REPLAY_VALUE_VERSION: u8 = 1;

/// Where one partition of a replay run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayStatus {
    /// Copying (or interrupted while copying): the map covers what was acknowledged by
    /// the last state write.
    Copying,
    /// Every record of the partition's range is on the target and in the map.
    Done,
}

/// Which replay run and partition a record is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplayKey {
    /// The replay's id ([`crate::replay::Spec::id`]).
    pub id: String,
    /// The run of that replay (1, then one more per `--again`).
    pub run: u32,
    /// The source partition.
    pub partition: i32,
}

/// One partition of a replay run, as saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayState {
    /// Where the partition stands.
    pub status: ReplayStatus,
    /// The source topic's id when the run started (nil if the source reports none).
    pub topic_id: Uuid,
    /// The source topic.
    pub source_topic: String,
    /// The target topic.
    pub target_topic: String,
    /// `--from`, ms since the epoch.
    pub from_ms: i64,
    /// `--until`, ms since the epoch (`None`: the end at the start of the run).
    pub until_ms: Option<i64>,
    /// First source offset of the range (at or after `from`).
    pub start: i64,
    /// Source offset the range ends before.
    pub end: i64,
    /// Partitions of the run (every one has a record once the run started).
    pub partitions: u32,
    /// The replay's own [`strait_offsets::OffsetMap`] snapshot.
    pub snapshot: Vec<u8>,
}

/// Encodes a replay key.
pub fn encode_replay_key(key: &ReplayKey) -> Vec<u8> {
    let mut k = Vec::with_capacity(11 + key.id.len());
    k.push(REPLAY_KEY_KIND);
    put_str(&mut k, &key.id);
    k.extend_from_slice(&key.run.to_be_bytes());
    k.extend_from_slice(&key.partition.to_be_bytes());
    k
}

/// Decodes a replay key.
pub fn decode_replay_key(bytes: &[u8]) -> Result<ReplayKey, StateDecodeError> {
    let mut r = Reader::new(bytes);
    let kind = r.u8()?;
    if kind != REPLAY_KEY_KIND {
        return Err(StateDecodeError::Version(kind));
    }
    let id = r.str()?;
    let run = u32::from_be_bytes(r.array()?);
    let partition = i32::from_be_bytes(r.array()?);
    r.end()?;
    Ok(ReplayKey { id, run, partition })
}

/// Encodes a replay value.
pub fn encode_replay_value(s: &ReplayState) -> Vec<u8> {
    let mut v =
        Vec::with_capacity(70 + s.source_topic.len() + s.target_topic.len() + s.snapshot.len());
    v.push(REPLAY_VALUE_VERSION);
    v.push(match s.status {
        ReplayStatus::Copying => 0,
        ReplayStatus::Done => 1,
    });
    v.extend_from_slice(s.topic_id.as_bytes());
    put_str(&mut v, &s.source_topic);
    put_str(&mut v, &s.target_topic);
    v.extend_from_slice(&s.from_ms.to_be_bytes());
    v.push(u8::from(s.until_ms.is_some()));
    v.extend_from_slice(&s.until_ms.unwrap_or(0).to_be_bytes());
    v.extend_from_slice(&s.start.to_be_bytes());
    v.extend_from_slice(&s.end.to_be_bytes());
    v.extend_from_slice(&s.partitions.to_be_bytes());
    let len = u32::try_from(s.snapshot.len()).unwrap_or(u32::MAX);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(&s.snapshot);
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_be_bytes());
    v
}

/// Decodes a replay value.
pub fn decode_replay_value(bytes: &[u8]) -> Result<ReplayState, StateDecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.u8()?;
    if version != REPLAY_VALUE_VERSION {
        return Err(StateDecodeError::Version(version));
    }
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or(StateDecodeError::Truncated)?;
    let status = match r.u8()? {
        0 => ReplayStatus::Copying,
        1 => ReplayStatus::Done,
        // A status this build does not know: as unreadable as an unknown version.
        other => return Err(StateDecodeError::Version(other)),
    };
    let topic_id = Uuid::from_bytes(r.array()?);
    let source_topic = r.str()?;
    let target_topic = r.str()?;
    let from_ms = i64::from_be_bytes(r.array()?);
    let has_until = r.u8()?;
    let until = i64::from_be_bytes(r.array()?);
    // One encoding per value: no until is written as flag 0 and time 0.
    if has_until > 1 || (has_until == 0 && until != 0) {
        return Err(StateDecodeError::Version(has_until));
    }
    let start = i64::from_be_bytes(r.array()?);
    let end = i64::from_be_bytes(r.array()?);
    let partitions = u32::from_be_bytes(r.array()?);
    let len = u32::from_be_bytes(r.array()?) as usize;
    let snapshot = r.take(len)?.to_vec();
    let crc = u32::from_be_bytes(r.array()?);
    r.end()?;
    if crc32c::crc32c(&bytes[..body_len]) != crc {
        return Err(StateDecodeError::Checksum);
    }
    Ok(ReplayState {
        status,
        topic_id,
        source_topic,
        target_topic,
        from_ms,
        until_ms: (has_until != 0).then_some(until),
        start,
        end,
        partitions,
        snapshot,
    })
}

#[cfg(test)]
mod tests;
