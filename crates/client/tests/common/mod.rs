//! Shared helpers for the integration tests (each test starts its own Tansu broker).
#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use strait_client::{Client, ClientConfig, NewTopic, RawBatch};
use strait_records::{BatchBuilder, Compression, Header};
use strait_testkit::TansuBroker;

pub mod txn;

pub fn broker() -> TansuBroker {
    TansuBroker::start().expect("start tansu (run scripts/install-brokers)")
}

pub fn config(b: &TansuBroker) -> ClientConfig {
    ClientConfig::new([b.bootstrap()])
        .with_request_timeout(Duration::from_secs(10))
        .with_retry_timeout(Duration::from_secs(10))
}

pub async fn client(b: &TansuBroker) -> Client {
    Client::connect(config(b)).await.expect("connect")
}

pub async fn create(c: &Client, topic: &str, partitions: i32) {
    let r = c
        .create_topics(&[NewTopic::new(topic, partitions)], Duration::from_secs(5))
        .await
        .expect("create_topics");
    assert_eq!(r.len(), 1);
    r[0].1.as_ref().expect("topic created");
}

/// A batch of `n` records `k{i}` / `v{i}` with header `h=i`, timestamps `ts0 + i`.
pub fn batch(n: usize, ts0: i64, codec: Compression) -> strait_records::Batch {
    let mut b = BatchBuilder::new(codec);
    for i in 0..n {
        let h = [Header {
            key: Bytes::from_static(b"h"),
            value: Some(Bytes::from(i.to_string())),
        }];
        b.push(
            ts0 + i as i64,
            Some(format!("k{i}").as_bytes()),
            Some(format!("v{i}").as_bytes()),
            &h,
        )
        .unwrap();
    }
    b.build().unwrap()
}

pub fn raw(n: usize) -> RawBatch {
    RawBatch::new(batch(n, 1_700_000_000_000, Compression::None).into_bytes())
}
