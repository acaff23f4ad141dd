//! Helpers of the transactional-producer tests: the raw log of a partition, librdkafka's
//! view of a topic, records and what they look like when consumed.

use std::time::Duration;

use strait_client::*;
use strait_records::{Compression, ControlRecordType, Limits};
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation};

use super::batch;

/// One batch of a partition's log as the broker stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub base_offset: i64,
    pub records: i32,
    pub transactional: bool,
    pub control: Option<ControlRecordType>,
    pub producer: (i64, i16),
    pub base_sequence: i32,
}

pub struct Log {
    pub batches: Vec<Logged>,
    /// Producer ids of the aborted transactions the broker lists for read_committed.
    pub aborted_listed: Vec<i64>,
}

pub async fn log(c: &Client, topic: &str, partition: i32) -> Log {
    let leader = c.leader_for(topic, partition).await.unwrap().0;
    let opts = FetchOptions {
        max_wait: Duration::from_millis(50),
        isolation: IsolationLevel::ReadCommitted,
        ..FetchOptions::default()
    };
    let r = c
        .fetch(leader, &[FetchPosition::new(topic, partition, 0)], &opts)
        .await
        .unwrap();
    let p = &r.partitions[0];
    let split = strait_records::split(p.records.clone(), &Limits::default()).unwrap();
    let batches = split
        .batches
        .iter()
        .map(|b| {
            let h = b.header();
            Logged {
                base_offset: h.base_offset,
                records: h.last_offset_delta + 1,
                transactional: h.attributes.is_transactional(),
                control: if h.attributes.is_control() {
                    b.control_type(&Limits::default()).unwrap()
                } else {
                    None
                },
                producer: (h.producer_id, h.producer_epoch),
                base_sequence: h.base_sequence,
            }
        })
        .collect();
    Log {
        batches,
        aborted_listed: p
            .aborted_transactions
            .iter()
            .map(|a| a.producer_id)
            .collect(),
    }
}

pub async fn consume(b: &strait_testkit::TansuBroker, topic: &str, iso: Isolation) -> Vec<String> {
    let (bootstrap, topic) = (b.bootstrap(), topic.to_string());
    let opts = ConsumeOptions {
        isolation: iso,
        idle: Duration::from_secs(2),
        ..ConsumeOptions::default()
    };
    tokio::task::spawn_blocking(move || rdkafka::consume(&bootstrap, &topic, &opts))
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|r| {
            format!(
                "{}:{}={}",
                r.partition,
                String::from_utf8_lossy(r.key.as_deref().unwrap_or(b"-")),
                String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"-"))
            )
        })
        .collect()
}

pub fn records(tag: &str, n: usize) -> Vec<ProducerRecord> {
    (0..n)
        .map(|i| ProducerRecord::new(format!("{tag}{i}"), format!("{tag}-value-{i}")))
        .collect()
}

/// `partition:key=value` of `records(tag, n)`.
pub fn expected(partition: i32, tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{partition}:{tag}{i}={tag}-value-{i}"))
        .collect()
}

pub fn txn_config(id: &str) -> TransactionalConfig {
    let mut cfg = TransactionalConfig::new(id);
    cfg.transaction_timeout = Duration::from_secs(30);
    cfg
}

pub async fn acked(acks: Vec<AckFuture>) {
    for a in acks {
        a.wait().await.unwrap();
    }
}

/// A transactional batch of `n` records, stamped by hand (for the raw-RPC probes).
pub fn stamped(n: usize, id: ProducerIdentity, seq: i32) -> RawBatch {
    let p = batch(n, 1_700_000_000_000, Compression::None)
        .patch(strait_records::ProducerStamp {
            producer_id: id.id,
            producer_epoch: id.epoch,
            base_sequence: seq,
        })
        .with_transactional(true);
    RawBatch::from_parts(p.parts().to_vec())
}

pub async fn produce_raw(
    c: &Client,
    txn: &str,
    topic: &str,
    b: RawBatch,
) -> PartitionProduceResult {
    let mut req = ProduceRequest::new(Acks::All);
    req.transactional_id = Some(txn.into());
    req.push(topic, 0, b);
    let leader = c.leader_for(topic, 0).await.unwrap().0;
    c.produce_to(leader, &req).await.unwrap().remove(0)
}
