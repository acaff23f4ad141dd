//! Reading and writing the state topic: the topic itself and its readers here; what the
//! records read add up to in `store/fold.rs`, the writer in `store/writer.rs`.

mod fold;
mod writer;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strait_client::{Client, ConsumedRecord, NewTopic};

use self::fold::Fold;
pub use self::writer::StateWriter;
use super::codec::key_kind;
use super::replay::{REPLAY_KEY_KIND, decode_replay_key, decode_replay_value};
use super::{SavedReplays, SavedState};
use crate::config::Flow;
use crate::error::MirrorError;
use crate::topics::internal::{Committed, TopicTail, read_to_end};

/// Kafka's TOPIC_ALREADY_EXISTS.
const TOPIC_ALREADY_EXISTS: i16 = 36;
const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The state topic's configs: compacted, with segments small and rolled often enough for
/// the cleaner to keep the log near one record per key. The cleaner never touches the
/// active segment, so with Kafka's defaults (1 GiB segments rolled weekly) an
/// exactly-once flow's deltas (one per partition per commit) would pile up for days, and
/// every start and exactly-once slot takeover reads them all (scale-out takeovers and
/// group-sync ticks read on from their last place: [`StateTail`]).
pub const STATE_TOPIC_CONFIGS: [(&str, &str); 4] = [
    ("cleanup.policy", "compact"),
    ("segment.bytes", "16777216"),
    ("segment.ms", "600000"),
    ("min.cleanable.dirty.ratio", "0.1"),
];

/// Creates the flow's state topic on `target` if it is missing: 1 partition,
/// [`STATE_TOPIC_CONFIGS`]. An existing topic keeps its configs.
pub async fn ensure_state_topic(target: &Client, flow: &Flow) -> Result<(), MirrorError> {
    let err = |what: &str, e| {
        MirrorError::kafka(format!("state topic {}: {what}", flow.state_topic), e)
            .flow(&flow.name)
            .cluster(&flow.target)
    };
    let meta = target
        .metadata(Some(&[flow.state_topic.as_str()]))
        .await
        .map_err(|e| err("metadata", e))?;
    if meta.topics.contains_key(&flow.state_topic) {
        return Ok(());
    }
    let mut topic = NewTopic::new(&flow.state_topic, 1);
    for (key, value) in STATE_TOPIC_CONFIGS {
        topic = topic.with_config(key, value);
    }
    if let Some(rf) = flow.replication_factor {
        topic = topic.with_replication_factor(rf);
    }
    let results = target
        .create_topics(&[topic], ADMIN_TIMEOUT)
        .await
        .map_err(|e| err("create", e))?;
    for (_, r) in results {
        match r {
            Ok(()) => {
                tracing::info!(flow = %flow.name, topic = %flow.state_topic, "created the state topic")
            }
            Err(e) if e.kafka_code() == Some(TOPIC_ALREADY_EXISTS) => {}
            Err(e) => return Err(err("create", e)),
        }
    }
    Ok(())
}

/// Reads the flow's state topic to its end; the last committed value per key wins. A
/// missing topic is an empty state. Only committed state counts: records written in a
/// transaction (exactly-once) are taken once its COMMIT marker is read, never after an
/// ABORT, whatever the broker's aborted list says (Tansu sends none), and never held
/// behind another writer's open transaction. Replay records ([`super::replay`]),
/// member reports ([`super::members`]) and created-ACL records ([`super::acls`]) are left out: they never change the flow's
/// maps.
pub async fn read_state(target: &Client, flow: &Flow) -> Result<SavedState, MirrorError> {
    read_state_and_deltas(target, flow).await.map(|(s, _)| s)
}

/// Per partition, the sequence numbers of the delta records on the state topic (not yet
/// tombstoned), oldest first.
pub type DeltaSeqs = BTreeMap<(String, i32), Vec<u64>>;

/// [`read_state`], also returning the delta records it folded into the snapshots (an
/// exactly-once flow tombstones them with its next snapshot of the partition).
pub async fn read_state_and_deltas(
    target: &Client,
    flow: &Flow,
) -> Result<(SavedState, DeltaSeqs), MirrorError> {
    StateTail::new(flow).read(target, flow).await
}

/// The flow's state kept current by reading only what the state topic gained since the
/// last read (for the readers that read it again and again: scale-out's partition
/// takeovers, group sync's ticks). The first read is a whole one, as is every read after
/// a failed one, or after the topic was re-created or its log start moved past the place
/// reached (the fold starts over then). Each read gives what [`read_state_and_deltas`]
/// would give at that moment.
#[derive(Debug)]
pub struct StateTail {
    tail: TopicTail,
    /// The topic id the fold was read from (nil: the broker reports none).
    topic_id: uuid::Uuid,
    fold: Fold,
    /// Records taken from the topic so far, every read together.
    records_read: u64,
}

impl StateTail {
    /// A reader of `flow`'s state topic that has read nothing yet.
    pub fn new(flow: &Flow) -> Self {
        StateTail {
            tail: TopicTail::new(&flow.state_topic, 0, ORDER),
            topic_id: uuid::Uuid::nil(),
            fold: Fold::default(),
            records_read: 0,
        }
    }

    /// Records taken from the state topic so far, over every read (each record of the
    /// topic once, unless a read started over from the log start).
    pub fn records_read(&self) -> u64 {
        self.records_read
    }

    /// Reads what the state topic gained since the last read (all of it the first time)
    /// and returns the state as it now stands, deltas folded into the snapshots, with the
    /// deltas' sequence numbers. A missing topic is an empty state.
    pub async fn read(
        &mut self,
        target: &Client,
        flow: &Flow,
    ) -> Result<(SavedState, DeltaSeqs), MirrorError> {
        let kafka = kafka_error(flow);
        let Some(id) = state_topic(target, flow).await? else {
            self.tail.restart();
            self.fold = Fold::default();
            return Ok((SavedState::new(), DeltaSeqs::new()));
        };
        if id != self.topic_id {
            // Re-created (a broker that came back empty): the place reached means nothing.
            self.tail.restart();
            self.topic_id = id;
        }
        // A read from the log start starts the fold over, before its first record.
        let restarted = AtomicBool::new(false);
        let mut taken = 0;
        let fold = &mut self.fold;
        let read = self
            .tail
            .read_to_end(
                target,
                kafka,
                || restarted.store(true, Ordering::Relaxed),
                |r| {
                    taken += 1;
                    if restarted.swap(false, Ordering::Relaxed) {
                        *fold = Fold::default();
                    }
                    state_record(&r, flow, &mut |key, value, meta| {
                        fold.apply(key, value, meta)
                    })
                },
            )
            .await;
        self.records_read += taken;
        if read.is_err() || restarted.load(Ordering::Relaxed) {
            self.fold = Fold::default();
        }
        read?;
        self.fold.result(flow)
    }
}

/// Reads the replay records of the flow's state topic to its end (the last value per key
/// wins); the flow's own partition records are left out.
pub async fn read_replays(target: &Client, flow: &Flow) -> Result<SavedReplays, MirrorError> {
    let mut saved = SavedReplays::new();
    read_records(target, flow, |key, value, _| {
        if key_kind(key) != Some(REPLAY_KEY_KIND) {
            return Ok(());
        }
        let key = decode_replay_key(key).map_err(|e| format!("replay key: {e}"))?;
        match value {
            None => {
                saved.remove(&key);
            }
            Some(v) => {
                let value = decode_replay_value(v).map_err(|e| format!("replay value: {e}"))?;
                saved.insert(key, value);
            }
        }
        Ok(())
    })
    .await
    .map(|()| saved)
}

/// What a state record carries besides its key and value.
#[derive(Debug, Clone, Copy)]
pub(super) struct RecordMeta {
    /// Its generation stamp ([`super::stamp`]), if any.
    pub generation: Option<i32>,
    /// Its CreateTime.
    pub timestamp: i64,
}

/// Reads the flow's state topic from its log start to its end (the Fetch high watermark),
/// handing every committed record's key and value (`None`: a tombstone) to `each` in the
/// order they became committed (offset order within one writer; a record of a
/// transaction when its COMMIT marker is read, so one slot's open transaction never hides
/// another slot's newer state).
/// A record without a key, or one `each` cannot decode, is an error naming its offset.
pub(super) async fn read_records(
    target: &Client,
    flow: &Flow,
    mut each: impl FnMut(&[u8], Option<&[u8]>, RecordMeta) -> Result<(), String>,
) -> Result<(), MirrorError> {
    if state_topic(target, flow).await?.is_none() {
        return Ok(());
    }
    read_to_end(
        target,
        &flow.state_topic,
        0,
        ORDER,
        kafka_error(flow),
        |r| state_record(&r, flow, &mut each),
    )
    .await
}

/// A failed request on the flow's state topic (`what`: "metadata", "read", …), with the
/// flow and the target cluster.
fn kafka_error(flow: &Flow) -> impl Fn(&str, strait_client::Error) -> MirrorError + '_ {
    move |what, e| {
        MirrorError::kafka(format!("state topic {}: {what}", flow.state_topic), e)
            .flow(&flow.name)
            .cluster(&flow.target)
    }
}

/// The id of the flow's state topic on the target (`None`: the topic is missing; nil: the
/// broker reports no ids).
async fn state_topic(target: &Client, flow: &Flow) -> Result<Option<uuid::Uuid>, MirrorError> {
    let meta = target
        .metadata(Some(&[flow.state_topic.as_str()]))
        .await
        .map_err(|e| kafka_error(flow)("metadata", e))?;
    Ok(meta.topics.get(&flow.state_topic).map(|t| t.id))
}

/// Each exactly-once slot commits the states of its own partitions under its own
/// transactional id: another slot's open transaction must not hide them.
const ORDER: Committed = Committed::InCommitOrder;

/// Hands one record of the state topic to `each` with its stamp; a record without a key,
/// or one `each` cannot decode, is an error naming its offset.
fn state_record(
    r: &ConsumedRecord,
    flow: &Flow,
    each: &mut impl FnMut(&[u8], Option<&[u8]>, RecordMeta) -> Result<(), String>,
) -> Result<(), MirrorError> {
    let bad = |what: String| {
        MirrorError::state(format!(
            "record at offset {} of {}: {what}",
            r.offset, flow.state_topic
        ))
        .flow(&flow.name)
        .cluster(&flow.target)
    };
    let Some(key) = &r.key else {
        return Err(bad("no key".to_owned()));
    };
    let meta = RecordMeta {
        generation: super::stamp::generation_of(
            r.headers.iter().map(|(k, v)| (&k[..], v.as_deref())),
        ),
        timestamp: r.timestamp,
    };
    each(key, r.value.as_deref(), meta).map_err(bad)
}
