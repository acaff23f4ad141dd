//! The data path (DESIGN.md "Data path for one partition"), one module per concern:
//!
//! | module | concern |
//! |---|---|
//! | [`plan`] | pure: a fetched record set → forward / re-encode / skip steps (`plan/release.rs`: a released batch → its steps; `plan/spill.rs`: dropping held batches, reading ahead for their markers, the rewind) |
//! | [`recovery`] | pure: which re-fetched records are already on the target after a crash (`recovery/state.rs`: a step decided against the tail read so far; `recovery/live.rs`: the live check of an acknowledgement past the map) |
//! | [`coalesce`] | pure: the per-partition queue to the producer; merges queued batches when the window is full |
//! | [`budget`] | the in-flight memory budget fetchers wait on, with each partition's account (`budget/held.rs`: bytes held for open transactions, their limit and each partition's share; `budget/reservation.rs`: a reservation's bytes taken, merged, returned, and a response's residue) |
//! | [`quota`] | pure: a partition's quota of the budget; the process-wide limit of held bytes |
//! | [`probe`] | partition bounds from the Fetch high watermark (not ListOffsets latest) |
//! | [`range`] | a partition's records read range after range, for checks that compare logs |
//! | [`fetcher`] | the leader [`fetcher::Router`] and the per-broker fetchers with fetch sessions (`fetcher/broker.rs`: one broker's fetch loop; `fetcher/broker/deliver.rs`: one partition of a response handed on) |
//! | [`inbox`] | a partition's bounded queue from its fetcher, and its stop signal |
//! | [`topic_id`] | pure: whether a feed's source topic is still the topic of its id (a re-created topic is never read at the old position) |
//! | [`stability`] | whether a source broker's last stable offset can decide transactions |
//! | [`pipeline`] | pure: the per-partition state machine composing plan, recovery and coalesce, and the map update rules (`pipeline/feed.rs`: a fetched record set planned, each step through recovery into the queue, out of range and re-creation; `pipeline/produce.rs`: batches handed on, acknowledgements, recording into the map; the model test `pipeline/model.rs` is driven in `pipeline/model/world.rs` and checked in `pipeline/model/rules.rs`) |
//! | [`sink`] | the flow's producer: idempotent (at-least-once) or transactional (exactly-once) |
//! | [`commit`] | exactly-once: the barrier between the drivers and the committer that ends each transaction |
//! | [`partition`] | drives the pipeline: fetcher feed, producer (≤ 5 in flight), acknowledgements, the offset map (`partition/act.rs`: what it does for each of the pipeline's actions; `partition/drive.rs`: the driver's loop and what wakes it; `partition/hand_on.rs`: batches handed to the producer; `partition/held_bytes.rs`: the held-bytes check after each plan) |
//!
//! Fetcher → (inbox) → partition driver → [`pipeline::Pipeline`] (plan → recovery →
//! coalescing queue) → `IdempotentProducer` → acknowledgements in order → offset map. The producer patches forwarded batch headers (producer id, epoch,
//! sequence, CRC) without copying the payload.

pub mod budget;
pub mod coalesce;
pub mod commit;
pub mod fetcher;
pub mod inbox;
pub mod partition;
pub mod pipeline;
pub mod plan;
pub mod probe;
pub mod quota;
pub mod range;
pub mod recovery;
pub mod sink;
pub mod stability;
pub mod tail;
pub mod topic_id;
