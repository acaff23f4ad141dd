//! Heartbeats against a real Tansu broker: MM2's format on a compacted `heartbeats` topic,
//! and nothing at all when the flow turns them off.

mod control;

use std::time::{SystemTime, UNIX_EPOCH};

use control::{Pair, read_all};
use strait_client::ResourceType;
use strait_mirror::Metrics;
use strait_mirror::heartbeat::{Heartbeat, Heartbeats};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

#[tokio::test]
async fn heartbeats_are_mm2_records_on_a_compacted_topic() {
    let pair = Pair::start().await;
    let flow = pair.flow("[flows.sync]\nheartbeats = true");
    let metrics = Metrics::new();
    let mut hb = Heartbeats::new(&flow, pair.target.clone()).with_metrics(metrics.clone());
    let before = now_ms();
    hb.emit().await.expect("emit");
    hb.emit().await.expect("emit again");
    let after = now_ms();

    let records = read_all(&pair.target, "heartbeats", 0).await;
    assert_eq!(records.len(), 2);
    for r in &records {
        let key = r.key.as_deref().expect("key");
        let value = r.value.as_deref().expect("value");
        // Heartbeat.java: STRING source alias, STRING target alias; INT16 version 0, INT64 ms.
        assert_eq!(key, b"\x00\x06source\x00\x06target");
        assert_eq!(&value[..2], b"\x00\x00");
        let h = Heartbeat::decode(key, value).expect("decodes");
        assert_eq!(
            (h.source_alias.as_str(), h.target_alias.as_str()),
            ("source", "target")
        );
        assert!((before..=after).contains(&h.timestamp), "{h:?}");
        assert_eq!(&value[2..], h.timestamp.to_be_bytes());
    }
    let cfg = pair
        .target
        .describe_configs(ResourceType::Topic, &["heartbeats"], None)
        .await
        .expect("describe");
    assert!(
        cfg[0]
            .entries
            .iter()
            .any(|e| e.name == "cleanup.policy" && e.value.as_deref() == Some("compact")),
        "{cfg:?}"
    );
    let meta = pair.target.metadata(None).await.expect("metadata");
    assert_eq!(meta.topics["heartbeats"].partitions.len(), 1);
    assert!(
        metrics
            .render()
            .contains("strait_heartbeats_emitted_total{flow=\"source-to-target\"} 2")
    );
}

#[tokio::test]
async fn disabled_heartbeats_write_nothing() {
    let pair = Pair::start().await;
    let flow = pair.flow("[flows.sync]\nheartbeats = false");
    let mut hb = Heartbeats::new(&flow, pair.target.clone());
    hb.emit().await.expect("emit is a no-op");
    let meta = pair.target.metadata(None).await.expect("metadata");
    assert!(
        !meta.topics.contains_key("heartbeats"),
        "topic not even created"
    );
}
