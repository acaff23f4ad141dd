//! The state topic's record format (pure).
//!
//! Key: `u8 version (1) | u16 topic length | topic (UTF-8) | i32 partition`, big-endian —
//! the *source* topic and partition, so the compacted topic keeps the last value per
//! partition. The first byte is also the key's *kind*: 1 is a flow partition, 2 a replay
//! partition ([`super::replay`]); [`key_kind`] tells them apart.
//!
//! Value: `u8 version (1) | 16-byte source topic id | u16 target topic length | target
//! topic | u32 snapshot length | strait-offsets snapshot | u32 CRC-32C` of everything
//! before it. The snapshot carries its own version and checksum; the outer CRC covers the
//! topic id and name too. Unknown versions are refused, never guessed at.

use uuid::Uuid;

/// The encoding version written.
pub const STATE_VERSION: u8 = 1;

/// The first byte of every state key: which kind of record it is. One table, so that no
/// two kinds share a byte and the reader (`super::store`) can sort records by kind
/// without importing the modules that write them.
pub mod kind {
    /// A flow partition's snapshot ([`super::encode_key`]): the encoding version.
    pub const PARTITION: u8 = super::STATE_VERSION;
    /// A replay partition ([`crate::state::replay`]).
    pub const REPLAY: u8 = 2;
    /// A flow partition's delta since its snapshot ([`crate::state::delta`]).
    pub const DELTA: u8 = 3;
    /// An ACL Strait created ([`crate::state::acls`]).
    pub const ACL: u8 = 4;
    /// A scale-out member's report ([`crate::state::members`]).
    pub const MEMBER: u8 = 5;
}

/// One partition's saved state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// Source topic id when the state was written (nil if the source reports none).
    pub topic_id: Uuid,
    /// The target topic the partition is replicated to.
    pub target_topic: String,
    /// [`strait_offsets::OffsetMap`] snapshot bytes.
    pub snapshot: Vec<u8>,
}

/// A malformed key or value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateDecodeError {
    /// A version this build cannot read (written by a newer Strait?).
    #[error("unknown state encoding version {0} (this build reads {STATE_VERSION})")]
    Version(u8),
    /// Too short for the lengths it declares.
    #[error("truncated state record")]
    Truncated,
    /// Bytes after the declared fields.
    #[error("{0} unexpected trailing bytes")]
    Trailing(usize),
    /// The checksum does not match.
    #[error("checksum mismatch")]
    Checksum,
    /// A topic name is not UTF-8.
    #[error("topic name is not UTF-8")]
    Utf8,
}

/// The kind of a state key (its first byte, one of [`kind`]). `None` for an empty key.
pub fn key_kind(bytes: &[u8]) -> Option<u8> {
    bytes.first().copied()
}

/// Encodes a key.
pub fn encode_key(topic: &str, partition: i32) -> Vec<u8> {
    let mut k = Vec::with_capacity(7 + topic.len());
    k.push(STATE_VERSION);
    put_str(&mut k, topic);
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// Decodes a key into (source topic, partition).
pub fn decode_key(bytes: &[u8]) -> Result<(String, i32), StateDecodeError> {
    let mut r = Reader::new(bytes);
    version(r.u8()?)?;
    let topic = r.str()?;
    let partition = i32::from_be_bytes(r.array()?);
    r.end()?;
    Ok((topic, partition))
}

/// Encodes a value.
pub fn encode_value(state: &PartitionState) -> Vec<u8> {
    let mut v = Vec::with_capacity(31 + state.target_topic.len() + state.snapshot.len());
    v.push(STATE_VERSION);
    v.extend_from_slice(state.topic_id.as_bytes());
    put_str(&mut v, &state.target_topic);
    let len = u32::try_from(state.snapshot.len()).unwrap_or(u32::MAX);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(&state.snapshot);
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_be_bytes());
    v
}

/// Decodes a value.
pub fn decode_value(bytes: &[u8]) -> Result<PartitionState, StateDecodeError> {
    let mut r = Reader::new(bytes);
    version(r.u8()?)?;
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or(StateDecodeError::Truncated)?;
    let topic_id = Uuid::from_bytes(r.array()?);
    let target_topic = r.str()?;
    let len = u32::from_be_bytes(r.array()?) as usize;
    let snapshot = r.take(len)?.to_vec();
    let crc = u32::from_be_bytes(r.array()?);
    r.end()?;
    if crc32c::crc32c(&bytes[..body_len]) != crc {
        return Err(StateDecodeError::Checksum);
    }
    Ok(PartitionState {
        topic_id,
        target_topic,
        snapshot,
    })
}

fn version(v: u8) -> Result<(), StateDecodeError> {
    if v == STATE_VERSION {
        Ok(())
    } else {
        Err(StateDecodeError::Version(v))
    }
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    // Kafka topic names are at most 249 bytes; longer ones cannot exist.
    let b = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(b.len() as u16).to_be_bytes());
    out.extend_from_slice(b);
}

/// Reads the fields of a key or value in order.
pub(super) struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
        Reader { b }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], StateDecodeError> {
        if self.b.len() < n {
            return Err(StateDecodeError::Truncated);
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], StateDecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn u8(&mut self) -> Result<u8, StateDecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn str(&mut self) -> Result<String, StateDecodeError> {
        let len = u16::from_be_bytes(self.array()?) as usize;
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| StateDecodeError::Utf8)
    }

    pub(super) fn end(&self) -> Result<(), StateDecodeError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(StateDecodeError::Trailing(self.b.len()))
        }
    }
}

#[cfg(test)]
mod tests;
