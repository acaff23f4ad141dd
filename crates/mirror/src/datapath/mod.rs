//! The data path (DESIGN.md "Data path for one partition"), one module per concern:
//!
//! | module | concern |
//! |---|---|
//! | [`plan`] | pure: a fetched record set → forward / re-encode / skip steps |
//! | [`recovery`] | pure: which re-fetched records are already on the target after a crash |
//! | [`coalesce`] | pure: the per-partition queue to the producer; merges queued batches when the window is full |
//! | [`budget`] | the in-flight memory budget fetchers wait on, with each partition's account |
//! | [`quota`] | pure: a partition's quota of the budget; the process-wide limit of held bytes |
//! | [`probe`] | partition bounds from the Fetch high watermark (not ListOffsets latest) |
//! | [`fetcher`] | per-broker fetchers with fetch sessions, and the leader [`fetcher::Router`] |
//! | [`partition`] | per-partition pipeline: plan → produce (≤ 5 in flight) → record acks in the map |
//!
//! Fetcher → (bounded channel) → partition sender → coalescing queue → `IdempotentProducer` → partition
//! recorder → offset map. The producer patches forwarded batch headers (producer id, epoch,
//! sequence, CRC) without copying the payload.

pub mod budget;
pub mod coalesce;
pub mod fetcher;
pub mod partition;
pub mod plan;
pub mod probe;
pub mod quota;
pub mod recovery;
pub mod tail;
