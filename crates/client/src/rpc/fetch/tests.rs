//! Fetch sessions and topic-id addressing against an in-process fake broker (Tansu does
//! not do sessions), and the pure matching of response topics to the request's.

use super::response::answered;
use super::*;
use crate::client::ClientConfig;
use crate::connection::tests::{answer_api_versions, read_request, write_response};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::net::TcpListener;

/// One Fetch the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    version: i16,
    session: (i32, i32),
    /// (topic name, topic id, partition, offset): at v13+ the name is not encoded (empty),
    /// below it the id is not (nil).
    sent: Vec<(String, Uuid, i32, i64)>,
    /// (topic name, topic id, partition).
    forgotten: Vec<(String, Uuid, i32)>,
}

/// A fake broker advertising Fetch `fetch_range`, answering each Fetch with the next
/// `(error code, session id)` (then `(0, 77)`). Its task ends with what it received.
async fn fake_broker(
    fetch_range: (i16, i16),
    answers: Vec<(i16, i32)>,
) -> (String, tokio::task::JoinHandle<Vec<Seen>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let answers = std::sync::Arc::new(parking_lot::Mutex::new(answers.into_iter()));
    let h = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok(Ok((mut s, _))) =
            tokio::time::timeout(std::time::Duration::from_secs(1), l.accept()).await
        {
            let (seen, answers) = (seen.clone(), answers.clone());
            conns.push(tokio::spawn(async move {
                answer_api_versions(
                    &mut s,
                    &[
                        (ApiKey::Metadata, 0, 12),
                        (ApiKey::Fetch, fetch_range.0, fetch_range.1),
                    ],
                )
                .await;
                while let Some((h, mut body)) = read_request(&mut s).await {
                    let v = h.request_api_version;
                    if h.request_api_key == ApiKey::Metadata as i16 {
                        write_response(&mut s, &h, &metadata(addr.port())).await;
                        continue;
                    }
                    let req = FetchRequest::decode(&mut body, v).unwrap();
                    seen.lock().push(Seen {
                        version: v,
                        session: (req.session_id, req.session_epoch),
                        sent: req
                            .topics
                            .iter()
                            .flat_map(|t| {
                                t.partitions.iter().map(|p| {
                                    (
                                        t.topic.0.to_string(),
                                        t.topic_id,
                                        p.partition,
                                        p.fetch_offset,
                                    )
                                })
                            })
                            .collect(),
                        forgotten: req
                            .forgotten_topics_data
                            .iter()
                            .flat_map(|t| {
                                t.partitions
                                    .iter()
                                    .map(|p| (t.topic.0.to_string(), t.topic_id, *p))
                            })
                            .collect(),
                    });
                    let (code, id) = answers.lock().next().unwrap_or((0, 77));
                    let r = FetchResponse::default()
                        .with_error_code(code)
                        .with_session_id(id);
                    write_response(&mut s, &h, &r).await;
                }
            }));
        }
        for c in conns {
            let _ = c.await;
        }
        std::mem::take(&mut *seen.lock())
    });
    (addr.to_string(), h)
}

/// Broker 1 at `port` leads partitions 0-2 of topic `t`.
fn metadata(port: u16) -> MetadataResponse {
    MetadataResponse::default()
        .with_controller_id(BrokerId(1))
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(port as i32),
        ])
        .with_topics(vec![
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                .with_partitions(
                    (0..3)
                        .map(|p| {
                            MetadataResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_id(BrokerId(1))
                        })
                        .collect(),
                ),
        ])
}

async fn connect(addr: String) -> Client {
    crate::client::Client::connect(ClientConfig::new([addr]))
        .await
        .unwrap()
}

const A: Uuid = Uuid::from_bytes([0xa; 16]);
const B: Uuid = Uuid::from_bytes([0xb; 16]);

/// Sent by name (below v13).
fn named(p: i32, o: i64) -> (String, Uuid, i32, i64) {
    ("t".to_string(), Uuid::nil(), p, o)
}

/// Sent by id (v13+).
fn by(id: Uuid, p: i32, o: i64) -> (String, Uuid, i32, i64) {
    (String::new(), id, p, o)
}

#[tokio::test]
async fn incremental_fetches_send_only_changes_and_fall_back_on_session_errors() {
    let (addr, fake) =
        fake_broker((4, 12), vec![(0, 77), (0, 77), (0, 77), (70, 0), (0, 78)]).await;
    let c = connect(addr).await;
    let mut s = c.fetch_session(1);
    let opts = FetchOptions::default();
    let a = FetchPosition::new("t", 0, 10);
    let b = FetchPosition::new("t", 1, 20);
    let c2 = FetchPosition::new("t", 2, 30);
    // 1: full fetch creating a session.
    s.fetch(&[a.clone(), b.clone()], &opts).await.unwrap();
    assert_eq!(s.session_id(), 77);
    // 2: only partition 0 moved.
    let a2 = FetchPosition::new("t", 0, 15);
    s.fetch(&[a2.clone(), b.clone()], &opts).await.unwrap();
    // 3: partition 1 dropped, partition 2 added.
    s.fetch(&[a2.clone(), c2.clone()], &opts).await.unwrap();
    // 4: FETCH_SESSION_ID_NOT_FOUND → 5: a full fetch, new session.
    s.fetch(&[a2.clone(), c2.clone()], &opts).await.unwrap();
    assert_eq!(s.session_id(), 78);
    drop(s);
    drop(c);
    let seen = fake.await.unwrap();
    let got = |i: usize| {
        (
            seen[i].session,
            seen[i].sent.clone(),
            seen[i].forgotten.clone(),
        )
    };
    assert_eq!(got(0), ((0, 0), vec![named(0, 10), named(1, 20)], vec![]));
    assert_eq!(got(1), ((77, 1), vec![named(0, 15)], vec![]));
    assert_eq!(
        got(2),
        (
            (77, 2),
            vec![named(2, 30)],
            vec![("t".to_string(), Uuid::nil(), 1)]
        )
    );
    assert_eq!(got(3), ((77, 3), vec![], vec![]));
    assert_eq!(got(4), ((0, 0), vec![named(0, 15), named(2, 30)], vec![]));
}

#[tokio::test]
async fn a_fetch_goes_by_topic_id_at_v13_only_when_every_position_has_one() {
    let (addr, fake) = fake_broker((4, 13), vec![]).await;
    let c = connect(addr).await;
    let opts = FetchOptions::default();
    let with_id = FetchPosition::new("t", 0, 10).with_topic_id(A);
    let without = FetchPosition::new("t", 1, 20);
    c.fetch(1, std::slice::from_ref(&with_id), &opts)
        .await
        .unwrap();
    c.fetch(1, std::slice::from_ref(&without), &opts)
        .await
        .unwrap();
    c.fetch(1, &[with_id.clone(), without.clone()], &opts)
        .await
        .unwrap();
    // A nil id is no id.
    c.fetch(
        1,
        &[FetchPosition::new("t", 2, 5).with_topic_id(Uuid::nil())],
        &opts,
    )
    .await
    .unwrap();
    drop(c);
    let seen = fake.await.unwrap();
    let got: Vec<_> = seen.iter().map(|s| (s.version, s.sent.clone())).collect();
    assert_eq!(
        got,
        vec![
            (13, vec![by(A, 0, 10)]),
            (12, vec![named(1, 20)]),
            (12, vec![named(0, 10), named(1, 20)]),
            (12, vec![named(2, 5)]),
        ]
    );
}

#[tokio::test]
async fn a_broker_below_v13_is_asked_by_name_even_with_topic_ids() {
    let (addr, fake) = fake_broker((4, 12), vec![]).await;
    let c = connect(addr).await;
    let pos = FetchPosition::new("t", 0, 10).with_topic_id(A);
    c.fetch(1, &[pos], &FetchOptions::default()).await.unwrap();
    drop(c);
    let seen = fake.await.unwrap();
    assert_eq!(
        (seen[0].version, seen[0].sent.clone()),
        (12, vec![named(0, 10)])
    );
}

#[tokio::test]
async fn a_broker_that_only_takes_topic_ids_refuses_a_fetch_without_them_clearly() {
    let (addr, fake) = fake_broker((13, 13), vec![]).await;
    let c = connect(addr).await;
    let e = c
        .fetch(
            1,
            &[FetchPosition::new("t", 0, 0)],
            &FetchOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(e.is_unsupported(), "{e}");
    assert!(e.to_string().contains("v12"), "{e}");
    drop(c);
    assert!(fake.await.unwrap().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_session_starts_over_when_a_topic_id_changes_or_ids_come_and_go() {
    let (addr, fake) =
        fake_broker((4, 13), vec![(0, 77), (0, 77), (0, 78), (0, 79), (106, 0)]).await;
    let c = connect(addr).await;
    let mut s = c.fetch_session(1);
    let opts = FetchOptions::default();
    let p0 = FetchPosition::new("t", 0, 10).with_topic_id(A);
    let p1 = FetchPosition::new("t", 1, 20).with_topic_id(A);
    // 1: full, by id. 2: partition 1 forgotten, by id.
    s.fetch(&[p0.clone(), p1.clone()], &opts).await.unwrap();
    s.fetch(std::slice::from_ref(&p0), &opts).await.unwrap();
    // 3: the topic was re-created (id B): a full fetch, not an incremental one that would
    // leave the old id in the broker's session.
    let p0b = FetchPosition::new("t", 0, 0).with_topic_id(B);
    s.fetch(std::slice::from_ref(&p0b), &opts).await.unwrap();
    assert_eq!(s.session_id(), 78);
    // 4: no ids any more: a full fetch by name.
    let named0 = FetchPosition::new("t", 0, 0);
    s.fetch(std::slice::from_ref(&named0), &opts).await.unwrap();
    assert_eq!(s.session_id(), 79);
    // 5: FETCH_SESSION_TOPIC_ID_ERROR → 6: a full fetch, new session.
    s.fetch(std::slice::from_ref(&p0b), &opts).await.unwrap();
    drop(s);
    drop(c);
    let seen = fake.await.unwrap();
    let got: Vec<_> = seen
        .iter()
        .map(|s| (s.version, s.session, s.sent.clone(), s.forgotten.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (13, (0, 0), vec![by(A, 0, 10), by(A, 1, 20)], vec![]),
            (13, (77, 1), vec![], vec![(String::new(), A, 1)]),
            (13, (0, 0), vec![by(B, 0, 0)], vec![]),
            (12, (0, 0), vec![named(0, 0)], vec![]),
            (13, (0, 0), vec![by(B, 0, 0)], vec![]),
            (13, (0, 0), vec![by(B, 0, 0)], vec![]),
        ]
    );
}

fn asked() -> Asked {
    vec![("a".to_string(), A), ("b".to_string(), B)]
}

#[test]
fn a_topic_answered_by_id_gets_the_name_asked_for_with_that_id() {
    assert_eq!(
        answered(&asked(), &asked(), 0, 2, "", B),
        ("b".to_string(), B)
    );
    assert_eq!(
        answered(&asked(), &asked(), 0, 2, "", Uuid::from_bytes([1; 16])),
        (String::new(), Uuid::from_bytes([1; 16])),
        "an id nobody asked for matches nobody"
    );
    let by_name = vec![("a".to_string(), Uuid::nil())];
    assert_eq!(
        answered(&by_name, &by_name, 0, 1, "a", Uuid::nil()),
        ("a".to_string(), Uuid::nil())
    );
}

#[test]
fn an_incremental_answer_by_id_is_named_after_the_session_s_topic_the_request_omitted() {
    // Apache Kafka: the position did not change, so the request carried no topic, and the
    // answer (new data) names the topic by id alone.
    let request = Asked::new();
    assert_eq!(
        answered(&request, &asked(), 0, 1, "", A),
        ("a".to_string(), A)
    );
}

#[test]
fn a_topic_answered_with_neither_id_nor_name_is_the_request_topic_at_its_index() {
    // Tansu 0.6's answer to an unknown topic id: nil id, no name, in request order.
    assert_eq!(
        answered(&asked(), &asked(), 1, 2, "", Uuid::nil()),
        ("b".to_string(), B)
    );
    // Not every topic answered: the order proves nothing.
    assert_eq!(
        answered(&asked(), &asked(), 0, 1, "", Uuid::nil()),
        (String::new(), Uuid::nil())
    );
    let part = |code| vec![PartitionData::default().with_error_code(code)];
    let resp = FetchResponse::default().with_responses(vec![
        FetchableTopicResponse::default()
            .with_topic_id(A)
            .with_partitions(part(0)),
        FetchableTopicResponse::default().with_partitions(part(3)),
    ]);
    let got: Vec<_> = convert(resp, &asked(), &asked())
        .partitions
        .into_iter()
        .map(|p| (p.topic, p.topic_id, p.error_code))
        .collect();
    assert_eq!(
        got,
        vec![("a".to_string(), Some(A), 0), ("b".to_string(), Some(B), 3)]
    );
}

#[test]
fn only_the_topic_id_errors_say_the_topic_id_is_unknown() {
    let mut p = FetchedPartition {
        topic: "t".into(),
        topic_id: Some(A),
        partition: 0,
        error_code: 100,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        aborted_transactions: Vec::new(),
        preferred_read_replica: -1,
        current_leader: None,
        records: Bytes::new(),
    };
    assert!(p.topic_id_unknown());
    assert_eq!(
        p.error().and_then(|e| e.kafka_error()),
        Some(kafka_protocol::ResponseError::UnknownTopicId)
    );
    p.error_code = 110;
    assert!(p.topic_id_unknown());
    for code in [0, 3, 6] {
        p.error_code = code;
        assert!(!p.topic_id_unknown(), "code {code}");
    }
}
