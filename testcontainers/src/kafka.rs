//! Apache Kafka (KRaft, broker and controller in one process) for the scenarios. By default
//! a node of `strait_testkit::kafka` (the JVM from the Maven jars `scripts/install-brokers`
//! brings, on free loopback ports); with `STRAIT_KAFKA_BACKEND=docker`, a container of the
//! JVM image `apache/kafka` at [`KAFKA_TAG`] through testcontainers, for machines with a
//! Docker engine. Either way internal topics get replication factor 1 (transactions work
//! on one broker), groups form at once and topics are never created automatically. The
//! broker is stopped when [`Kafka`] is dropped, also when a test fails.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strait_client::{Client, ClientConfig, IsolationLevel};
use strait_mirror::datapath::probe::bounds;
use strait_testkit::kafka::{KafkaCluster, KafkaOptions};
use strait_testkit::rdkafka::Isolation;
use strait_testkit::verify;
use testcontainers_modules::kafka::apache::{self, KAFKA_PORT};
use testcontainers_modules::testcontainers::runners::SyncRunner;
use testcontainers_modules::testcontainers::{Container, ImageExt};

use crate::engine;

/// The `apache/kafka` image tag the Docker backend runs.
pub const KAFKA_TAG: &str = "4.4.0";

/// Selects the backend: `jars` (default) or `docker`.
pub const BACKEND_ENV: &str = "STRAIT_KAFKA_BACKEND";

/// A running Kafka broker.
pub struct Kafka {
    backend: Backend,
    bootstrap: String,
}

enum Backend {
    Jars(KafkaCluster),
    Docker(Box<Container<apache::Kafka>>),
}

impl Kafka {
    /// Starts one node on the backend [`BACKEND_ENV`] selects and waits until it serves.
    /// Fails the test when it cannot start (never skips it).
    pub fn start() -> Kafka {
        match std::env::var(BACKEND_ENV).as_deref() {
            Ok("docker") => Self::start_docker(),
            Ok("jars") | Err(_) => Self::start_with(KafkaOptions::default()),
            Ok(other) => panic!("{BACKEND_ENV}={other}: expected jars or docker"),
        }
    }

    /// Two independent clusters (source and target), started at once.
    pub fn pair() -> (Kafka, Kafka) {
        std::thread::scope(|s| {
            let a = s.spawn(Kafka::start);
            let b = s.spawn(Kafka::start);
            (
                a.join().expect("start the source Kafka"),
                b.join().expect("start the target Kafka"),
            )
        })
    }

    /// A cluster of the jar backend with these options (security, 3 nodes, the authorizer,
    /// broker properties): scenarios that need them run on the jars only.
    pub fn start_with(options: KafkaOptions) -> Kafka {
        let cluster =
            KafkaCluster::start(options).unwrap_or_else(|e| panic!("start Apache Kafka: {e}"));
        Kafka {
            bootstrap: cluster.bootstrap(),
            backend: Backend::Jars(cluster),
        }
    }

    fn start_docker() -> Kafka {
        engine::require();
        let container = apache::Kafka::default()
            .with_jvm_image()
            .with_tag(KAFKA_TAG)
            // One broker: the transaction log cannot have the default three replicas.
            .with_env_var("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
            .with_env_var("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
            // Groups form at once instead of after 3 s (the scenarios time rebalances).
            .with_env_var("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
            // Only strait and the tests create topics: a typo must not create one.
            .with_env_var("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
            // Test data carries 2023 timestamps: no retention deletes it.
            .with_env_var("KAFKA_LOG_RETENTION_MS", "-1")
            .with_startup_timeout(Duration::from_secs(180))
            .start()
            .unwrap_or_else(|e| panic!("start apache/kafka:{KAFKA_TAG}: {e}"));
        let port = container
            .get_host_port_ipv4(KAFKA_PORT)
            .unwrap_or_else(|e| panic!("the Kafka container's mapped port: {e}"));
        Kafka {
            backend: Backend::Docker(Box::new(container)),
            bootstrap: format!("127.0.0.1:{port}"),
        }
    }

    /// `host:port` for clients on the host.
    pub fn bootstrap(&self) -> String {
        self.bootstrap.clone()
    }

    /// The jar backend's cluster (to kill, pause or restart a node, or reach its secure
    /// listeners); `None` on Docker.
    pub fn cluster(&self) -> Option<&KafkaCluster> {
        match &self.backend {
            Backend::Jars(c) => Some(c),
            Backend::Docker(_) => None,
        }
    }

    /// [`cluster`](Self::cluster), mutably; fails the test on Docker.
    pub fn cluster_mut(&mut self) -> &mut KafkaCluster {
        match &mut self.backend {
            Backend::Jars(c) => c,
            Backend::Docker(_) => {
                panic!("this scenario controls broker processes: run it on the jar backend")
            }
        }
    }

    /// What runs: `Apache Kafka 4.4.0 (jars)` or the container's image and id.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Jars(c) => format!("Apache Kafka {} (jars)", c.version()),
            Backend::Docker(c) => format!("apache/kafka:{KAFKA_TAG} (container {})", c.id()),
        }
    }
}

/// Per partition of `topic` (`0..partitions`), the end a reader at `isolation` sees: the
/// high watermark (read_uncommitted) or the last stable offset (read_committed), from
/// Fetch. `None` while the topic does not exist or the broker does not answer.
pub fn ends(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    isolation: IsolationLevel,
) -> Option<BTreeMap<i32, i64>> {
    crate::runtime().block_on(async {
        // A cluster of several nodes: `host:port,host:port`.
        let config = ClientConfig::new(bootstrap.split(',').map(str::trim))
            .with_connect_timeout(Duration::from_secs(2))
            .with_request_timeout(Duration::from_secs(5));
        let client = Client::connect(config).await.ok()?;
        let ids: Vec<i32> = (0..partitions).collect();
        let b = bounds(&client, topic, &ids, isolation).await.ok()?;
        Some(
            ids.iter()
                .map(|p| (*p, b.get(p).map_or(0, |b| b.end)))
                .collect(),
        )
    })
}

/// The sum of [`ends`] at read_uncommitted (0 while the topic does not exist).
pub fn total(bootstrap: &str, topic: &str, partitions: i32) -> i64 {
    ends(
        bootstrap,
        topic,
        partitions,
        IsolationLevel::ReadUncommitted,
    )
    .map_or(0, |e| e.values().sum())
}

/// Waits (at most `deadline`) until every partition of `target_topic` on `dst` is at least
/// at the end `src_topic` on `src` has now, and has not moved for 1.5 s (late duplicates
/// have landed); fails the test with `diagnose()` otherwise.
pub fn wait_caught_up(
    (src, src_topic): (&str, &str),
    (dst, target_topic): (&str, &str),
    partitions: i32,
    deadline: Duration,
    diagnose: impl FnOnce() -> String,
) {
    let source_end =
        ends(src, src_topic, partitions, IsolationLevel::ReadUncommitted).expect("source ends");
    let mut last: Option<(BTreeMap<i32, i64>, Instant)> = None;
    crate::wait::until(
        "the target to catch up",
        deadline,
        || {
            let Some(t) = ends(
                dst,
                target_topic,
                partitions,
                IsolationLevel::ReadUncommitted,
            ) else {
                return false;
            };
            if t.iter().any(|(p, e)| *e < source_end[p]) {
                return false;
            }
            match &last {
                Some((prev, since)) if *prev == t => since.elapsed() > Duration::from_millis(1500),
                _ => {
                    last = Some((t, Instant::now()));
                    false
                }
            }
        },
        diagnose,
    );
}

/// Reads `src_topic` (which must hold `produced` records) and `target_topic` with
/// librdkafka, each partition to its high watermark however many records that is
/// ([`verify::read_to_end`], the one target reader: a duplicate anywhere is read), and
/// compares them per partition ([`strait_testkit::verify`]).
pub fn compare(
    (src, src_topic): (&str, &str),
    (dst, target_topic): (&str, &str),
    _partitions: i32,
    produced: u64,
) -> verify::Report {
    let want =
        verify::read_to_end(src, src_topic, Isolation::ReadUncommitted).expect("read the source");
    let got = verify::read_to_end(dst, target_topic, Isolation::ReadUncommitted)
        .expect("read the target");
    let report = verify::check(&want, &got);
    assert_eq!(
        report.total().source as u64,
        produced,
        "the source holds what was produced"
    );
    report
}
