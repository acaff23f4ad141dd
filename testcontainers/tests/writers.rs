//! Who may write a flow, against Apache Kafka's group coordinator.
//!
//! - **A second process of a flow without `[flows.scale_out]` is refused at start**, by
//!   the name of the process that holds the flow (its host and pid), and the first keeps
//!   replicating: librdkafka then finds every record on the target once, in order.
//! - **Exactly-once members that disagree on the topology are refused by name**: a member
//!   configured with another slot count than the group's members exits, naming both
//!   counts, and owns nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use strait_kafka_scenarios::kafka::{self, total};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, Strait, process, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::load::NumberedProducer;
use strait_testkit::rdkafka;

const PARTITIONS: i32 = 3;
const BATCH_RECORDS: u32 = 10;
const PER_CALL: u64 = 25;

fn config(dir: &Path, name: &str, (src, dst): (&str, &str), topic: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"{}name = "writers-{topic}"
[flows.topics]
include = ["{topic}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
{extra}[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "5s")
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write config");
    path
}

/// Runs a second process on `config` and returns its exit status and log once it ends
/// (it must, within 60 s).
fn refused(config: &Path, log: &Path) -> String {
    let mut second: Strait = process::start(config, log);
    let (status, _) = second.wait_exit(Duration::from_secs(60));
    let status = status.unwrap_or_else(|| {
        panic!(
            "the second process was not refused within 60 s:\n{}",
            second.log_tail()
        )
    });
    assert!(!status.success(), "the second process exited with {status}");
    second.log_text()
}

#[test]
fn a_second_process_of_a_flow_is_refused_at_start_by_name_and_nothing_is_duplicated() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let topic = "sole";
    rdkafka::create_topic(&src, topic, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "strait", (&src, &dst), topic, "");
    let first_log = dir.path().join("first.log");
    let target_topic = format!("src.{topic}");

    let producer = NumberedProducer::start(src.clone(), topic, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut first = process::start(&cfg, &first_log);
    wait::until(
        "the first process replicating",
        Duration::from_secs(60),
        || {
            first.assert_running();
            total(&dst, &target_topic, PARTITIONS) >= 200
        },
        || log_tail(&first_log),
    );
    let text = refused(&cfg, &dir.path().join("second.log"));
    let holder = format!("(pid {})", first.pid());
    assert!(
        text.contains("already written by the process on") && text.contains(&holder),
        "the refusal names the holder {holder}:\n{text}"
    );
    assert!(
        text.contains("[flows.scale_out]"),
        "says what to do:\n{text}"
    );
    first.assert_running();

    let produced = producer.finish();
    kafka::wait_caught_up(
        (&src, topic),
        (&dst, &target_topic),
        PARTITIONS,
        Duration::from_secs(90),
        || log_tail(&first_log),
    );
    let report = kafka::compare((&src, topic), (&dst, &target_topic), PARTITIONS, produced);
    // One process wrote: no kill, no restart, so no duplicate at all.
    let problems = report.problems(0);
    assert!(
        problems.is_empty(),
        "{problems:?}\n{}",
        log_tail(&first_log)
    );
    process::stop(&mut first, Duration::from_secs(30));
}

#[test]
fn an_exactly_once_member_with_another_slot_count_is_refused_by_name() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let topic = "slots";
    rdkafka::create_topic(&src, topic, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let eos = |slots: u32| {
        format!(
            "[flows.delivery]\nguarantee = \"exactly_once\"\ntransactional_id = \"writers\"\n\
             [flows.scale_out]\nslots = {slots}\n"
        )
    };
    let four = config(dir.path(), "four", (&src, &dst), topic, &eos(4));
    let two = config(dir.path(), "two", (&src, &dst), topic, &eos(2));
    let log = dir.path().join("four.log");
    let target_topic = format!("src.{topic}");
    let producer = NumberedProducer::start(src.clone(), topic, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut member = process::start(&four, &log);
    wait::until(
        "the 4-slot member replicating",
        Duration::from_secs(90),
        || {
            member.assert_running();
            total(&dst, &target_topic, PARTITIONS) >= 100
        },
        || log_tail(&log),
    );
    let text = refused(&two, &dir.path().join("two.log"));
    assert!(
        text.contains("4 slots") && text.contains("2 slots"),
        "the refusal names both topologies:\n{text}"
    );
    member.assert_running();
    producer.finish();
    process::stop(&mut member, Duration::from_secs(30));
}
