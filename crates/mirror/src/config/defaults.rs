//! Every default value of the config file, in one place, so the model, the docs and
//! `import-mm2` agree on them.

use super::units::{ByteSize, HumanDuration};

/// Topics never replicated unless `topics.exclude` is overridden: MM2's `topics.exclude`
/// default (`.*[\-\.]internal`, `.*\.replica`, `__.*`) plus MM2's own `mm2-*` topics.
/// `<alias>.checkpoints.internal` and Strait's state topics end in `.internal` and so are
/// covered too. Heartbeats topics are governed by `sync.heartbeats`, not by this list.
pub const TOPIC_EXCLUDES: &[&str] = &[r".*[\-\.]internal", r".*\.replica", r"__.*", r"mm2-.*"];

/// Consumer groups never synced unless `groups.exclude` is overridden (MM2's default).
pub const GROUP_EXCLUDES: &[&str] = &[r"console-consumer-.*", r"connect-.*", r"__.*"];

/// Topic configs never copied to the target (MM2's `config.properties.exclude` default).
pub const CONFIG_EXCLUDES: &[&str] = &[
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
];

/// Include everything (MM2's `topics` and `groups` default).
pub const INCLUDE_ALL: &str = ".*";

/// MM2's `replication.policy.separator` default.
pub const SEPARATOR: &str = ".";

/// Kafka client id sent to the brokers.
pub const CLIENT_ID: &str = "strait";

/// `replication_factor = -1` asks the target broker to use its `default.replication.factor`.
pub const REPLICATION_FACTOR: i64 = -1;

/// Where the Prometheus endpoint listens.
pub const METRICS_LISTEN: &str = "127.0.0.1:9464";
/// Most connections the metrics endpoint serves at once (Prometheus needs one per scrape).
pub const METRICS_MAX_CONNECTIONS: usize = 64;
/// Time a metrics client has for the TLS handshake and its request head.
pub const METRICS_READ_TIMEOUT: HumanDuration = HumanDuration::secs(5);
/// Time the metrics endpoint spends writing one response before dropping the client.
pub const METRICS_WRITE_TIMEOUT: HumanDuration = HumanDuration::secs(10);
/// `[metrics] stalled_after`: five minutes behind with nothing acknowledged.
pub const METRICS_STALLED_AFTER: HumanDuration = HumanDuration::secs(300);

/// Log level (a `tracing` filter directive list such as `info,strait_mirror=debug`).
pub const LOG_LEVEL: &str = "info";

/// The state topic of a flow: `strait-state.<flow name>.internal` on the target. The
/// `.internal` suffix keeps it out of every flow that uses the default topic excludes.
pub fn state_topic(flow: &str) -> String {
    format!("strait-state.{flow}.internal")
}

/// The name of a flow without an explicit `name`: `<source>-to-<target>` (`->` is not
/// allowed in topic names, and the flow name is part of the state topic's name).
pub fn flow_name(source: &str, target: &str) -> String {
    format!("{source}-to-{target}")
}

/// Cluster request timeout.
pub const REQUEST_TIMEOUT: HumanDuration = HumanDuration::secs(30);
/// TCP connect timeout.
pub const CONNECT_TIMEOUT: HumanDuration = HumanDuration::secs(10);
/// How often cluster metadata is refreshed even when nothing failed.
pub const METADATA_REFRESH_INTERVAL: HumanDuration = HumanDuration::secs(300);

/// How often source topics are listed (MM2: `refresh.topics.interval.seconds` = 600).
pub const TOPIC_REFRESH: HumanDuration = HumanDuration::secs(30);
/// How often topic configs are compared (MM2: `sync.topic.configs.interval.seconds` = 600).
pub const TOPIC_CONFIG_SYNC: HumanDuration = HumanDuration::secs(300);
/// MM2's `sync.topic.acls.interval.seconds` (600).
pub const TOPIC_ACL_SYNC: HumanDuration = HumanDuration::secs(600);
/// How often group offsets are read, translated and committed
/// (MM2: `sync.group.offsets.interval.seconds` = 60).
pub const GROUP_SYNC: HumanDuration = HumanDuration::secs(10);
/// How often positions and offset maps are checkpointed
/// (MM2: `emit.checkpoints.interval.seconds` = 60).
pub const CHECKPOINT: HumanDuration = HumanDuration::secs(5);
/// How often heartbeats are emitted (MM2: `emit.heartbeats.interval.seconds` = 1).
pub const HEARTBEAT: HumanDuration = HumanDuration::secs(1);

/// Bytes of fetched data that may wait for acknowledgement, process-wide. Far more than
/// a link's bandwidth × round trip needs, small enough that the process stays under
/// 64 MiB resident (measured peak: ~23 MiB uncompressed, ~50 MiB lz4; 32 MiB gave 58–66).
pub const IN_FLIGHT_MEMORY: ByteSize = ByteSize::mib(24);
/// Worker threads of the async runtime. One thread forwards well over 1 GiB/s of
/// batches; a second one mostly adds cross-thread wake-ups (measured: ~20 % more CPU per
/// GiB on 2 cores). Raise it for recompression or the slow path at high rates.
pub const WORKER_THREADS: i64 = 1;
/// Produce requests in flight per partition; idempotence allows at most 5.
pub const MAX_IN_FLIGHT_PER_PARTITION: i64 = 5;
/// Fetch `max_wait_ms` (the Java consumer's `fetch.max.wait.ms` default).
pub const FETCH_MAX_WAIT: HumanDuration = HumanDuration::millis(500);
/// Fetch `max_bytes` (the Java consumer's `fetch.max.bytes` default).
pub const FETCH_MAX_BYTES: ByteSize = ByteSize::mib(50);
/// Fetch per-partition `max_bytes` (the Java consumer's `max.partition.fetch.bytes`).
pub const FETCH_PARTITION_MAX_BYTES: ByteSize = ByteSize::mib(1);
/// Largest batch coalescing builds (capped by the target topic's `max.message.bytes`).
pub const COALESCE_MAX_BYTES: ByteSize = ByteSize::mib(1);
/// How long the target may take to acknowledge a batch, retries included, before its
/// produce fails (the Java producer's `delivery.timeout.ms` default).
pub const DELIVERY_TIMEOUT: HumanDuration = HumanDuration::secs(120);

/// `v` as owned strings (the model stores regex lists as `Vec<String>`).
pub(crate) fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}
