//! The engine's own share of the latency, per flow: how long a Fetch waits for its
//! response, how long a batch takes from the Fetch response that brought it to its
//! target acknowledgement, and the last part of that: from being handed to the producer
//! to the acknowledgement. Both on [`ENGINE_BUCKETS`](super::family::ENGINE_BUCKETS),
//! fine below 50 ms. The data path keeps the handles ([`Metrics::fetch_wait_handle`], and
//! [`super::PartitionMetrics::engine_acked`]): one observation is a few atomic operations.

use prometheus_client::registry::Registry;

use super::Metrics;
use super::catalogue::{FLOW, reg};
use super::family::{Family, Fine, Histogram, HistogramSnapshot};

/// A histogram on the engine's fine buckets.
pub type EngineHistogram = Histogram<Fine>;

/// The engine-timing families.
pub(super) struct EngineFamilies {
    pub(super) latency: Family<EngineHistogram>,
    pub(super) produce: Family<EngineHistogram>,
    fetch_wait: Family<EngineHistogram>,
}

impl EngineFamilies {
    pub(super) fn new(r: &mut Registry) -> Self {
        EngineFamilies {
            latency: reg(
                r,
                "strait_replication_engine_latency_seconds",
                "Fetch response received to target acknowledgement, per batch produced (a merged \
                 batch from its oldest input's response): the engine's own share of the latency.",
                FLOW,
            ),
            produce: reg(
                r,
                "strait_produce_ack_seconds",
                "Batch handed to the producer to its target acknowledgement (the target's round \
                 trip, the producer's queue and its in-flight window): the last part of \
                 strait_replication_engine_latency_seconds.",
                FLOW,
            ),
            fetch_wait: reg(
                r,
                "strait_fetch_wait_seconds",
                "Fetch request sent to its response received, per successful Fetch (with no \
                 data, the broker's wait).",
                FLOW,
            ),
        }
    }
}

impl Metrics {
    /// The flow's `strait_fetch_wait_seconds` series, for a fetcher to keep.
    pub fn fetch_wait_handle(&self, flow: &str) -> EngineHistogram {
        self.inner.engine.fetch_wait.get(&[flow])
    }

    /// The flow's fetch waits so far (e.g. read in-process by `strait bench`).
    pub fn fetch_wait(&self, flow: &str) -> HistogramSnapshot {
        self.fetch_wait_handle(flow).snapshot()
    }

    /// The flow's `strait_replication_engine_latency_seconds` so far.
    pub fn engine_latency(&self, flow: &str) -> HistogramSnapshot {
        self.inner.engine.latency.get(&[flow]).snapshot()
    }

    /// The flow's `strait_produce_ack_seconds` so far.
    pub fn produce_ack(&self, flow: &str) -> HistogramSnapshot {
        self.inner.engine.produce.get(&[flow]).snapshot()
    }
}
