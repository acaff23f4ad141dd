//! The Fetch request: positions grouped into topics (by id at v13+, by name below),
//! the forgotten partitions of an incremental fetch, and the request around them.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{FIRST_BY_ID, FetchOptions, FetchPosition};

pub(super) fn group_by_topic<'a>(
    positions: impl Iterator<Item = &'a FetchPosition>,
    version: i16,
) -> Vec<FetchTopic> {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for p in positions {
        let part = FetchPartition::default()
            .with_partition(p.partition)
            .with_current_leader_epoch(if version >= 9 {
                p.current_leader_epoch
            } else {
                -1
            })
            .with_fetch_offset(p.offset)
            .with_last_fetched_epoch(-1)
            .with_log_start_offset(-1)
            .with_partition_max_bytes(p.max_bytes);
        // At v13+ only the id is encoded; below it only the name.
        let id = match p.topic_id {
            Some(id) if version >= FIRST_BY_ID => id,
            _ => Uuid::nil(),
        };
        match topics
            .iter_mut()
            .find(|t| *t.topic.0 == *p.topic && t.topic_id == id)
        {
            Some(t) => t.partitions.push(part),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(p.topic.clone())))
                    .with_topic_id(id)
                    .with_partitions(vec![part]),
            ),
        }
    }
    topics
}

/// The forgotten partitions of an incremental fetch, grouped by topic (by id at v13+).
pub(super) fn forgotten_topics(forgotten: &[FetchPosition], version: i16) -> Vec<ForgottenTopic> {
    let mut ft: Vec<ForgottenTopic> = Vec::new();
    for p in forgotten {
        let id = match p.topic_id {
            Some(id) if version >= FIRST_BY_ID => id,
            _ => Uuid::nil(),
        };
        match ft
            .iter_mut()
            .find(|f| *f.topic.0 == *p.topic && f.topic_id == id)
        {
            Some(f) => f.partitions.push(p.partition),
            None => ft.push(
                ForgottenTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(p.topic.clone())))
                    .with_topic_id(id)
                    .with_partitions(vec![p.partition]),
            ),
        }
    }
    ft
}

pub(super) fn build_request(
    version: i16,
    opts: &FetchOptions,
    session: (i32, i32),
    topics: Vec<FetchTopic>,
    forgotten: Vec<ForgottenTopic>,
) -> FetchRequest {
    let mut r = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(i32::try_from(opts.max_wait.as_millis()).unwrap_or(i32::MAX))
        .with_min_bytes(opts.min_bytes)
        .with_max_bytes(opts.max_bytes)
        .with_isolation_level(opts.isolation.code())
        .with_topics(topics);
    if version >= 7 {
        r.session_id = session.0;
        r.session_epoch = session.1;
        r.forgotten_topics_data = forgotten;
    }
    r
}
