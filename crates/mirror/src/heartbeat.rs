//! MM2-compatible heartbeats: a record on the target's `heartbeats` topic every
//! `intervals.heartbeat` (apache/kafka `connect/mirror-client/.../Heartbeat.java`, byte
//! for byte). Replicated downstream as `<alias>.heartbeats`, they let MM2-aware tools
//! (`RemoteClusterUtils.upstreamClusters`, replication-hop counting) see our flows.
//!
//! - key: `sourceClusterAlias STRING, targetClusterAlias STRING`;
//! - value: header `version INT16` (0), then `timestamp INT64` (ms since the epoch).

use strait_client::Client;

use crate::clock::now_ms;
use crate::config::Flow;
use crate::config::naming::HEARTBEATS_TOPIC;
use crate::error::MirrorError;
use crate::groups::wire::{Reader, WireError, Writer};
use crate::metrics::Metrics;
use crate::topics::internal::InternalTopicWriter;

/// The value version we write (MM2's `Heartbeat.VERSION`).
const VERSION: i16 = 0;

/// One heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The flow's source cluster.
    pub source_alias: String,
    /// The flow's target cluster.
    pub target_alias: String,
    /// When it was emitted, ms since the epoch.
    pub timestamp: i64,
}

impl Heartbeat {
    /// The record key.
    pub fn encode_key(&self) -> Vec<u8> {
        Writer::default()
            .string(&self.source_alias)
            .string(&self.target_alias)
            .finish()
    }

    /// The record value (version 0).
    pub fn encode_value(&self) -> Vec<u8> {
        Writer::default().i16(VERSION).i64(self.timestamp).finish()
    }

    /// Decodes a record written by MM2 or by us.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Heartbeat, WireError> {
        let mut k = Reader::new(key);
        let source_alias = k.string("sourceClusterAlias")?;
        let target_alias = k.string("targetClusterAlias")?;
        let mut v = Reader::new(value);
        v.version(VERSION)?;
        Ok(Heartbeat {
            source_alias,
            target_alias,
            timestamp: v.i64("timestamp")?,
        })
    }
}

/// Emits a flow's heartbeats to its target cluster.
#[derive(Debug)]
pub struct Heartbeats {
    enabled: bool,
    flow: String,
    metrics: Option<Metrics>,
    source_alias: String,
    target_alias: String,
    writer: InternalTopicWriter,
}

impl Heartbeats {
    /// Heartbeats for `flow`, written with `target`. Emits nothing when the flow's
    /// `sync.heartbeats` is off.
    pub fn new(flow: &Flow, target: Client) -> Self {
        Heartbeats {
            enabled: flow.sync.heartbeats,
            flow: flow.name.clone(),
            metrics: None,
            source_alias: flow.source.clone(),
            target_alias: flow.target.clone(),
            writer: InternalTopicWriter::new(target, HEARTBEATS_TOPIC, flow.replication_factor),
        }
    }

    /// Counts emitted heartbeats in `metrics` (`strait_heartbeats_emitted_total`).
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Writes one heartbeat now, creating the compacted `heartbeats` topic first if it is
    /// missing.
    pub async fn emit(&mut self) -> Result<(), MirrorError> {
        if !self.enabled {
            return Ok(());
        }
        let hb = Heartbeat {
            source_alias: self.source_alias.clone(),
            target_alias: self.target_alias.clone(),
            timestamp: now_ms(),
        };
        self.writer
            .write(&[(hb.encode_key(), hb.encode_value())])
            .await
            .map_err(|e| e.cluster(self.target_alias.clone()))?;
        if let Some(m) = &self.metrics {
            m.heartbeat_emitted(&self.flow);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
