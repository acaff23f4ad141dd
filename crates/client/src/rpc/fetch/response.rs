//! The Fetch response as a [`FetchResult`]: which topic of the request each response topic
//! answers (by id, by name, or by its place), and the partitions converted.

use kafka_protocol::messages::FetchResponse;
use uuid::Uuid;

use super::{AbortedTxn, Asked, FetchResult, FetchedPartition};

/// Which topic of the request a response topic answers: by id (v13+), named after any topic
/// the session holds with that id (`known`: an incremental request omits the partitions
/// whose position did not change, and Apache Kafka answers them by id alone, without a
/// name), else by name. A
/// topic with neither (Tansu 0.6 answers an unknown topic id with a nil id, no name and
/// UNKNOWN_TOPIC_OR_PARTITION) is the request's topic at the same index when the response
/// answers every topic asked for, in order; otherwise it is left nameless (matched by
/// nobody).
pub(super) fn answered(
    asked: &Asked,
    known: &Asked,
    index: usize,
    count: usize,
    name: &str,
    id: Uuid,
) -> (String, Uuid) {
    if !id.is_nil() {
        let name = match known.iter().find(|(_, i)| *i == id) {
            Some((n, _)) if name.is_empty() => n.clone(),
            _ => name.to_owned(),
        };
        return (name, id);
    }
    if !name.is_empty() {
        return (name.to_owned(), id);
    }
    match asked.get(index) {
        Some(a) if count == asked.len() => a.clone(),
        _ => (String::new(), id),
    }
}

/// The response as [`FetchResult`], each topic named after the request's topic it answers
/// ([`answered`]); `known` holds every topic of the session (the request's, for a
/// sessionless fetch).
pub(super) fn convert(resp: FetchResponse, asked: &Asked, known: &Asked) -> FetchResult {
    let mut partitions = Vec::new();
    let count = resp.responses.len();
    for (i, t) in resp.responses.into_iter().enumerate() {
        let (topic, id) = answered(asked, known, i, count, &t.topic.0, t.topic_id);
        let topic_id = (!id.is_nil()).then_some(id);
        for p in t.partitions {
            let leader = p.current_leader;
            partitions.push(FetchedPartition {
                topic: topic.clone(),
                topic_id,
                partition: p.partition_index,
                error_code: p.error_code,
                high_watermark: p.high_watermark,
                last_stable_offset: p.last_stable_offset,
                log_start_offset: p.log_start_offset,
                aborted_transactions: p
                    .aborted_transactions
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| AbortedTxn {
                        producer_id: a.producer_id.0,
                        first_offset: a.first_offset,
                    })
                    .collect(),
                preferred_read_replica: p.preferred_read_replica.0,
                current_leader: (leader.leader_id.0 >= 0)
                    .then_some((leader.leader_id.0, leader.leader_epoch)),
                records: p.records.unwrap_or_default(),
            });
        }
    }
    FetchResult {
        partitions,
        session_id: resp.session_id,
        throttle_time_ms: resp.throttle_time_ms,
    }
}
