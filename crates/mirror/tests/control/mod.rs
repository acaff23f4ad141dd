//! Shared by the control-plane tests (topics, groups, heartbeats): two Tansu brokers
//! (`source` and `target`, killed on drop even when a test fails), clients, a flow.
#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use strait_client::{
    Client, ClientConfig, FetchOptions, NewTopic, PartitionConsumer, ProducerRecord, RecordProducer,
};
use strait_mirror::config::{Flow, load_str};
use strait_records::Compression;
use strait_testkit::TansuCluster;

/// Two independent clusters and a client for each.
pub struct Pair {
    pub cluster: TansuCluster,
    pub source: Client,
    pub target: Client,
}

impl Pair {
    pub async fn start() -> Pair {
        let cluster = TansuCluster::start(2).expect("start tansu (run scripts/install-brokers)");
        let source = connect(&cluster.broker(0).bootstrap()).await;
        let target = connect(&cluster.broker(1).bootstrap()).await;
        Pair {
            cluster,
            source,
            target,
        }
    }

    pub fn source_bootstrap(&self) -> String {
        self.cluster.broker(0).bootstrap()
    }

    pub fn target_bootstrap(&self) -> String {
        self.cluster.broker(1).bootstrap()
    }

    /// The flow `source` → `target` with `extra` TOML lines in its `[[flows]]` table.
    pub fn flow(&self, extra: &str) -> Flow {
        let text = format!(
            "[clusters.source]\nbootstrap_servers = \"{}\"\n\
             [clusters.target]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"source\"\ntarget = \"target\"\n{extra}\n",
            self.source_bootstrap(),
            self.target_bootstrap()
        );
        let cfg = load_str(&text, "test.toml", &|_| None).expect("valid test config");
        cfg.flows.into_iter().next().expect("one flow")
    }
}

pub async fn connect(bootstrap: &str) -> Client {
    Client::connect(
        ClientConfig::new([bootstrap.to_owned()])
            .with_request_timeout(Duration::from_secs(10))
            .with_retry_timeout(Duration::from_secs(10)),
    )
    .await
    .expect("connect")
}

pub async fn create(c: &Client, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let mut t = NewTopic::new(topic, partitions);
    for (k, v) in configs {
        t = t.with_config(*k, *v);
    }
    let r = c
        .create_topics(&[t], Duration::from_secs(5))
        .await
        .expect("create_topics");
    r[0].1.as_ref().expect("topic created");
}

/// Produces records with values `values` to partition 0, one batch; returns the base offset.
pub async fn produce(c: &Client, topic: &str, values: &[String]) -> i64 {
    let p = RecordProducer::new(c.clone(), Compression::None)
        .await
        .expect("producer");
    let records: Vec<ProducerRecord> = values
        .iter()
        .map(|v| ProducerRecord::new(Bytes::from_static(b"k"), Bytes::from(v.clone())))
        .collect();
    let mut base = -1;
    for ack in p.send(topic, 0, &records).await.expect("send") {
        let a = ack.wait().await.expect("ack");
        if base < 0 {
            base = a.base_offset;
        }
    }
    base
}

/// Every record of partition 0 from `from` up to the high watermark.
pub async fn read_all(c: &Client, topic: &str, from: i64) -> Vec<strait_client::ConsumedRecord> {
    let mut cons = PartitionConsumer::new(c.clone(), topic, 0, from).with_options(FetchOptions {
        max_wait: Duration::from_millis(50),
        ..FetchOptions::default()
    });
    let mut out = Vec::new();
    for _ in 0..40 {
        out.extend(cons.poll().await.expect("poll"));
        if cons.high_watermark() >= 0 && cons.position() >= cons.high_watermark() {
            break;
        }
    }
    out
}

/// The value of the record at `offset` of partition 0.
pub async fn value_at(c: &Client, topic: &str, offset: i64) -> Option<Bytes> {
    read_all(c, topic, offset)
        .await
        .into_iter()
        .find(|r| r.offset == offset)
        .and_then(|r| r.value)
}
