//! Size limits against Apache Kafka. (a) A record larger than the whole in-flight budget
//! (`engine.in_flight_memory`): Kafka returns a first batch whole even when it is larger
//! than the fetch asked for (KIP-74), so the engine must not wait for room the budget can
//! never give; the topic beside it replicates completely, and the big one fails with an
//! error naming the setting; with a budget that holds it, the same kind of record
//! replicates beside the others. (b) A batch the target topic refuses (`max.message.bytes`
//! smaller than the source's): no silent loss and no hang; the partition fails (and is
//! retried with backoff) with an error naming the batch's size and the target's limit,
//! every record before it is on the target and none after it, and the other topic
//! replicates; a source batch of records that each fit is split into batches the target
//! takes, and every record arrives.
//! librdkafka reads both sides at the end.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use strait_kafka_scenarios::kafka::{compare, total, wait_caught_up};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ClientConfig, ConsumeOptions, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestRecord};

/// One source and one target for the whole binary; each test uses its own topics.
fn pair() -> &'static (Kafka, Kafka) {
    static PAIR: OnceLock<(Kafka, Kafka)> = OnceLock::new();
    PAIR.get_or_init(Kafka::pair)
}

const BIG: usize = 3 * 1024 * 1024;

/// A producer that may send records up to 10 MB.
fn big_producer() -> ProduceOptions {
    ProduceOptions {
        client: ClientConfig::new().set("message.max.bytes", "10000000"),
        ..ProduceOptions::default()
    }
}

fn small_records(n: usize, seed: u64) -> Vec<TestRecord> {
    DataGen::new(seed).records(
        n,
        &RecordSpec {
            partition: Some(0),
            ..RecordSpec::default()
        },
    )
}

fn big_record(tag: u8) -> TestRecord {
    TestRecord::new(Bytes::from(vec![b'k', tag]), Bytes::from(vec![tag; BIG])).with_partition(0)
}

fn produce(bootstrap: &str, topic: &str, records: &[TestRecord]) {
    let delivered = rdkafka::produce(bootstrap, topic, records, &big_producer()).expect("produce");
    assert!(
        delivered.iter().all(|d| d.error.is_none()),
        "{topic}: {:?}",
        delivered.iter().find(|d| d.error.is_some())
    );
}

fn write_config(
    dir: &std::path::Path,
    src: &str,
    dst: &str,
    topics: &str,
    extra: &str,
) -> std::path::PathBuf {
    let config = dir.join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = [{topics}]
{SYNC_OFF}{extra}[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    config
}

#[test]
fn a_record_larger_than_the_in_flight_budget_fails_its_partition_clearly_and_the_others_replicate()
{
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "budget-small", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "budget-big", 1, &[("max.message.bytes", "5242880")])
        .expect("topic");
    let small = small_records(400, 1);
    produce(&src, "budget-small", &small);
    // Two small records, the 3 MB one, two small records.
    let mut big = small_records(2, 2);
    big.push(big_record(7));
    big.extend(small_records(2, 3));
    produce(&src, "budget-big", &big);

    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &src,
        &dst,
        r#""budget-small", "budget-big""#,
        "[engine]\nin_flight_memory = \"2MiB\"\nfetch_max_wait = \"50ms\"\n",
    );
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait_caught_up(
        (&src, "budget-small"),
        (&dst, "src.budget-small"),
        1,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    wait::until(
        "an error naming engine.in_flight_memory",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.contains("budget-big") && l.contains("engine.in_flight_memory"))
        },
        || log_tail(&log),
    );
    let _ = process::stop(&mut strait, Duration::from_secs(30));

    let report = compare((&src, "budget-small"), (&dst, "src.budget-small"), 1, 400);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
    // Only the two records before the big one can be on the target, in order.
    let on_target = total(&dst, "src.budget-big", 1);
    assert!(on_target <= 2, "{on_target} records on src.budget-big");
    if on_target > 0 {
        let got = rdkafka::consume(
            &dst,
            "src.budget-big",
            &ConsumeOptions::count(on_target as usize),
        )
        .expect("consume");
        for (g, w) in got.iter().zip(&big) {
            assert_eq!(&g.to_test_record().value, &w.value);
        }
    }
}

#[test]
fn a_record_larger_than_a_fetch_but_within_the_budget_replicates_beside_the_others() {
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "fits-small", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "fits-big", 1, &[("max.message.bytes", "5242880")]).expect("topic");
    produce(&src, "fits-small", &small_records(400, 7));
    // Kafka returns the 3 MB batch whole to a fetch that asked for 1 MiB (KIP-74): the
    // engine must find the missing room in a 4 MiB budget, not wait for it forever.
    let mut big = small_records(2, 8);
    big.push(big_record(5));
    big.extend(small_records(2, 9));
    produce(&src, "fits-big", &big);

    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &src,
        &dst,
        r#""fits-small", "fits-big""#,
        "[engine]\nin_flight_memory = \"4MiB\"\nfetch_max_wait = \"50ms\"\n",
    );
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    for topic in ["fits-small", "fits-big"] {
        wait_caught_up(
            (&src, topic),
            (&dst, &format!("src.{topic}")),
            1,
            Duration::from_secs(60),
            || log_tail(&log),
        );
    }
    let _ = process::stop(&mut strait, Duration::from_secs(30));
    let report = compare((&src, "fits-small"), (&dst, "src.fits-small"), 1, 400);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
    let report = compare((&src, "fits-big"), (&dst, "src.fits-big"), 1, 5);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
}

/// The size of the first batch of partition 0 of `topic` on `bootstrap`, from its header.
fn first_batch_bytes(bootstrap: &str, topic: &str) -> usize {
    use strait_client::{Client, ClientConfig, FetchOptions, FetchPosition};
    strait_kafka_scenarios::runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let (leader, _) = client.leader_for(topic, 0).await.expect("leader");
        let mut pos = FetchPosition::new(topic, 0, 0);
        pos.max_bytes = 10 << 20;
        let opts = FetchOptions {
            max_bytes: 10 << 20,
            ..FetchOptions::default()
        };
        let r = client.fetch(leader, &[pos], &opts).await.expect("fetch");
        let records = &r.partitions[0].records;
        let len = i32::from_be_bytes(records[8..12].try_into().expect("a batch header"));
        len as usize + 12
    })
}

#[test]
fn a_source_batch_larger_than_the_target_allows_is_split_into_batches_that_fit() {
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "split-big", 1, &[("max.message.bytes", "5242880")])
        .expect("topic");
    rdkafka::create_topic(
        &dst,
        "src.split-big",
        1,
        &[("max.message.bytes", "1048588")],
    )
    .expect("target topic");
    // Twelve 200 KB records in one 2.4 MB batch: each fits the target, the batch does not.
    let records: Vec<TestRecord> = (0..12u8)
        .map(|i| {
            TestRecord::new(Bytes::from(vec![b'k', i]), Bytes::from(vec![i; 200_000]))
                .with_partition(0)
        })
        .collect();
    let options = ProduceOptions {
        client: ClientConfig::new()
            .set("message.max.bytes", "10000000")
            .set("batch.size", "8000000"),
        linger_ms: 200,
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(&src, "split-big", &records, &options).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "{delivered:?}");
    let batch = first_batch_bytes(&src, "split-big");
    assert!(batch > 2_000_000, "the source batch is {batch} bytes");

    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &src,
        &dst,
        r#""split-big""#,
        "[flows.topic_configs]\nexclude = [\"max\\\\.message\\\\.bytes\"]\n\
         [engine]\nfetch_max_wait = \"50ms\"\n",
    );
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait_caught_up(
        (&src, "split-big"),
        (&dst, "src.split-big"),
        1,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    let _ = process::stop(&mut strait, Duration::from_secs(30));
    assert!(first_batch_bytes(&dst, "src.split-big") <= 1_048_588);
    let report = compare((&src, "split-big"), (&dst, "src.split-big"), 1, 12);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
}

#[test]
fn a_batch_larger_than_the_target_topic_allows_fails_its_partition_naming_the_limit_and_loses_nothing_before_it()
 {
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "cap-small", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "cap-big", 1, &[("max.message.bytes", "5242880")]).expect("topic");
    // The target topic exists with Kafka's default 1 MB limit.
    rdkafka::create_topic(&dst, "src.cap-big", 1, &[("max.message.bytes", "1048588")])
        .expect("target topic");
    let small = small_records(400, 4);
    produce(&src, "cap-small", &small);
    let mut big = small_records(3, 5);
    big.push(big_record(9));
    big.extend(small_records(3, 6));
    // One record per produce call: the 3 small ones before the big one are batches of their
    // own, so they can (and must) arrive.
    for r in &big {
        produce(&src, "cap-big", std::slice::from_ref(r));
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &src,
        &dst,
        r#""cap-small", "cap-big""#,
        // The target keeps its own limit: config sync leaves max.message.bytes alone.
        "[flows.topic_configs]\nexclude = [\"max\\\\.message\\\\.bytes\"]\n\
         [engine]\nfetch_max_wait = \"50ms\"\n",
    );
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait_caught_up(
        (&src, "cap-small"),
        (&dst, "src.cap-small"),
        1,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    // Strait checks the target topic's max.message.bytes before producing: the record can
    // never fit, and the error says by how much.
    wait::until(
        "an error naming the batch and the target's limit for cap-big",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(&log).is_ok_and(|l| {
                l.lines().any(|line| {
                    line.contains("cap-big")
                        && line.contains("source offset 3")
                        && line.contains("above the limit of 1048588 bytes")
                })
            })
        },
        || log_tail(&log),
    );
    strait.assert_running();
    let _ = process::stop(&mut strait, Duration::from_secs(30));

    let report = compare((&src, "cap-small"), (&dst, "src.cap-small"), 1, 400);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
    // Exactly the records before the big one: nothing after it (no hole), nothing lost
    // before it.
    let on_target = total(&dst, "src.cap-big", 1);
    assert_eq!(on_target, 3, "records on src.cap-big\n{}", log_tail(&log));
    let got = rdkafka::consume(&dst, "src.cap-big", &ConsumeOptions::count(3)).expect("consume");
    let values: Vec<_> = got.iter().map(|r| r.to_test_record().value).collect();
    let want: Vec<_> = big[..3].iter().map(|r| r.value.clone()).collect();
    assert_eq!(values, want);
}
