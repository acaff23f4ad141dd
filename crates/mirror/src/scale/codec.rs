//! The bytes Strait's workers put in their JoinGroup metadata ([`MemberMetadata`]) and the
//! leader puts in each SyncGroup assignment ([`MemberAssignment`]). Versioned and
//! checksummed in strait-offsets' frame ([`strait_offsets::frame`]):
//!
//! ```text
//! version: u8 | kind: u8 | body | crc32c(version..body): u32 little-endian
//! ```
//!
//! Strings are `u16` length + UTF-8, counts `u32`, partitions `i32`, all big-endian.
//! A partition set is grouped by topic: `topics: u32`, then per topic its name, `count: u32`
//! and the partition numbers. Decoding checks the checksum, then the version (an unknown
//! version is refused, never guessed at) and kind, caps every count by the bytes that
//! remain, rejects trailing bytes and never panics.

use std::collections::BTreeMap;
use std::sync::Arc;

use strait_offsets::frame::{self, FrameError};

use super::{PartitionId, PartitionLoad};

/// The encoding version this build writes and reads.
pub const VERSION: u8 = 1;

const KIND_METADATA: u8 = 1;
const KIND_ASSIGNMENT: u8 = 2;

/// Why bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes end before the structure does.
    #[error("truncated: {0}")]
    Truncated(&'static str),
    /// The checksum does not match (the bytes were damaged, or are not ours).
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The checksum in the trailer.
        stored: u32,
        /// The checksum of the bytes.
        computed: u32,
    },
    /// Written by a Strait version with an encoding this build does not know.
    #[error(
        "unknown encoding version {0} (this build reads version {VERSION}); upgrade every worker of the group to one version"
    )]
    UnknownVersion(u8),
    /// Member metadata where an assignment was expected, or the reverse.
    #[error("wrong kind {found} (expected {expected})")]
    WrongKind {
        /// The kind found.
        found: u8,
        /// The kind expected.
        expected: u8,
    },
    /// A value that cannot be right (bad UTF-8, a zero capacity, a negative partition,
    /// bytes after the end…).
    #[error("invalid: {0}")]
    Invalid(String),
}

impl From<FrameError> for CodecError {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::Truncated => CodecError::Truncated("shorter than a frame"),
            FrameError::Checksum { stored, computed } => CodecError::Checksum { stored, computed },
            FrameError::UnknownVersion { found, .. } => CodecError::UnknownVersion(found),
            FrameError::WrongKind { found, expected } => CodecError::WrongKind { found, expected },
        }
    }
}

/// What a worker tells the group's leader when it joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    /// The worker's Strait version (`CARGO_PKG_VERSION`), to spot mixed versions.
    pub worker_version: String,
    /// The host it runs on (for `strait status`).
    pub host: String,
    /// Its relative capacity (≥ 1): a worker of capacity 2 gets twice the load.
    pub capacity: u32,
    /// The generation in which it owned `owned` (-1: none).
    pub generation: i32,
    /// The partitions it still owns (not yet released) as it joins.
    pub owned: Vec<PartitionId>,
    /// The load of the partitions it replicates, as it measured it (lag bytes and
    /// throughput): the leader balances by these.
    pub loads: Vec<PartitionLoad>,
}

/// What the leader gives one worker for one generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberAssignment {
    /// The partitions the worker owns in this generation.
    pub partitions: Vec<PartitionId>,
    /// Partitions it owned and must release (flush, write its state, stop); once it has,
    /// it rejoins so that their new owners get them in the next generation.
    pub revoked: Vec<PartitionId>,
}

struct Writer(Vec<u8>);

impl Writer {
    fn open(kind: u8) -> Writer {
        Writer(frame::open(VERSION, kind, 64))
    }

    fn str(&mut self, s: &str) -> Result<(), CodecError> {
        let len = u16::try_from(s.len())
            .map_err(|_| CodecError::Invalid(format!("a {}-byte string", s.len())))?;
        self.0.extend_from_slice(&len.to_be_bytes());
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }

    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    fn loads(&mut self, loads: &[PartitionLoad]) -> Result<(), CodecError> {
        let n = u32::try_from(loads.len())
            .map_err(|_| CodecError::Invalid(format!("{} loads", loads.len())))?;
        self.u32(n);
        for l in loads {
            self.str(&l.id.topic)?;
            self.i32(l.id.partition);
            self.u64(l.lag_bytes);
            self.u64(l.bytes_per_sec);
        }
        Ok(())
    }

    fn partitions(&mut self, ps: &[PartitionId]) -> Result<(), CodecError> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for p in ps {
            by_topic.entry(&p.topic).or_default().push(p.partition);
        }
        self.u32(len32(by_topic.len())?);
        for (topic, mut parts) in by_topic {
            parts.sort_unstable();
            parts.dedup();
            self.str(topic)?;
            self.u32(len32(parts.len())?);
            for p in parts {
                self.i32(p);
            }
        }
        Ok(())
    }

    fn seal(self) -> Vec<u8> {
        frame::seal(self.0)
    }
}

fn len32(n: usize) -> Result<u32, CodecError> {
    u32::try_from(n).map_err(|_| CodecError::Invalid(format!("{n} entries")))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn unseal(bytes: &'a [u8], kind: u8) -> Result<Reader<'a>, CodecError> {
        Ok(Reader(frame::unseal(bytes, VERSION, kind)?))
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        if self.0.len() < n {
            return Err(CodecError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, CodecError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, CodecError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, CodecError> {
        Ok(self.u32(what)? as i32)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, CodecError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn loads(&mut self, what: &'static str) -> Result<Vec<PartitionLoad>, CodecError> {
        // Each load is at least a 2-byte name length, a partition and two u64s.
        let n = self.count(2 + 4 + 16, what)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let topic = self.str(what)?;
            let partition = self.i32(what)?;
            out.push(PartitionLoad {
                id: PartitionId::new(topic, partition),
                lag_bytes: self.u64(what)?,
                bytes_per_sec: self.u64(what)?,
            });
        }
        Ok(out)
    }

    fn str(&mut self, what: &'static str) -> Result<String, CodecError> {
        let len = self.u16(what)? as usize;
        let b = self.take(len, what)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| CodecError::Invalid(format!("{what} is not UTF-8")))
    }

    /// A count of items at least `min_size` bytes each, capped by what remains.
    fn count(&mut self, min_size: usize, what: &'static str) -> Result<usize, CodecError> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_size) > self.0.len() {
            return Err(CodecError::Truncated(what));
        }
        Ok(n)
    }

    fn partitions(&mut self, what: &'static str) -> Result<Vec<PartitionId>, CodecError> {
        let topics = self.count(6, what)?;
        let mut out = Vec::new();
        for _ in 0..topics {
            let topic: Arc<str> = self.str(what)?.into();
            if topic.is_empty() {
                return Err(CodecError::Invalid(format!("{what}: an empty topic name")));
            }
            let n = self.count(4, what)?;
            for _ in 0..n {
                let partition = self.i32(what)?;
                if partition < 0 {
                    return Err(CodecError::Invalid(format!(
                        "{what}: partition {partition} of {topic}"
                    )));
                }
                out.push(PartitionId {
                    topic: topic.clone(),
                    partition,
                });
            }
        }
        Ok(out)
    }

    fn finish(self) -> Result<(), CodecError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(CodecError::Invalid(format!(
                "{} bytes after the end",
                self.0.len()
            )))
        }
    }
}

impl MemberMetadata {
    /// This build's metadata for a worker on `host` owning nothing yet.
    pub fn new(host: impl Into<String>, capacity: u32) -> Self {
        MemberMetadata {
            worker_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host.into(),
            capacity,
            generation: -1,
            owned: Vec::new(),
            loads: Vec::new(),
        }
    }

    /// The bytes for JoinGroup.
    pub fn encode(&self) -> Result<Vec<u8>, CodecError> {
        if self.capacity == 0 {
            return Err(CodecError::Invalid("capacity 0".into()));
        }
        let mut w = Writer::open(KIND_METADATA);
        w.str(&self.worker_version)?;
        w.str(&self.host)?;
        w.u32(self.capacity);
        w.i32(self.generation);
        w.partitions(&self.owned)?;
        w.loads(&self.loads)?;
        Ok(w.seal())
    }

    /// Reads a member's JoinGroup metadata.
    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::unseal(bytes, KIND_METADATA)?;
        let worker_version = r.str("worker version")?;
        let host = r.str("host")?;
        let capacity = r.u32("capacity")?;
        if capacity == 0 {
            return Err(CodecError::Invalid("capacity 0".into()));
        }
        let generation = r.i32("generation")?;
        let owned = r.partitions("owned partitions")?;
        let loads = r.loads("partition loads")?;
        r.finish()?;
        Ok(MemberMetadata {
            worker_version,
            host,
            capacity,
            generation,
            owned,
            loads,
        })
    }
}

impl MemberAssignment {
    /// The bytes for SyncGroup.
    pub fn encode(&self) -> Result<Vec<u8>, CodecError> {
        let mut w = Writer::open(KIND_ASSIGNMENT);
        w.partitions(&self.partitions)?;
        w.partitions(&self.revoked)?;
        Ok(w.seal())
    }

    /// Reads the leader's assignment. Empty bytes (the coordinator's answer to a member
    /// the leader left out) are an empty assignment.
    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        if bytes.is_empty() {
            return Ok(MemberAssignment::default());
        }
        let mut r = Reader::unseal(bytes, KIND_ASSIGNMENT)?;
        let partitions = r.partitions("assigned partitions")?;
        let revoked = r.partitions("revoked partitions")?;
        r.finish()?;
        Ok(MemberAssignment {
            partitions,
            revoked,
        })
    }
}
