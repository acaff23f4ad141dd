//! Fetch by topic id (KIP-516, Fetch v13) against a real Tansu broker: a topic deleted and
//! re-created under the same name is never read through the old topic's id.

mod common;

use std::time::Duration;

use common::*;
use strait_client::protocol::messages::ApiKey;
use strait_client::*;
use strait_records::{Limits, split};
use uuid::Uuid;

fn opts() -> FetchOptions {
    FetchOptions {
        max_wait: Duration::from_millis(100),
        ..FetchOptions::default()
    }
}

/// Records in a fetched partition.
fn count(p: &FetchedPartition) -> usize {
    split(p.records.clone(), &Limits::default())
        .unwrap()
        .batches
        .iter()
        .map(|b| b.header().records_count as usize)
        .sum()
}

/// Tansu answers a topic id it does not know with UNKNOWN_TOPIC_OR_PARTITION (Kafka:
/// UNKNOWN_TOPIC_ID), and with a nil topic id and no name (the client matches it to the
/// request's topic by order).
fn refused(p: &FetchedPartition) -> bool {
    p.topic_id_unknown() || p.error_code == 3
}

#[tokio::test]
async fn a_fetch_by_topic_id_never_reads_a_recreated_topic_through_the_old_id() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "tid", 1).await;
    c.produce("tid", 0, raw(10), Acks::All).await.unwrap();
    let old = c.metadata(Some(&["tid"])).await.unwrap().topics["tid"].id;
    let leader = c.leader_for("tid", 0).await.unwrap().0;
    assert_eq!(
        c.api_version(leader, ApiKey::Fetch).await.unwrap(),
        13,
        "Tansu supports Fetch v13, so ids are used"
    );

    let at = |id: Uuid, offset| FetchPosition::new("tid", 0, offset).with_topic_id(id);
    let r = c.fetch(leader, &[at(old, 0)], &opts()).await.unwrap();
    let p = &r.partitions[0];
    assert_eq!(
        (p.topic.as_str(), p.topic_id, p.error_code),
        ("tid", Some(old), 0)
    );
    assert_eq!(count(p), 10);

    c.delete_topics(&["tid"], Duration::from_secs(5))
        .await
        .unwrap();
    create(&c, "tid", 1).await;
    for _ in 0..2 {
        c.produce("tid", 0, raw(10), Acks::All).await.unwrap();
    }
    let new = c.metadata(Some(&["tid"])).await.unwrap().topics["tid"].id;
    assert_ne!(old, new, "a re-created topic has a new id");

    // Through the old id: refused, no records, at the position of the old topic's end
    // and from the start alike.
    for offset in [0, 10] {
        let r = c.fetch(leader, &[at(old, offset)], &opts()).await.unwrap();
        let p = &r.partitions[0];
        assert!(refused(p), "offset {offset}: code {}", p.error_code);
        assert_eq!((p.topic.as_str(), p.topic_id), ("tid", Some(old)));
        assert!(p.records.is_empty());
    }
    // The new id reads the new topic; both in one request are told apart.
    let r = c
        .fetch(leader, &[at(old, 10), at(new, 0)], &opts())
        .await
        .unwrap();
    let by_id: Vec<_> = r
        .partitions
        .iter()
        .map(|p| (p.topic_id, refused(p), count(p)))
        .collect();
    assert_eq!(by_id, vec![(Some(old), true, 0), (Some(new), false, 20)]);

    // By name (no id given: the request goes at v12) the new topic is read at the old
    // topic's position: what fetching by id prevents.
    let r = c
        .fetch(leader, &[FetchPosition::new("tid", 0, 10)], &opts())
        .await
        .unwrap();
    let p = &r.partitions[0];
    assert_eq!((p.topic_id, p.error_code, count(p)), (None, 0, 10));
}

#[tokio::test]
async fn a_fetch_session_by_topic_id_is_refused_the_old_id_too() {
    // Tansu declines sessions (id 0), so each session fetch is a full one: this checks
    // the session path end to end, not incremental fetching.
    let b = broker();
    let c = client(&b).await;
    create(&c, "tids", 2).await;
    for p in 0..2 {
        c.produce("tids", p, raw(5), Acks::All).await.unwrap();
    }
    let old = c.metadata(Some(&["tids"])).await.unwrap().topics["tids"].id;
    let leader = c.leader_for("tids", 0).await.unwrap().0;
    let mut s = c.fetch_session(leader);
    let wanted: Vec<_> = (0..2)
        .map(|p| FetchPosition::new("tids", p, 0).with_topic_id(old))
        .collect();
    let r = s.fetch(&wanted, &opts()).await.unwrap();
    assert_eq!(r.partitions.iter().map(count).sum::<usize>(), 10);
    c.delete_topics(&["tids"], Duration::from_secs(5))
        .await
        .unwrap();
    create(&c, "tids", 2).await;
    for p in 0..2 {
        c.produce("tids", p, raw(8), Acks::All).await.unwrap();
    }
    let wanted: Vec<_> = (0..2)
        .map(|p| FetchPosition::new("tids", p, 5).with_topic_id(old))
        .collect();
    let r = s.fetch(&wanted, &opts()).await.unwrap();
    let got: Vec<_> = r
        .partitions
        .iter()
        .map(|p| (p.topic.as_str(), p.partition, refused(p), p.records.len()))
        .collect();
    assert_eq!(got, vec![("tids", 0, true, 0), ("tids", 1, true, 0)]);
}
