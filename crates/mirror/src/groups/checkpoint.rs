//! MM2's checkpoint record on `<source alias>.checkpoints.internal` (apache/kafka
//! `connect/mirror-client/.../Checkpoint.java`), byte for byte, so MM2's
//! `RemoteClusterUtils.translateOffsets` and other MM2-aware tools read ours.
//!
//! - key: `group STRING, topic STRING, partition INT32`; the topic is the *target*
//!   (renamed) topic, as MM2's `renameTopicPartition` writes it;
//! - value: header `version INT16` (0), then `upstreamOffset INT64, offset INT64,
//!   metadata STRING`.

use super::wire::{Reader, WireError, Writer};

/// The checkpoints topic's name suffix (MM2's `CHECKPOINTS_TOPIC_SUFFIX`).
const SUFFIX: &str = "checkpoints.internal";

/// The value version we write (MM2's `Checkpoint.VERSION`).
const VERSION: i16 = 0;

/// The checkpoints topic of flows from `source_alias` (MM2's `checkpointsTopic`: alias,
/// separator, `checkpoints.internal`).
pub fn checkpoints_topic(source_alias: &str, separator: &str) -> String {
    format!("{source_alias}{separator}{SUFFIX}")
}

/// One checkpoint: a source group's committed position and its translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Consumer group id.
    pub group: String,
    /// The target (renamed) topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// Its translation on the target.
    pub downstream_offset: i64,
    /// The group's commit metadata ("" when none).
    pub metadata: String,
}

impl Checkpoint {
    /// The record key.
    pub fn encode_key(&self) -> Vec<u8> {
        Writer::default()
            .string(&self.group)
            .string(&self.topic)
            .i32(self.partition)
            .finish()
    }

    /// The record value (version 0).
    pub fn encode_value(&self) -> Vec<u8> {
        Writer::default()
            .i16(VERSION)
            .i64(self.upstream_offset)
            .i64(self.downstream_offset)
            .string(&self.metadata)
            .finish()
    }

    /// Decodes a record written by MM2 or by us.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Checkpoint, WireError> {
        let mut k = Reader::new(key);
        let group = k.string("group")?;
        let topic = k.string("topic")?;
        let partition = k.i32("partition")?;
        let mut v = Reader::new(value);
        v.version(VERSION)?;
        Ok(Checkpoint {
            group,
            topic,
            partition,
            upstream_offset: v.i64("upstreamOffset")?,
            downstream_offset: v.i64("offset")?,
            metadata: v.string("metadata")?,
        })
    }
}

#[cfg(test)]
mod tests;
