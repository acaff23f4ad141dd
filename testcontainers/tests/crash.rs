//! Crash against Apache Kafka: a producer writes numbered records to a 3-partition source
//! topic the whole time; `strait run` is killed with SIGKILL mid-stream (past a
//! checkpoint) and started again on the same config and state topic. Once the target has
//! caught up, librdkafka (checking every batch's CRC) proves per partition: nothing lost,
//! source order kept, nothing foreign, and duplicates within the documented bound of
//! `max_in_flight_per_partition` batches (docs/operations.md, "Stopping and restarting").

use std::time::Duration;

use strait_kafka_scenarios::kafka::{self, total};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::load::NumberedProducer;
use strait_testkit::rdkafka;

const TOPIC: &str = "crash";
const PARTITIONS: i32 = 3;
/// librdkafka `batch.num.messages`: no source batch (so no forwarded batch) holds more.
const BATCH_RECORDS: u32 = 10;
const PER_CALL: u64 = 25;
/// The config's `engine.max_in_flight_per_partition` (Strait's default).
const MAX_IN_FLIGHT: usize = 5;

#[test]
fn kill_9_mid_stream_then_restart_loses_nothing_and_duplicates_stay_bounded() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "5s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let target_topic = format!("src.{TOPIC}");

    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut strait = process::start(&config, &log);
    wait::until(
        "records replicated before the crash",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            total(&dst, &target_topic, PARTITIONS) >= 300
        },
        || log_tail(&log),
    );
    // Past at least one checkpoint, so the restart recovers from a saved map and reads
    // back what was written after it.
    std::thread::sleep(Duration::from_millis(1500));
    strait.kill9();
    let at_kill = total(&dst, &target_topic, PARTITIONS);
    let mut strait = process::start(&config, &log);
    wait::until(
        "replication after the restart",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            total(&dst, &target_topic, PARTITIONS) > at_kill + 150
        },
        || log_tail(&log),
    );
    let produced = producer.finish();

    // Caught up: every target partition at least at the source's end, and still.
    kafka::wait_caught_up(
        (&src, TOPIC),
        (&dst, &target_topic),
        PARTITIONS,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    let report = kafka::compare((&src, TOPIC), (&dst, &target_topic), PARTITIONS, produced);
    let bound = MAX_IN_FLIGHT * BATCH_RECORDS as usize;
    println!(
        "kill -9 against Apache Kafka: {produced} produced, {at_kill} on the target at the kill; {report}"
    );
    let problems = report.problems(bound);
    assert!(problems.is_empty(), "{problems:#?}\n{}", log_tail(&log));
}
