//! End-to-end scenarios with the whole engine in-process on two Tansu brokers, checked by
//! librdkafka (a client we did not write) reading both sides: topics discovered while
//! running, consumer groups failing over to the same record, a target topic that cannot be
//! made to match, and MM2 heartbeats.

use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::protocol::messages::join_group_request::JoinGroupRequestProtocol;
use strait_client::protocol::messages::{GroupId, JoinGroupRequest};
use strait_client::protocol::protocol::StrBytes;
use strait_client::{Client, ClientConfig};
use strait_mirror::Engine;
use strait_mirror::config::{Config, load_str};
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions, StartOffset, Transaction};
use strait_testkit::{TansuCluster, TestRecord};

fn config(source: &str, target: &str, extra_flow: &str) -> Config {
    let text = format!(
        r#"{}{extra_flow}
[engine]
fetch_max_wait = "100ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(source, target, "3s")
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

fn records(prefix: &str, n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| {
            TestRecord::new(
                Bytes::from(format!("{prefix}-k{i}")),
                Bytes::from(format!("{prefix}-v{i}")),
            )
        })
        .collect()
}

async fn client(bootstrap: &str) -> Client {
    Client::connect(
        ClientConfig::new([bootstrap.to_owned()])
            .with_request_timeout(Duration::from_secs(3))
            .with_connect_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect")
}

/// The record at `offset` of partition 0, as (key, value).
fn record_at(bootstrap: &str, topic: &str, offset: i64) -> (Option<Bytes>, Option<Bytes>) {
    let got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions {
            from: StartOffset::Offset(offset),
            partitions: Some(vec![0]),
            ..ConsumeOptions::count(1)
        },
    )
    .expect("consume");
    let r = got.first().expect("a record at the committed offset");
    assert_eq!(r.offset, offset, "{topic}: the record at {offset}");
    (r.key.clone(), r.value.clone())
}

fn committed(bootstrap: &str, group: &str, topic: &str) -> Option<i64> {
    rdkafka::list_group_offsets(bootstrap, group)
        .expect("list group offsets")
        .into_iter()
        .find(|o| o.topic == topic && o.partition == 0)
        .map(|o| o.offset)
        .filter(|o| *o >= 0)
}

#[test]
fn a_topic_created_while_running_is_replicated() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "early", 1, &[]).expect("topic");
    rdkafka::produce(&src, "early", &records("e", 10), &ProduceOptions::default()).expect("p");
    let engine = Engine::new(config(
        &src,
        &dst,
        "[flows.intervals]\ntopic_refresh = \"1s\"\ncheckpoint = \"1s\"",
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = runtime.spawn({
        let engine = engine.clone();
        async move {
            engine
                .run(async {
                    let _ = stop_rx.await;
                })
                .await
        }
    });
    // Created after the engine started: only a later topic refresh can find it.
    std::thread::sleep(Duration::from_millis(1500));
    rdkafka::create_topic(&src, "late", 2, &[]).expect("topic");
    let mut late = records("l", 40);
    for (i, r) in late.iter_mut().enumerate() {
        r.partition = Some(i as i32 % 2);
    }
    rdkafka::produce(&src, "late", &late, &ProduceOptions::default()).expect("produce");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while Instant::now() < deadline && got.len() < late.len() {
        got = rdkafka::consume(
            &dst,
            "src.late",
            &ConsumeOptions {
                idle: Duration::from_millis(500),
                max_time: Duration::from_secs(3),
                ..ConsumeOptions::count(late.len())
            },
        )
        .unwrap_or_default();
    }
    let _ = stop_tx.send(());
    let result = runtime.block_on(running).expect("engine task");
    result.expect("the engine stops cleanly");
    assert_eq!(
        got.len(),
        late.len(),
        "every record of the new topic arrived"
    );
    let mut values: Vec<_> = got.iter().filter_map(|r| r.value.clone()).collect();
    values.sort();
    let mut want: Vec<_> = late.iter().filter_map(|r| r.value.clone()).collect();
    want.sort();
    assert_eq!(values, want);
}

#[test]
fn groups_fail_over_to_the_same_record_and_never_move_backwards() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "orders", 1, &[]).expect("topic");
    // Transactions put commit markers on the source: source and target offsets differ.
    for chunk in 0..4 {
        let opts = ProduceOptions {
            transaction: Transaction::Commit,
            transactional_id: Some(format!("tx-{chunk}")),
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, "orders", &records(&format!("c{chunk}"), 25), &opts)
            .expect("produce");
    }
    let g = "g-failover";
    rdkafka::commit_group_offsets(&src, g, "orders", &[(0, 60)]).expect("commit");
    let flow = "[flows.sync]\ngroup_offsets = true\n[flows.topics]\ninclude = [\"orders\"]";
    let runtime = tokio::runtime::Runtime::new().expect("runtime");

    // A group with a live member on the target is left alone.
    rdkafka::commit_group_offsets(&src, "g-active", "orders", &[(0, 30)]).expect("commit");
    let target = runtime.block_on(client(&dst));
    let join = runtime
        .block_on(
            target.join_group(
                JoinGroupRequest::default()
                    .with_group_id(GroupId(StrBytes::from_static_str("g-active")))
                    .with_session_timeout_ms(10_000)
                    .with_rebalance_timeout_ms(3_000)
                    .with_protocol_type(StrBytes::from_static_str("consumer"))
                    .with_protocols(vec![
                        JoinGroupRequestProtocol::default()
                            .with_name(StrBytes::from_static_str("range"))
                            .with_metadata(Bytes::from_static(b"")),
                    ]),
            ),
        )
        .expect("join on the target");

    let summary = runtime
        .block_on(Engine::new(config(&src, &dst, flow)).run_once())
        .expect("run --once");
    assert_eq!(summary.records(), 100, "{summary}");
    let moved = committed(&dst, g, "src.orders").expect("translated offset committed");
    assert_ne!(moved, 60, "markers are not copied, so the offsets differ");
    assert_eq!(
        record_at(&src, "orders", 60),
        record_at(&dst, "src.orders", moved),
        "both committed offsets point at the same record"
    );
    assert_eq!(
        committed(&dst, "g-active", "src.orders"),
        None,
        "an active group on the target is not touched"
    );

    // The group moves back on the source; the target keeps its further position.
    rdkafka::commit_group_offsets(&src, g, "orders", &[(0, 10)]).expect("commit");
    runtime
        .block_on(Engine::new(config(&src, &dst, flow)).run_once())
        .expect("second run");
    assert_eq!(
        committed(&dst, g, "src.orders"),
        Some(moved),
        "target offsets never move backwards"
    );
    let _ = runtime.block_on(target.leave_group("g-active", &[join.member_id.as_str()]));
}

#[test]
fn a_target_topic_that_cannot_be_grown_is_logged_and_counted() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "wide", 3, &[]).expect("topic");
    let mut data = records("w", 30);
    for (i, r) in data.iter_mut().enumerate() {
        r.partition = Some(i as i32 % 3);
    }
    rdkafka::produce(&src, "wide", &data, &ProduceOptions::default()).expect("produce");
    // The target already has the topic with fewer partitions; Tansu has no CreatePartitions,
    // so it cannot be made to match (Tansu accepts every CreateTopics we could send).
    rdkafka::create_topic(&dst, "src.wide", 1, &[]).expect("topic");
    let engine = Engine::new(config(&src, &dst, ""));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = runtime.block_on(engine.run_once());
    let metrics = engine.metrics().render();
    assert!(
        metrics.contains("kind=\"partition_growth_unsupported\"")
            && metrics.contains("strait_topic_sync_failures_total{flow=\"src-to-dst\"} 1"),
        "the failure is counted: {metrics}"
    );
    match outcome {
        // The partition that exists on both sides is replicated, and only it.
        Ok(summary) => {
            let got =
                rdkafka::consume(&dst, "src.wide", &ConsumeOptions::count(10)).expect("consume");
            assert_eq!(got.len(), 10, "{summary}");
            assert!(got.iter().all(|r| r.partition == 0));
        }
        Err(e) => assert!(e.to_string().contains("wide"), "{e}"),
    }
}

#[test]
fn heartbeats_reach_the_target_in_mm2_format() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let engine = Engine::new(config(
        &src,
        &dst,
        "[flows.sync]\nheartbeats = true\n[flows.intervals]\nheartbeat = \"500ms\"",
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let result = runtime
        // Tansu answers the flow's first JoinGroup (its writer group) after half the
        // session, 3 s: heartbeats start after it.
        .block_on(engine.run(async { tokio::time::sleep(Duration::from_millis(6000)).await }));
    result.expect("the engine stops cleanly");
    let got = rdkafka::consume(
        &dst,
        "heartbeats",
        &ConsumeOptions {
            idle: Duration::from_secs(1),
            max_time: Duration::from_secs(5),
            ..ConsumeOptions::count(2)
        },
    )
    .expect("consume heartbeats");
    assert!(got.len() >= 2, "one heartbeat per 500 ms: {got:?}");
    // Key: sourceClusterAlias STRING, targetClusterAlias STRING (INT16 length + UTF-8).
    let key = got[0].key.clone().expect("a key");
    assert_eq!(&key[..], b"\x00\x03src\x00\x03dst");
    // Value: version INT16 (0), timestamp INT64 ms, recent.
    let value = got[0].value.clone().expect("a value");
    assert_eq!(value.len(), 10);
    assert_eq!(&value[..2], &[0, 0]);
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&value[2..]);
    let ts = i64::from_be_bytes(ts);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    assert!((now - ts).abs() < 60_000, "timestamp {ts} vs now {now}");
}
