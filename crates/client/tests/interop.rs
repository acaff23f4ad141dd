//! Cross-client checks with librdkafka (Python confluent-kafka via strait-testkit).

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use strait_client::*;
use strait_records::Compression;
use strait_testkit::rdkafka::{self, Codec, ConsumeOptions, ProduceOptions};
use strait_testkit::{RecordHeader, TestRecord};

fn records(n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| TestRecord {
            partition: Some(0),
            key: Some(Bytes::from(format!("key-{i}"))),
            value: if i % 17 == 5 {
                None
            } else {
                Some(Bytes::from(format!("value-{i}-é")))
            },
            headers: vec![
                RecordHeader::new("a", format!("{i}")),
                RecordHeader::null("null"),
                RecordHeader::new("a", Bytes::from_static(&[0, 255, 1])),
            ],
            timestamp: Some(1_700_000_000_000 + i as i64 * 3),
        })
        .collect()
}

#[tokio::test]
async fn strait_produces_librdkafka_reads_identically() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "to-rd", 1).await;
    let want = records(250);
    let p = RecordProducer::new(c.clone(), Compression::Lz4)
        .await
        .unwrap()
        .with_max_batch_bytes(4000);
    let recs: Vec<ProducerRecord> = want
        .iter()
        .map(|r| ProducerRecord {
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            timestamp: r.timestamp,
        })
        .collect();
    for a in p.send("to-rd", 0, &recs).await.unwrap() {
        a.wait().await.unwrap();
    }
    let bootstrap = b.bootstrap();
    let got = tokio::task::spawn_blocking(move || {
        rdkafka::consume(&bootstrap, "to-rd", &ConsumeOptions::count(250))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(got.len(), 250);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(&g.to_test_record(), w);
    }
}

#[tokio::test]
async fn librdkafka_produces_every_codec_strait_reads_exactly() {
    let b = broker();
    let c = client(&b).await;
    for codec in Codec::ALL {
        let topic = format!("from-rd-{}", codec.as_str());
        create(&c, &topic, 1).await;
        let want = records(200);
        let (bootstrap, t, w) = (b.bootstrap(), topic.clone(), want.clone());
        tokio::task::spawn_blocking(move || {
            let opts = ProduceOptions {
                codec,
                idempotence: true,
                ..ProduceOptions::default()
            };
            rdkafka::produce(&bootstrap, &t, &w, &opts)
        })
        .await
        .unwrap()
        .unwrap();
        let mut cons = PartitionConsumer::new(c.clone(), &topic, 0, 0).with_options(FetchOptions {
            max_wait: Duration::from_millis(50),
            ..Default::default()
        });
        let mut got = Vec::new();
        while got.len() < want.len() {
            got.extend(cons.poll().await.unwrap());
        }
        assert_eq!(got.len(), want.len(), "{codec:?}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.offset, i as i64);
            assert_eq!(g.key, w.key, "{codec:?}");
            assert_eq!(g.value, w.value, "{codec:?}");
            assert_eq!(Some(g.timestamp), w.timestamp, "{codec:?}");
            let hs: Vec<RecordHeader> = g
                .headers
                .iter()
                .map(|(k, v)| RecordHeader {
                    name: String::from_utf8(k.to_vec()).unwrap(),
                    value: v.clone(),
                })
                .collect();
            assert_eq!(hs, w.headers, "{codec:?}");
        }
    }
}

/// Tansu with a transaction left open (its librdkafka producer gone): a `read_committed`
/// fetch reports an LSO at the transaction's first offset, below the high watermark, and
/// returns nothing past it; `read_uncommitted` returns the data. So Tansu does stop at an
/// LSO, yet never sends an aborted list: an LSO below the high watermark is no proof
/// that a broker's aborted list can be trusted (docs/compatibility.md).
#[tokio::test]
async fn tansu_stops_read_committed_at_an_open_transaction() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "open-txn", 1).await;
    let opts = ProduceOptions {
        transaction: rdkafka::Transaction::Open,
        ..ProduceOptions::default()
    };
    rdkafka::produce(&b.bootstrap(), "open-txn", &records(20), &opts).expect("produce");
    let (leader, _) = c.leader_for("open-txn", 0).await.expect("leader");
    let fetch = |isolation| {
        let c = c.clone();
        async move {
            let opts = FetchOptions {
                max_wait: Duration::from_millis(100),
                isolation,
                ..FetchOptions::default()
            };
            let r = c
                .fetch(leader, &[FetchPosition::new("open-txn", 0, 0)], &opts)
                .await
                .expect("fetch");
            r.partitions.into_iter().next().expect("the partition")
        }
    };
    let committed = fetch(IsolationLevel::ReadCommitted).await;
    assert_eq!(committed.error_code, 0);
    assert_eq!(committed.high_watermark, 20);
    assert_eq!(
        committed.last_stable_offset, 0,
        "stops at the open transaction"
    );
    assert!(committed.records.is_empty());
    assert!(committed.aborted_transactions.is_empty());
    let uncommitted = fetch(IsolationLevel::ReadUncommitted).await;
    assert!(!uncommitted.records.is_empty(), "the data is stored");
}
