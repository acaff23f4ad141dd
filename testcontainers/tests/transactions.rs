//! Transactions against Apache Kafka, whose log keeps aborted records and abort markers
//! at their offsets and whose Fetch answers carry the real aborted-transaction lists and
//! last stable offset (Tansu stores no aborted data; docs/compatibility.md). On the source,
//! per partition: plain records, committed and aborted transactions interleaved, then a
//! transaction left open (Kafka aborts it after its timeout) with a committed one behind
//! it. `strait run` replicates while librdkafka checks:
//!
//! - while the transaction is open, the source's LSO is below its high watermark, and the
//!   target holds exactly the committed data *before* it (nothing past the LSO);
//! - after Kafka aborts it, the target holds exactly the committed data, in order, read
//!   committed *and* read uncommitted: no aborted or open-then-aborted record was copied,
//!   although the source's log holds them;
//! - `strait verify` reports the copy as matching record for record, the aborted records
//!   and markers being gaps of the offset map.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::IsolationLevel;
use strait_kafka_scenarios::kafka::ends;
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, wait};
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{
    self, ClientConfig, ConsumeOptions, Isolation, ProduceOptions, Transaction,
};

const TOPIC: &str = "payments";
const PARTITIONS: i32 = 2;
const PER_PARTITION: usize = 10;
/// librdkafka `transaction.timeout.ms` of the transaction left open: long enough for the
/// checks made while it is open, after which Kafka's coordinator aborts it.
const OPEN_TIMEOUT_MS: u64 = 40_000;

fn batch(label: &str) -> Vec<TestRecord> {
    (0..PARTITIONS)
        .flat_map(|p| {
            (0..PER_PARTITION).map(move |i| {
                TestRecord::new(format!("k{i}"), format!("{label}-{p}-{i}")).with_partition(p)
            })
        })
        .collect()
}

fn produce(src: &str, label: &str, transaction: Transaction, client: ClientConfig) {
    let opts = ProduceOptions {
        transaction,
        transactional_id: Some(format!("tx-{label}")),
        client,
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(src, TOPIC, &batch(label), &opts).expect("produce");
    assert!(
        delivered.iter().all(|d| d.error.is_none()),
        "{label}: {delivered:?}"
    );
}

/// Per partition, the values in offset order.
fn values(bootstrap: &str, topic: &str, isolation: Isolation) -> BTreeMap<i32, Vec<String>> {
    try_values(bootstrap, topic, isolation).unwrap_or_else(|e| panic!("consume {topic}: {e}"))
}

/// [`values`], or the error while the topic cannot be read (not created yet).
fn try_values(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
) -> strait_testkit::Result<BTreeMap<i32, Vec<String>>> {
    let opts = ConsumeOptions {
        isolation,
        ..ConsumeOptions::until_idle(Duration::from_secs(3))
    };
    let mut got = rdkafka::consume(bootstrap, topic, &opts)?;
    got.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in got {
        let v = String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned();
        out.entry(r.partition).or_default().push(v);
    }
    Ok(out)
}

/// What a read_committed reader must see per partition, for these labels in order.
fn expected(labels: &[&str]) -> BTreeMap<i32, Vec<String>> {
    (0..PARTITIONS)
        .map(|p| {
            let v = labels
                .iter()
                .flat_map(|l| (0..PER_PARTITION).map(move |i| format!("{l}-{p}-{i}")))
                .collect();
            (p, v)
        })
        .collect()
}

#[test]
fn read_committed_on_the_target_sees_exactly_the_committed_transactions() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let none = ClientConfig::new;
    produce(&src, "plain-a", Transaction::None, none());
    produce(&src, "commit-1", Transaction::Commit, none());
    produce(&src, "abort-1", Transaction::Abort, none());
    produce(&src, "commit-2", Transaction::Commit, none());
    produce(&src, "abort-2", Transaction::Abort, none());
    produce(&src, "plain-b", Transaction::None, none());
    let before_open = ["plain-a", "commit-1", "commit-2", "plain-b"];
    let open_timeout =
        ClientConfig::new().set("transaction.timeout.ms", OPEN_TIMEOUT_MS.to_string());
    produce(&src, "open", Transaction::Open, open_timeout);
    produce(&src, "commit-3", Transaction::Commit, none());

    // Kafka's own view: the open transaction holds the LSO back; its data is in the log.
    let committed_end = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadCommitted).expect("LSO");
    let high = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadUncommitted).expect("HW");
    for p in 0..PARTITIONS {
        assert!(
            committed_end[&p] < high[&p],
            "partition {p}: LSO {committed_end:?} < HW {high:?}"
        );
    }
    let raw = values(&src, TOPIC, Isolation::ReadUncommitted);
    assert!(
        raw[&0].iter().any(|v| v.starts_with("abort-1"))
            && raw[&0].iter().any(|v| v.starts_with("open")),
        "the source log keeps aborted and open records: {:?}",
        raw[&0]
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[engine]
fetch_max_wait = "100ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    let target_topic = format!("src.{TOPIC}");
    let diagnose = || {
        format!(
            "target: {:?}\n{}",
            try_values(&dst, &target_topic, Isolation::ReadUncommitted),
            log_tail(&log)
        )
    };

    // While the transaction is open: everything before it, nothing after the LSO.
    let want = expected(&before_open);
    wait::until(
        "the committed data before the open transaction on the target",
        Duration::from_secs(30),
        || {
            strait.assert_running();
            try_values(&dst, &target_topic, Isolation::ReadUncommitted).is_ok_and(|v| v == want)
        },
        diagnose,
    );
    let lso = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadCommitted).expect("LSO");
    assert_eq!(
        lso, committed_end,
        "the transaction was still open during the check"
    );

    // Kafka aborts it after its timeout; then commit-3 becomes readable and is copied.
    let mut all = before_open.to_vec();
    all.push("commit-3");
    let want = expected(&all);
    wait::until(
        "commit-3 on the target once Kafka aborted the open transaction",
        Duration::from_millis(OPEN_TIMEOUT_MS) + Duration::from_secs(60),
        || {
            strait.assert_running();
            try_values(&dst, &target_topic, Isolation::ReadUncommitted).is_ok_and(|v| v == want)
        },
        diagnose,
    );
    assert_eq!(
        values(&dst, &target_topic, Isolation::ReadCommitted),
        want,
        "read_committed"
    );
    assert_eq!(
        values(&src, TOPIC, Isolation::ReadCommitted),
        want,
        "the source agrees"
    );

    // The parity check: every committed record paired and equal, nothing left over. The
    // state topic is written every checkpoint interval: wait until it covers the copy.
    let per_partition = (want[&0].len()) as u64;
    let last = std::cell::RefCell::new(String::new());
    wait::until(
        "strait verify reports the copy as matching",
        Duration::from_secs(30),
        || {
            let (code, out) = process::verify(&config, &[]);
            *last.borrow_mut() = out;
            code == Some(0)
        },
        || last.borrow().clone(),
    );
    let report: serde_json::Value = serde_json::from_str(&last.borrow()).expect("verify's JSON");
    for p in report["flows"][0]["partitions"]
        .as_array()
        .expect("partitions")
    {
        assert_eq!(p["tally"]["matched"].as_u64(), Some(per_partition), "{p:#}");
        assert_eq!(
            p["tally"]["target_records"].as_u64(),
            Some(per_partition),
            "{p:#}"
        );
    }
}
