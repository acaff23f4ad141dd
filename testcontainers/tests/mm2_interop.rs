//! MirrorMaker 2 interoperability against Apache Kafka, with MM2's own code from its jars.
//!
//! 1. Strait writes MM2-format checkpoints (`src.checkpoints.internal` on the target) and
//!    heartbeats (`heartbeats` on the target). MM2's client-side translation,
//!    `RemoteClusterUtils.translateOffsets`, reading Strait's checkpoints, must return
//!    exactly the offsets Strait commits for each group, and those point at the group's
//!    next record. The source holds transactions (committed and aborted), so source and
//!    target offsets differ and only an exact translation agrees.
//! 2. A dedicated-mode MM2 replicates a topic between two clusters in the fixture; librdkafka
//!    checks its output record for record per partition, and the test records (and checks)
//!    which topics MM2 wrote where: what a migration from MM2 to Strait starts from.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::{Client, ClientConfig, IsolationLevel};
use strait_kafka_scenarios::history::{next_record, produce_labelled};
use strait_kafka_scenarios::kafka::{self, ends, total};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, wait};
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::kafka::mm2::{self, Mm2};
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation, ProduceOptions, Transaction};

const TOPIC: &str = "orders";
const TARGET_TOPIC: &str = "src.orders";
const PARTITIONS: i32 = 2;
/// (group, committed source offset in every partition): inside a run, on a commit marker,
/// inside the aborted transaction, right after its marker, at the end.
const GROUPS: [(&str, i64); 5] = [
    ("g-inside-a-run", 10),
    ("g-on-a-commit-marker", 40),
    ("g-inside-the-aborted", 45),
    ("g-after-the-abort-marker", 62),
    ("g-at-the-end", 82),
];

/// A group's committed offsets on `bootstrap`, by (topic, partition).
fn committed(bootstrap: &str, group: &str) -> BTreeMap<(String, i32), i64> {
    rdkafka::list_group_offsets(bootstrap, group)
        .expect("list group offsets")
        .into_iter()
        .map(|o| ((o.topic, o.partition), o.offset))
        .collect()
}

/// How many offsets `group` has committed on `bootstrap`, through Strait's client: the
/// polling read (librdkafka's list-group-offsets crashed with SIGSEGV once while the group
/// did not exist yet on Kafka 4.4).
fn committed_count(bootstrap: &str, group: &str) -> usize {
    strait_kafka_scenarios::runtime().block_on(async {
        let Ok(client) = Client::connect(ClientConfig::new([bootstrap])).await else {
            return 0;
        };
        client
            .offset_fetch(group, None)
            .await
            .map_or(0, |c| c.iter().filter(|o| o.offset >= 0).count())
    })
}

/// Every topic of the cluster, internal ones included.
fn topics(bootstrap: &str) -> Vec<String> {
    strait_kafka_scenarios::runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let meta = client.metadata(None).await.expect("metadata");
        meta.topics.keys().cloned().collect()
    })
}

/// A big-endian `i16`-length-prefixed string (Kafka's `Struct` STRING) at `*at`.
fn struct_string(bytes: &[u8], at: &mut usize) -> String {
    let len = i16::from_be_bytes([bytes[*at], bytes[*at + 1]]) as usize;
    let s = String::from_utf8_lossy(&bytes[*at + 2..*at + 2 + len]).into_owned();
    *at += 2 + len;
    s
}

#[test]
fn mm2_translate_offsets_reads_straits_checkpoints_as_strait_translates() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-a", Transaction::None);
    produce_labelled(&src, TOPIC, PARTITIONS, "commit-1", Transaction::Commit);
    produce_labelled(&src, TOPIC, PARTITIONS, "abort-1", Transaction::Abort);
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-b", Transaction::None);
    let end = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadCommitted).expect("source ends");
    assert!(end.values().all(|e| *e == 82), "the layout: {end:?}");
    for (group, offset) in GROUPS {
        let offsets: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, offset)).collect();
        rdkafka::commit_group_offsets(&src, group, TOPIC, &offsets).expect("commit");
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.groups]
include = ["g-.*"]
[flows.sync]
group_offsets = true
heartbeats = true
checkpoints = true
[flows.intervals]
group_sync = "1s"
checkpoint = "1s"
heartbeat = "1s"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait::until(
        "every group committed on the target, and a heartbeat",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            GROUPS
                .iter()
                .all(|(g, _)| committed_count(&dst, g) == PARTITIONS as usize)
                && total(&dst, "heartbeats", 1) > 0
        },
        || log_tail(&log),
    );
    let status = process::stop(&mut strait, Duration::from_secs(30));
    assert!(status.success(), "strait: {status}\n{}", log_tail(&log));

    let target_end = ends(
        &dst,
        TARGET_TOPIC,
        PARTITIONS,
        IsolationLevel::ReadCommitted,
    )
    .expect("target ends");
    for (group, offset) in GROUPS {
        let strait_offsets = committed(&dst, group);
        let mm2_offsets = mm2::translate_offsets(&dst, "src", group, Duration::from_secs(30))
            .expect("MM2's RemoteClusterUtils.translateOffsets");
        println!("{group} (source {offset}): Strait {strait_offsets:?}, MM2 {mm2_offsets:?}");
        assert_eq!(
            mm2_offsets, strait_offsets,
            "{group}: MM2's translation of Strait's checkpoints against Strait's commits"
        );
        for p in 0..PARTITIONS {
            let t = strait_offsets[&(TARGET_TOPIC.to_owned(), p)];
            match next_record(&src, TOPIC, p, offset) {
                None => assert_eq!(t, target_end[&p], "{group}-{p}: at the end on both sides"),
                Some((_, value)) => assert_eq!(
                    next_record(&dst, TARGET_TOPIC, p, t),
                    Some((t, value.clone())),
                    "{group}-{p}: source {offset} reads {value} next; target {t} must too"
                ),
            }
        }
    }

    // The heartbeats as MM2 lays them out: key (source alias, target alias), value
    // version 0 and a timestamp.
    let beats = rdkafka::consume(
        &dst,
        "heartbeats",
        &ConsumeOptions::until_idle(Duration::from_secs(3)),
    )
    .expect("read heartbeats");
    assert!(!beats.is_empty(), "no heartbeat on the target");
    for b in &beats {
        let key = b.key.as_deref().expect("a heartbeat key");
        let mut at = 0;
        let aliases = (struct_string(key, &mut at), struct_string(key, &mut at));
        assert_eq!(aliases, ("src".to_owned(), "dst".to_owned()), "{key:?}");
        assert_eq!(at, key.len(), "nothing after the aliases");
        let value = b.value.as_deref().expect("a heartbeat value");
        assert_eq!(
            value.len(),
            10,
            "version INT16 + timestamp INT64: {value:?}"
        );
        assert_eq!(&value[..2], &[0, 0], "version 0");
        let ts = i64::from_be_bytes(value[2..].try_into().expect("8 bytes"));
        assert!(ts > 1_700_000_000_000, "a timestamp in ms: {ts}");
    }

    // Both sides, every partition: the committed records, in order.
    let read = |bootstrap: &str, topic: &str| {
        let opts = ConsumeOptions {
            isolation: Isolation::ReadCommitted,
            idle: Duration::from_secs(5),
            client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
            ..ConsumeOptions::count(120)
        };
        let mut got = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
        got.sort_by_key(|r| (r.partition, r.offset));
        got.into_iter()
            .map(|r| (r.partition, r.value))
            .collect::<Vec<_>>()
    };
    let want = read(&src, TOPIC);
    assert_eq!(want.len(), 120, "the source's committed records");
    assert_eq!(read(&dst, TARGET_TOPIC), want, "per partition, in order");
}

const MM2_TOPIC: &str = "mm2-data";
const MM2_PARTITIONS: i32 = 3;
const MM2_GROUP: &str = "mm2-group";

#[test]
fn dedicated_mm2_replicates_in_the_fixture_and_its_topics_are_where_expected() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, MM2_TOPIC, MM2_PARTITIONS, &[]).expect("topic");
    let records: Vec<TestRecord> = (0..MM2_PARTITIONS)
        .flat_map(|p| {
            (0..200).map(move |i| {
                TestRecord::new(format!("key-{i}"), format!("value-{p}-{i}")).with_partition(p)
            })
        })
        .collect();
    let delivered =
        rdkafka::produce(&src, MM2_TOPIC, &records, &ProduceOptions::default()).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()));
    let offsets: Vec<(i32, i64)> = (0..MM2_PARTITIONS).map(|p| (p, 150)).collect();
    rdkafka::commit_group_offsets(&src, MM2_GROUP, MM2_TOPIC, &offsets).expect("commit");

    let properties = mm2::dedicated_properties("a", &src, "b", &dst, MM2_TOPIC);
    let mut mm2 = Mm2::start(&properties, Duration::from_secs(120)).expect("start MM2");
    let target_topic = format!("a.{MM2_TOPIC}");
    kafka::wait_caught_up(
        (&src, MM2_TOPIC),
        (&dst, &target_topic),
        MM2_PARTITIONS,
        Duration::from_secs(90),
        || mm2.log_tail(40),
    );
    // MM2's checkpoint of the group, read by its own client.
    let mut translated = BTreeMap::new();
    wait::until(
        "MM2's checkpoints of the group",
        Duration::from_secs(60),
        || {
            translated = mm2::translate_offsets(&dst, "a", MM2_GROUP, Duration::from_secs(10))
                .unwrap_or_default();
            translated.len() == MM2_PARTITIONS as usize
        },
        || mm2.log_tail(40),
    );
    let on_source = topics(&src);
    let on_target = topics(&dst);
    println!(
        "MM2 {}: translated {MM2_GROUP} at source 150: {translated:?}\nsource topics: \
         {on_source:?}\ntarget topics: {on_target:?}",
        mm2.version()
    );
    mm2.stop(Duration::from_secs(20));

    for ((topic, p), offset) in &translated {
        assert_eq!(topic, &target_topic);
        assert!(
            (0..=150).contains(offset),
            "MM2 never translates past the record: {p}: {offset}"
        );
    }
    // MM2's offset syncs live on the source (offset-syncs.topic.location=source), named
    // after the target alias.
    assert!(
        on_source.iter().any(|x| x == "mm2-offset-syncs.b.internal"),
        "the offset-syncs topic on the source"
    );
    for t in [
        target_topic.as_str(),
        "a.checkpoints.internal",
        "heartbeats",
        "mm2-offsets.a.internal",
        "mm2-configs.a.internal",
        "mm2-status.a.internal",
    ] {
        assert!(on_target.iter().any(|x| x == t), "{t} on the target");
    }

    let produced = records.len() as u64;
    let report = kafka::compare(
        (&src, MM2_TOPIC),
        (&dst, &target_topic),
        MM2_PARTITIONS,
        produced,
    );
    println!("MM2 {}: {report}", mm2.version());
    let problems = report.problems(0);
    assert!(problems.is_empty(), "{problems:#?}");
}
