//! KIP-848 consumer groups (`group.protocol=consumer`, librdkafka through confluent-kafka)
//! against Apache Kafka 4.
//!
//! Per partition the source holds 20 plain records (offsets 0–19), a committed transaction
//! (20–39, marker 40), an aborted one (41–60, marker 61) and 20 plain (62–81): source and
//! target offsets differ, so only an exact translation points a group at the same record.
//! A live KIP-848 member of the group commits its positions on the source (10 in
//! partition 0, inside a run; 45 in partition 1, inside the aborted transaction) and stays
//! in the group. The data is replicated; then a KIP-848 member of the same group joins on
//! the target and `strait run --once` syncs the group: Kafka's classic DescribeGroups
//! reports a consumer-protocol group as `Dead` with no members, but the target group has a
//! live member, so Strait must neither commit nor even try to (Kafka would refuse the
//! commit with UNKNOWN_MEMBER_ID; other brokers may not). Once that member has left,
//! another round commits, and librdkafka checks that the group's next record on the target
//! is the one it is on the source. The run ends with both topics read per partition.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use strait_client::protocol::messages::describe_groups_response::DescribedGroup;
use strait_client::{Client, ClientConfig, IsolationLevel};
use strait_kafka_scenarios::history::{next_record, produce_labelled};
use strait_kafka_scenarios::kafka::ends;
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process};
use strait_mirror::groups::{ConsumerProtocolGroup, TargetGroup, group_state, target_group_state};
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation, Transaction};

const TOPIC: &str = "orders";
const TARGET_TOPIC: &str = "src.orders";
const PARTITIONS: i32 = 2;
const GROUP: &str = "kip848-orders";
/// (partition, the source position the live member commits).
const POSITIONS: [(i32, i64); 2] = [(0, 10), (1, 45)];

/// A KIP-848 member: subscribes, waits until it owns every partition, optionally commits
/// offsets, then polls (consuming without committing) until the stop file appears, and
/// leaves the group with `close()`.
const MEMBER: &str = r#"
import json, os, sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, group, topic, partitions, stop_file = sys.argv[1:6]
commits = [a.split("=") for a in sys.argv[6:]]
def say(**kw):
    print(json.dumps(kw), flush=True)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
              "group.protocol": "consumer", "enable.auto.commit": False,
              "auto.offset.reset": "earliest"})
c.subscribe([topic])
deadline = time.time() + 60
while len(c.assignment()) < int(partitions):
    c.poll(0.2)
    if time.time() > deadline:
        say(event="error", error="no full assignment within 60 s")
        sys.exit(1)
say(event="assigned", partitions=sorted(tp.partition for tp in c.assignment()))
if commits:
    c.commit(offsets=[TopicPartition(topic, int(p), int(o)) for p, o in commits],
             asynchronous=False)
    say(event="committed")
while not os.path.exists(stop_file):
    c.poll(0.2)
c.close()
say(event="closed")
"#;

/// A running [`MEMBER`] process, killed and reaped on drop (also when a test fails).
struct Member {
    child: Child,
    stop_file: PathBuf,
    events: Receiver<String>,
    stderr: PathBuf,
}

impl Member {
    /// Joins `group` on `bootstrap` subscribed to `topic` and waits until it owns all
    /// `partitions` (and has committed `commits`, if any).
    fn join(
        dir: &Path,
        name: &str,
        bootstrap: &str,
        group: &str,
        topic: &str,
        commits: &[(i32, i64)],
    ) -> Member {
        let script = dir.join("kip848_member.py");
        std::fs::write(&script, MEMBER).expect("write the member script");
        let stop_file = dir.join(format!("{name}.stop"));
        let stderr = dir.join(format!("{name}.stderr"));
        let python = strait_testkit::paths::python().expect("the librdkafka venv's python");
        let mut child = Command::new(python)
            .arg(&script)
            .args([bootstrap, group, topic, &PARTITIONS.to_string()])
            .arg(&stop_file)
            .args(commits.iter().map(|(p, o)| format!("{p}={o}")))
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn the KIP-848 member");
        let (tx, events) = channel();
        let out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut m = Member {
            child,
            stop_file,
            events,
            stderr,
        };
        m.expect("assigned", Duration::from_secs(70));
        if !commits.is_empty() {
            m.expect("committed", Duration::from_secs(30));
        }
        m
    }

    /// Waits for the member to print `event`; fails the test on anything else.
    fn expect(&mut self, event: &str, deadline: Duration) {
        match self.events.recv_timeout(deadline) {
            Ok(line) if line.contains(&format!("\"event\": \"{event}\"")) => {}
            Ok(line) => panic!("KIP-848 member: expected {event}, got {line}"),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => panic!(
                "KIP-848 member: no {event} within {deadline:?}; stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            ),
        }
    }

    /// Leaves the group (`close()`) and waits for the process to end.
    fn leave(mut self) {
        std::fs::write(&self.stop_file, b"").expect("write the stop file");
        self.expect("closed", Duration::from_secs(30));
        let _ = self.child.wait();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Per partition, the values a read_committed librdkafka consumer reads, in order.
fn committed_values(bootstrap: &str, topic: &str, count: usize) -> Vec<Vec<String>> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadCommitted,
        idle: Duration::from_secs(5),
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::count(count)
    };
    let mut got = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    got.sort_by_key(|r| (r.partition, r.offset));
    (0..PARTITIONS)
        .map(|p| {
            got.iter()
                .filter(|r| r.partition == p)
                .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into())
                .collect()
        })
        .collect()
}

/// The group as DescribeGroups (classic) and ConsumerGroupDescribe (KIP-848) report it.
fn describe_both(bootstrap: &str, group: &str) -> (Option<DescribedGroup>, ConsumerProtocolGroup) {
    strait_kafka_scenarios::runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let classic = client
            .describe_groups(&[group])
            .await
            .expect("DescribeGroups")
            .into_iter()
            .next();
        let g = client
            .consumer_group_describe(&[group])
            .await
            .expect("ConsumerGroupDescribe")
            .into_iter()
            .next()
            .expect("one group");
        let consumer = ConsumerProtocolGroup::Described {
            error_code: g.error_code,
            state: g.group_state.to_string(),
            members: g.members.len(),
        };
        (classic, consumer)
    })
}

/// Writes the config and runs `strait run --once` to its end; fails the test otherwise.
fn strait_once(dir: &Path, src: &str, dst: &str, group_offsets: bool, log: &Path) {
    let config = dir.join(format!("strait-{group_offsets}.toml"));
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.groups]
include = ["kip848-.*"]
[flows.sync]
group_offsets = {group_offsets}
heartbeats = false
checkpoints = false
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let status = process::once(&config, log, Duration::from_secs(120));
    assert!(
        status.success(),
        "strait run --once: {status}\n{}",
        log_tail(log)
    );
}

#[test]
fn a_kip848_group_is_translated_exactly_and_never_committed_under_live_members() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-a", Transaction::None);
    produce_labelled(&src, TOPIC, PARTITIONS, "commit-1", Transaction::Commit);
    produce_labelled(&src, TOPIC, PARTITIONS, "abort-1", Transaction::Abort);
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-b", Transaction::None);
    let end = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadCommitted).expect("source ends");
    assert!(end.values().all(|e| *e == 82), "the layout: {end:?}");
    // The source group: a live KIP-848 member commits the positions and stays.
    let source_member = Member::join(dir.path(), "source", &src, GROUP, TOPIC, &POSITIONS);

    let log = dir.path().join("strait.log");
    strait_once(dir.path(), &src, &dst, false, &log);
    let target_end = ends(
        &dst,
        TARGET_TOPIC,
        PARTITIONS,
        IsolationLevel::ReadCommitted,
    )
    .expect("target ends");
    assert!(
        target_end.values().all(|e| *e == 60),
        "60 committed records each: {target_end:?}"
    );

    // A live KIP-848 member of the same group on the target: nothing may be committed.
    let target_member = Member::join(dir.path(), "target", &dst, GROUP, TARGET_TOPIC, &[]);
    // The root cause, as Kafka answers: the classic describe alone calls the group idle.
    let (classic, consumer) = describe_both(&dst, GROUP);
    assert_eq!(
        classic.as_ref().map(target_group_state),
        Some(TargetGroup::Inactive),
        "Kafka's classic DescribeGroups of a live KIP-848 group: {classic:?}"
    );
    assert!(
        matches!(
            consumer,
            ConsumerProtocolGroup::Described {
                error_code: 0,
                members: 1,
                ..
            }
        ),
        "ConsumerGroupDescribe: {consumer:?}"
    );
    assert!(
        matches!(
            group_state(classic.as_ref(), &consumer),
            TargetGroup::Active { .. }
        ),
        "both describes together: active"
    );
    let live_log = dir.path().join("strait-live.log");
    strait_once(dir.path(), &src, &dst, true, &live_log);
    let committed = rdkafka::list_group_offsets(&dst, GROUP).expect("list group offsets");
    assert!(
        committed.is_empty(),
        "offsets committed under a live KIP-848 member: {committed:?}\n{}",
        log_tail(&live_log)
    );
    let text = std::fs::read_to_string(&live_log).expect("read the log");
    assert!(
        !text.contains("cannot commit translated offsets"),
        "Strait tried to commit to a group with a live KIP-848 member (Kafka refused):\n{}",
        log_tail(&live_log)
    );

    // What Kafka does with the standalone commit (generation -1, no member id) the old
    // engine sent: it refuses it while the group has members.
    let refused = rdkafka::commit_group_offsets(&dst, GROUP, TARGET_TOPIC, &[(0, 0)]);
    println!("a standalone commit under a live KIP-848 member: {refused:?}");
    assert!(
        refused.is_err(),
        "Kafka accepted a standalone commit under a live KIP-848 member"
    );

    // Once the member has left, the group is Empty and the translation is committed.
    target_member.leave();
    strait_once(dir.path(), &src, &dst, true, &log);
    let committed = rdkafka::list_group_offsets(&dst, GROUP).expect("list group offsets");
    for (p, offset) in POSITIONS {
        let t = committed
            .iter()
            .find(|o| o.topic == TARGET_TOPIC && o.partition == p)
            .map(|o| o.offset)
            .unwrap_or_else(|| {
                panic!(
                    "no offset for {TARGET_TOPIC}-{p}: {committed:?}\n{}",
                    log_tail(&log)
                )
            });
        let (_, value) = next_record(&src, TOPIC, p, offset).expect("a next record on the source");
        assert_eq!(
            next_record(&dst, TARGET_TOPIC, p, t),
            Some((t, value.clone())),
            "{p}: source {offset} reads {value} next; target {t} must too"
        );
        println!("{GROUP}-{p}: source {offset} -> target {t}, next record {value}");
    }
    source_member.leave();

    // Both sides, every partition: the committed records, in order.
    let want = committed_values(&src, TOPIC, 120);
    let got = committed_values(&dst, TARGET_TOPIC, 120);
    for p in 0..PARTITIONS as usize {
        assert_eq!(want[p].len(), 60, "source partition {p}");
        assert_eq!(got[p], want[p], "partition {p}");
    }
}

/// `group`'s committed offsets on `bootstrap` by partition of `topic`, through Strait's
/// client (empty while it has none).
fn offsets_of(bootstrap: &str, group: &str, topic: &str) -> Vec<(i32, i64)> {
    strait_kafka_scenarios::runtime().block_on(async {
        let Ok(client) = Client::connect(ClientConfig::new([bootstrap])).await else {
            return vec![];
        };
        let mut out: Vec<(i32, i64)> = client
            .offset_fetch(group, None)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|o| o.topic == topic && o.offset >= 0)
            .map(|o| (o.partition, o.offset))
            .collect();
        out.sort();
        out
    })
}

/// The source side: reverse sync (`sync.reverse_group_offsets`) commits target positions
/// back on the source only for groups idle there. Two target groups are committed on the
/// target; on the source one of them has a live KIP-848 member (and no offsets), the other
/// none. The idle one is committed on the source (so reverse rounds ran); the live one is
/// not, nor tried, until its member leaves; then it is, at the same record.
#[test]
fn reverse_sync_never_commits_on_the_source_under_a_live_kip848_member() {
    const LIVE: &str = "kip848-back";
    const IDLE: &str = "kip848-idle";
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-a", Transaction::None);
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-b", Transaction::None);
    let source_member = Member::join(dir.path(), "source", &src, LIVE, TOPIC, &[]);

    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.groups]
include = ["kip848-.*"]
[flows.sync]
group_offsets = false
reverse_group_offsets = true
heartbeats = false
checkpoints = false
[flows.intervals]
group_sync = "1s"
checkpoint = "1s"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    strait_kafka_scenarios::kafka::wait_caught_up(
        (&src, TOPIC),
        (&dst, TARGET_TOPIC),
        PARTITIONS,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    for (group, offset) in [(LIVE, 25), (IDLE, 30)] {
        let offsets: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, offset)).collect();
        rdkafka::commit_group_offsets(&dst, group, TARGET_TOPIC, &offsets).expect("commit");
    }
    strait_kafka_scenarios::wait::until(
        "the idle group committed back on the source",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            offsets_of(&src, IDLE, TOPIC) == vec![(0, 30), (1, 30)]
        },
        || log_tail(&log),
    );
    // Rounds go through the groups in name order: the live one was looked at first; give
    // it two more rounds.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        offsets_of(&src, LIVE, TOPIC),
        vec![],
        "committed on the source under a live KIP-848 member\n{}",
        log_tail(&log)
    );
    let text = std::fs::read_to_string(&log).expect("read the log");
    assert!(
        !text.contains("reverse sync: cannot commit on the source"),
        "Strait tried to commit under a live KIP-848 member:\n{}",
        log_tail(&log)
    );

    source_member.leave();
    strait_kafka_scenarios::wait::until(
        "the group committed back on the source once its member left",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            offsets_of(&src, LIVE, TOPIC).len() == PARTITIONS as usize
        },
        || log_tail(&log),
    );
    for (p, t) in offsets_of(&src, LIVE, TOPIC) {
        assert_eq!(
            next_record(&src, TOPIC, p, t).map(|r| r.1),
            next_record(&dst, TARGET_TOPIC, p, 25).map(|r| r.1),
            "{LIVE}-{p}: source {t} and target 25 read the same record next"
        );
    }
    let status = process::stop(&mut strait, Duration::from_secs(30));
    assert!(status.success(), "strait: {status}\n{}", log_tail(&log));

    let want = committed_values(&src, TOPIC, 80);
    let got = committed_values(&dst, TARGET_TOPIC, 80);
    for p in 0..PARTITIONS as usize {
        assert_eq!(want[p].len(), 40, "source partition {p}");
        assert_eq!(got[p], want[p], "partition {p}");
    }
}
