//! librdkafka as an independent client, through `py/rdkafka_tool.py` (confluent-kafka).
//!
//! Cross-client tests produce or read with a client we did not write. Each function
//! spawns `$STRAIT_PYTHON rdkafka_tool.py --bootstrap ... <command>`, passes JSON, parses
//! the JSON it prints and returns typed values, or an [`Error::Tool`] carrying the
//! script's error and stderr. The functions block (a second or so); from a tokio test call
//! them directly between async steps or wrap them in `spawn_blocking`.
//!
//! ```no_run
//! # fn main() -> strait_testkit::Result<()> {
//! use strait_testkit::{DataGen, RecordSpec, TansuBroker, rdkafka};
//!
//! let broker = TansuBroker::start()?;
//! rdkafka::create_topic(&broker.bootstrap(), "orders", 2, &[])?;
//! let records = DataGen::new(42).records(100, &RecordSpec::default());
//! rdkafka::produce(&broker.bootstrap(), "orders", &records, &rdkafka::ProduceOptions::default())?;
//! let read = rdkafka::consume(&broker.bootstrap(), "orders", &rdkafka::ConsumeOptions::count(100))?;
//! assert_eq!(read.len(), 100);
//! # Ok(()) }
//! ```

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::data::{RecordHeader, TestRecord};
use crate::error::{Error, Result, io};
use crate::paths;

/// Compression codec for [`produce`] (librdkafka's `compression.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// No compression.
    #[default]
    None,
    /// gzip.
    Gzip,
    /// Snappy.
    Snappy,
    /// LZ4.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Codec {
    /// Every codec, `None` first.
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];

    /// librdkafka's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// Whether [`produce`] wraps the records in a transaction, and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transaction {
    /// No transaction.
    #[default]
    None,
    /// One transaction, committed.
    Commit,
    /// One transaction, aborted.
    Abort,
    /// One transaction, left open: its records are flushed to the broker and the producer
    /// exits without committing or aborting (the broker's transaction timeout, 60 s by
    /// default, ends it later, if the broker has one).
    Open,
}

/// Options for [`produce`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceOptions {
    /// `compression.type`.
    pub codec: Codec,
    /// `enable.idempotence` (implied by a transaction).
    pub idempotence: bool,
    /// Produce all records in one transaction that commits or aborts.
    pub transaction: Transaction,
    /// `transactional.id`; default a random one.
    pub transactional_id: Option<String>,
    /// Flush before committing/aborting (default true). With `false`, librdkafka purges
    /// unsent records on abort, so they never reach the broker at all.
    pub flush_before_end: bool,
    /// `linger.ms` (default 5: records produced together share batches).
    pub linger_ms: u32,
    /// `batch.num.messages`, to force smaller batches.
    pub batch_num_messages: Option<u32>,
    /// Deadline for the whole call (default 60 s).
    pub timeout: Duration,
    /// Wait this long between records (polling meanwhile), to keep one producer busy
    /// over a span of time (re-authentication tests). Default: no pause.
    pub pace: Option<Duration>,
    /// Extra librdkafka configuration (security, SASL, ...); default none.
    pub client: ClientConfig,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        Self {
            codec: Codec::None,
            idempotence: false,
            transaction: Transaction::None,
            transactional_id: None,
            flush_before_end: true,
            linger_ms: 5,
            batch_num_messages: None,
            timeout: Duration::from_secs(60),
            pace: None,
            client: ClientConfig::default(),
        }
    }
}

/// Extra librdkafka configuration for one call: `security.protocol`, `ssl.*`, `sasl.*`,
/// `sasl.oauthbearer.*`, `https.ca.location`, or anything else librdkafka accepts. Passed
/// to the helper in an environment variable (not on its command line), so passwords do not
/// show up in process listings; they are never logged by the Rust side.
///
/// ```
/// use strait_testkit::rdkafka::ClientConfig;
///
/// let client = ClientConfig::new()
///     .set("security.protocol", "SASL_SSL")
///     .set("ssl.ca.location", "/tmp/pki/ca.pem")
///     .set("sasl.mechanism", "SCRAM-SHA-512")
///     .set("sasl.username", "alice")
///     .set("sasl.password", "alice-secret");
/// assert_eq!(client.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ClientConfig {
    /// `(key, value)` librdkafka properties, applied in order (a later key wins).
    pub properties: Vec<(String, String)>,
    /// Authenticate with OAUTHBEARER using the token in this file, re-read on every
    /// refresh (an `oauth_cb`; the expiry is the token's `exp` claim). Sets
    /// `sasl.mechanism=OAUTHBEARER` unless a property does.
    pub oauth_token_file: Option<PathBuf>,
    /// Fail the call at the first authentication, SSL or all-brokers-down error librdkafka
    /// reports, instead of retrying until the timeout.
    pub fail_fast: bool,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets: values of keys that look like one are masked.
        let props: Vec<(&str, &str)> = self
            .properties
            .iter()
            .map(|(k, v)| {
                let secret = k.contains("password") || k.contains("secret") || k.contains("token");
                (k.as_str(), if secret { "***" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("ClientConfig")
            .field("properties", &props)
            .field("oauth_token_file", &self.oauth_token_file)
            .field("fail_fast", &self.fail_fast)
            .finish()
    }
}

impl ClientConfig {
    /// No extra configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or overrides) one librdkafka property.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let key = key.into();
        self.properties.retain(|(k, _)| *k != key);
        self.properties.push((key, value.into()));
        self
    }

    /// The value of a property, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Appends all of `other`'s properties (they win) and its token file / fail-fast.
    pub fn merge(mut self, other: &ClientConfig) -> Self {
        for (k, v) in &other.properties {
            self = self.set(k.clone(), v.clone());
        }
        if other.oauth_token_file.is_some() {
            self.oauth_token_file = other.oauth_token_file.clone();
        }
        self.fail_fast |= other.fail_fast;
        self
    }

    /// OAUTHBEARER with the token read from `path` (see [`oauth_token_file`](Self::oauth_token_file)).
    pub fn oauth_token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.oauth_token_file = Some(path.into());
        self
    }

    /// Fail at the first authentication/SSL error (see [`fail_fast`](Self::fail_fast)).
    pub fn fail_fast(mut self) -> Self {
        self.fail_fast = true;
        self
    }

    fn is_empty(&self) -> bool {
        self.properties.is_empty() && self.oauth_token_file.is_none() && !self.fail_fast
    }
}

/// Where a produced record landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Partition.
    pub partition: i32,
    /// Offset; `None` when the record was not delivered (only possible for an aborted
    /// transaction, whose unsent records librdkafka purges).
    pub offset: Option<i64>,
    /// librdkafka's delivery error, if any.
    pub error: Option<String>,
}

/// librdkafka's `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Only committed transactional data (librdkafka's default).
    #[default]
    ReadCommitted,
    /// Everything, including open and aborted transactions' data.
    ReadUncommitted,
}

/// Where [`consume`] starts in each partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartOffset {
    /// The log start.
    #[default]
    Beginning,
    /// This offset, in every partition read.
    Offset(i64),
}

/// Options for [`consume`]. It stops at `count` records, after `idle` without new data,
/// or at `max_time` — whichever comes first. It never trusts watermark offsets (they
/// under-report on Tansu).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeOptions {
    /// Partitions to read; `None` = all (from metadata).
    pub partitions: Option<Vec<i32>>,
    /// Start position.
    pub from: StartOffset,
    /// Stop after this many records (over all partitions).
    pub count: Option<usize>,
    /// Stop after this long without a record (default 3 s; 15 s with [`count`](Self::count)).
    pub idle: Duration,
    /// Stop after this long in total (default 60 s).
    pub max_time: Duration,
    /// `isolation.level` (default read_committed).
    pub isolation: Isolation,
    /// `group.id` (nothing is committed); default a random one.
    pub group: Option<String>,
    /// Extra librdkafka configuration (security, SASL, ...); default none.
    pub client: ClientConfig,
    /// Read every partition to its high watermark as Fetch reports it (librdkafka's
    /// partition EOF), however many records that is, and fail if one is not reached within
    /// `max_time`; `count` and `idle` still stop it earlier when set. Default false.
    pub to_end: bool,
}

impl Default for ConsumeOptions {
    fn default() -> Self {
        Self {
            partitions: None,
            from: StartOffset::Beginning,
            count: None,
            idle: Duration::from_secs(3),
            max_time: Duration::from_secs(60),
            isolation: Isolation::ReadCommitted,
            group: None,
            client: ClientConfig::default(),
            to_end: false,
        }
    }
}

impl ConsumeOptions {
    /// Read all partitions from the beginning until `n` records (or 15 s of silence).
    pub fn count(n: usize) -> Self {
        Self {
            count: Some(n),
            idle: Duration::from_secs(15),
            ..Self::default()
        }
    }

    /// Read all partitions from the beginning until `idle` passes without data.
    pub fn until_idle(idle: Duration) -> Self {
        Self {
            idle,
            ..Self::default()
        }
    }
}

/// The timestamp type of a consumed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker.
    LogAppendTime,
    /// No timestamp.
    None,
}

/// A record as librdkafka's consumer returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// Timestamp type.
    pub timestamp_type: TimestampType,
    /// Key (`None` = null).
    pub key: Option<Bytes>,
    /// Value (`None` = null).
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<RecordHeader>,
}

impl ConsumedRecord {
    /// As a [`TestRecord`] (partition and timestamp kept), to compare with what was produced.
    pub fn to_test_record(&self) -> TestRecord {
        TestRecord {
            partition: Some(self.partition),
            key: self.key.clone(),
            value: self.value.clone(),
            headers: self.headers.clone(),
            timestamp: Some(self.timestamp),
        }
    }
}

/// A committed group offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset.
    pub offset: i64,
}

// ---------------------------------------------------------------------------------------
// The commands
// ---------------------------------------------------------------------------------------

/// Creates `topic` with `partitions` partitions and the given topic configs. Fails if it
/// exists (see [`create_topic_if_missing`]).
pub fn create_topic(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Result<()> {
    create(
        bootstrap,
        topic,
        partitions,
        configs,
        false,
        &ClientConfig::default(),
    )
}

/// Like [`create_topic_if_missing`], with extra librdkafka configuration (to create a
/// topic through a TLS/SASL front end, say).
pub fn create_topic_with(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
    client: &ClientConfig,
) -> Result<()> {
    create(bootstrap, topic, partitions, configs, true, client)
}

/// Like [`create_topic`], with `replicas` replicas per partition (a cluster of several
/// nodes; [`create_topic`] makes one).
pub fn create_topic_replicated(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    replicas: i16,
    configs: &[(&str, &str)],
) -> Result<()> {
    create_with_replicas(
        bootstrap,
        topic,
        (partitions, replicas),
        configs,
        false,
        &ClientConfig::default(),
    )
}

/// Like [`create_topic`], but an existing topic is fine.
pub fn create_topic_if_missing(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Result<()> {
    create(
        bootstrap,
        topic,
        partitions,
        configs,
        true,
        &ClientConfig::default(),
    )
}

fn create(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
    if_not_exists: bool,
    client: &ClientConfig,
) -> Result<()> {
    create_with_replicas(
        bootstrap,
        topic,
        (partitions, 1),
        configs,
        if_not_exists,
        client,
    )
}

fn create_with_replicas(
    bootstrap: &str,
    topic: &str,
    (partitions, replicas): (i32, i16),
    configs: &[(&str, &str)],
    if_not_exists: bool,
    client: &ClientConfig,
) -> Result<()> {
    let mut args = vec![
        "--topic".to_string(),
        topic.to_string(),
        "--partitions".into(),
        partitions.to_string(),
        "--replication-factor".into(),
        replicas.to_string(),
    ];
    for (k, v) in configs {
        args.push("--config".into());
        args.push(format!("{k}={v}"));
    }
    if if_not_exists {
        args.push("--if-not-exists".into());
    }
    let _: serde_json::Value = run(
        bootstrap,
        "create-topic",
        &args,
        None,
        Duration::from_secs(60),
        client,
    )?;
    Ok(())
}

/// Deletes `topic` (DeleteTopics).
pub fn delete_topic(bootstrap: &str, topic: &str) -> Result<()> {
    let args = vec!["--topic".to_string(), topic.to_string()];
    let _: serde_json::Value = run(
        bootstrap,
        "delete-topic",
        &args,
        None,
        Duration::from_secs(60),
        &ClientConfig::default(),
    )?;
    Ok(())
}

/// Produces `records` to `topic` with librdkafka and waits for every delivery. Returns
/// where each record landed, in input order.
pub fn produce(
    bootstrap: &str,
    topic: &str,
    records: &[TestRecord],
    options: &ProduceOptions,
) -> Result<Vec<Delivered>> {
    let mut args = vec![
        "--topic".to_string(),
        topic.to_string(),
        "--codec".into(),
        options.codec.as_str().into(),
        "--linger-ms".into(),
        options.linger_ms.to_string(),
        "--transaction".into(),
        match options.transaction {
            Transaction::None => "none",
            Transaction::Commit => "commit",
            Transaction::Abort => "abort",
            Transaction::Open => "open",
        }
        .into(),
    ];
    if options.idempotence {
        args.push("--idempotence".into());
    }
    if let Some(id) = &options.transactional_id {
        args.push("--transactional-id".into());
        args.push(id.clone());
    }
    if !options.flush_before_end {
        args.push("--no-flush-before-end".into());
    }
    if let Some(n) = options.batch_num_messages {
        args.push("--batch-num-messages".into());
        args.push(n.to_string());
    }
    if let Some(pace) = options.pace {
        args.push("--pace-ms".into());
        args.push(pace.as_millis().to_string());
    }
    let wire: Vec<WireRecord> = records.iter().map(WireRecord::from).collect();
    let input =
        serde_json::to_vec(&wire).map_err(|e| Error::Protocol(format!("encoding records: {e}")))?;
    let out: ProduceOut = run(
        bootstrap,
        "produce",
        &args,
        Some(input),
        options.timeout,
        &options.client,
    )?;
    if out.delivered.len() != records.len() {
        return Err(Error::ToolOutput {
            command: "produce".into(),
            reason: format!(
                "{} delivery reports for {} records",
                out.delivered.len(),
                records.len()
            ),
            stdout: String::new(),
        });
    }
    out.delivered
        .into_iter()
        .map(|d| {
            let d = d.ok_or_else(|| Error::ToolOutput {
                command: "produce".into(),
                reason: "a record has no delivery report".into(),
                stdout: String::new(),
            })?;
            Ok(Delivered {
                partition: d.partition,
                offset: d.offset,
                error: d.error,
            })
        })
        .collect()
}

/// Reads `topic` with librdkafka's consumer (assigned partitions, no group membership).
/// Records come back sorted by partition, then offset. Control records never appear.
pub fn consume(
    bootstrap: &str,
    topic: &str,
    options: &ConsumeOptions,
) -> Result<Vec<ConsumedRecord>> {
    let mut args = vec![
        "--topic".to_string(),
        topic.to_string(),
        "--from-offset".into(),
        match options.from {
            StartOffset::Beginning => "beginning".into(),
            StartOffset::Offset(o) => o.to_string(),
        },
        "--idle-seconds".into(),
        options.idle.as_secs_f64().to_string(),
        "--max-seconds".into(),
        options.max_time.as_secs_f64().to_string(),
        "--isolation".into(),
        match options.isolation {
            Isolation::ReadCommitted => "read_committed",
            Isolation::ReadUncommitted => "read_uncommitted",
        }
        .into(),
    ];
    if let Some(ps) = &options.partitions {
        let list: Vec<String> = ps.iter().map(i32::to_string).collect();
        args.push("--partitions".into());
        args.push(list.join(","));
    }
    if let Some(n) = options.count {
        args.push("--count".into());
        args.push(n.to_string());
    }
    if let Some(g) = &options.group {
        args.push("--group".into());
        args.push(g.clone());
    }
    if options.to_end {
        args.push("--to-end".into());
    }
    let timeout = options.max_time + Duration::from_secs(30);
    let out: ConsumeOut = run(bootstrap, "consume", &args, None, timeout, &options.client)?;
    out.records
        .into_iter()
        .map(ConsumedRecord::try_from)
        .collect()
}

/// Commits `offsets` (partition, offset) for `group` on `topic` (standalone commit,
/// generation -1, as an `assign()`-ing consumer does).
pub fn commit_group_offsets(
    bootstrap: &str,
    group: &str,
    topic: &str,
    offsets: &[(i32, i64)],
) -> Result<()> {
    commit_group_offsets_with(bootstrap, group, topic, offsets, &ClientConfig::default())
}

/// [`commit_group_offsets`] with extra librdkafka configuration (security).
pub fn commit_group_offsets_with(
    bootstrap: &str,
    group: &str,
    topic: &str,
    offsets: &[(i32, i64)],
    client: &ClientConfig,
) -> Result<()> {
    let mut args = vec![
        "--group".to_string(),
        group.to_string(),
        "--topic".into(),
        topic.to_string(),
    ];
    for (p, o) in offsets {
        args.push("--offset".into());
        args.push(format!("{p}={o}"));
    }
    let _: serde_json::Value = run(
        bootstrap,
        "commit-group-offsets",
        &args,
        None,
        Duration::from_secs(60),
        client,
    )?;
    Ok(())
}

/// The offsets `group` has committed (partitions without one are left out), sorted by
/// topic and partition.
pub fn list_group_offsets(bootstrap: &str, group: &str) -> Result<Vec<GroupOffset>> {
    list_group_offsets_with(bootstrap, group, &ClientConfig::default())
}

/// [`list_group_offsets`] with extra librdkafka configuration (security).
pub fn list_group_offsets_with(
    bootstrap: &str,
    group: &str,
    client: &ClientConfig,
) -> Result<Vec<GroupOffset>> {
    let args = vec!["--group".to_string(), group.to_string()];
    let call = || -> Result<ListOffsetsOut> {
        run(
            bootstrap,
            "list-group-offsets",
            &args,
            None,
            Duration::from_secs(60),
            client,
        )
    };
    // librdkafka 2.16's admin client has crashed (SIGSEGV, nothing printed) on a group
    // Kafka 4.4 did not know yet, not reproducibly: a crash of the helper, not an answer, is
    // asked again (twice at most). Any answer or error it gives is taken as it is.
    let crashed = |r: &Result<ListOffsetsOut>| matches!(r, Err(Error::Tool { status, .. }) if status.contains("signal"));
    let mut result = call();
    for _ in 0..2 {
        if !crashed(&result) {
            break;
        }
        result = call();
    }
    let out = result?;
    Ok(out
        .offsets
        .into_iter()
        .map(|o| GroupOffset {
            topic: o.topic,
            partition: o.partition,
            offset: o.offset,
        })
        .collect())
}

/// An error librdkafka reported through its error callback.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ClientError {
    /// librdkafka's name for the code: `_AUTHENTICATION`, `_SSL`, `_TRANSPORT`,
    /// `_ALL_BROKERS_DOWN`, ...
    pub code: String,
    /// librdkafka's text.
    pub reason: String,
}

/// What [`check_connect`] saw.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConnectCheck {
    /// Metadata came back.
    pub ok: bool,
    /// How many brokers the metadata listed.
    pub brokers: usize,
    /// Every error librdkafka reported meanwhile, in order.
    pub errors: Vec<ClientError>,
}

impl ConnectCheck {
    /// Whether an error with this code (e.g. `"_AUTHENTICATION"`) was reported.
    pub fn has(&self, code: &str) -> bool {
        self.errors.iter().any(|e| e.code == code)
    }

    /// The errors as one line each, `CODE: reason`, for assertion messages.
    pub fn describe(&self) -> String {
        self.errors
            .iter()
            .map(|e| format!("{}: {}", e.code, e.reason))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Asks for metadata with librdkafka, retrying in short rounds until it works, an
/// authentication or SSL error is reported, or `timeout` passes. A refused connection is
/// `Ok` with `ok: false` and the errors: assert on them (`check.has("_SSL")`).
pub fn check_connect(
    bootstrap: &str,
    client: &ClientConfig,
    timeout: Duration,
) -> Result<ConnectCheck> {
    run(bootstrap, "check-connect", &[], None, timeout, client)
}

// ---------------------------------------------------------------------------------------
// JSON shapes and the process runner
// ---------------------------------------------------------------------------------------

#[derive(Serialize)]
struct WireRecord {
    partition: Option<i32>,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
    timestamp: Option<i64>,
}

fn b64(b: &Option<Bytes>) -> Option<String> {
    b.as_ref().map(|b| B64.encode(b))
}

fn unb64(s: Option<String>, what: &str) -> Result<Option<Bytes>> {
    s.map(|s| {
        B64.decode(s.as_bytes())
            .map(Bytes::from)
            .map_err(|e| Error::ToolOutput {
                command: "consume".into(),
                reason: format!("bad base64 in {what}: {e}"),
                stdout: s,
            })
    })
    .transpose()
}

impl From<&TestRecord> for WireRecord {
    fn from(r: &TestRecord) -> Self {
        Self {
            partition: r.partition,
            key: b64(&r.key),
            value: b64(&r.value),
            headers: r
                .headers
                .iter()
                .map(|h| (h.name.clone(), b64(&h.value)))
                .collect(),
            timestamp: r.timestamp,
        }
    }
}

#[derive(Deserialize)]
struct WireDelivered {
    partition: i32,
    offset: Option<i64>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct ProduceOut {
    delivered: Vec<Option<WireDelivered>>,
}

#[derive(Deserialize)]
struct WireConsumed {
    topic: String,
    partition: i32,
    offset: i64,
    timestamp: i64,
    timestamp_type: String,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
}

#[derive(Deserialize)]
struct ConsumeOut {
    records: Vec<WireConsumed>,
}

#[derive(Deserialize)]
struct WireGroupOffset {
    topic: String,
    partition: i32,
    offset: i64,
}

#[derive(Deserialize)]
struct ListOffsetsOut {
    offsets: Vec<WireGroupOffset>,
}

#[derive(Deserialize)]
struct ErrorOut {
    error: String,
}

impl TryFrom<WireConsumed> for ConsumedRecord {
    type Error = Error;

    fn try_from(w: WireConsumed) -> Result<Self> {
        Ok(Self {
            topic: w.topic,
            partition: w.partition,
            offset: w.offset,
            timestamp: w.timestamp,
            timestamp_type: match w.timestamp_type.as_str() {
                "create" => TimestampType::CreateTime,
                "log_append" => TimestampType::LogAppendTime,
                _ => TimestampType::None,
            },
            key: unb64(w.key, "key")?,
            value: unb64(w.value, "value")?,
            headers: w
                .headers
                .into_iter()
                .map(|(name, v)| {
                    Ok(RecordHeader {
                        value: unb64(v, "header")?,
                        name,
                    })
                })
                .collect::<Result<_>>()?,
        })
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// Keeps the end of stderr, where the traceback is.
fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &s[start..])
}

/// The environment variable carrying [`ClientConfig::properties`] to the helper, as JSON.
const CLIENT_CONFIG_ENV: &str = "STRAIT_RDKAFKA_CLIENT_CONFIG";

/// Runs one tool command and parses its stdout as `T`.
fn run<T: DeserializeOwned>(
    bootstrap: &str,
    command: &str,
    args: &[String],
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    client: &ClientConfig,
) -> Result<T> {
    let python = paths::python()?;
    let mut cmd = Command::new(&python);
    cmd.arg(paths::rdkafka_tool_script())
        .args(["--bootstrap", bootstrap])
        .args(["--timeout", &timeout.as_secs().max(1).to_string()]);
    if !client.is_empty() {
        let props: serde_json::Map<String, serde_json::Value> = client
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        cmd.env(
            CLIENT_CONFIG_ENV,
            serde_json::Value::Object(props).to_string(),
        );
        if let Some(path) = &client.oauth_token_file {
            cmd.arg("--oauth-token-file").arg(path);
        }
        if client.fail_fast {
            cmd.arg("--fail-fast");
        }
    } else {
        cmd.env_remove(CLIENT_CONFIG_ENV);
    }
    let mut child = cmd
        .arg(command)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io(format!("spawning {}", python.display())))?;

    // Feed stdin and drain stdout/stderr on threads so no pipe can fill up and block.
    let stdin_thread = child.stdin.take().map(|mut pipe| {
        let data = stdin.unwrap_or_default();
        thread::spawn(move || {
            let _ = pipe.write_all(&data);
        })
    });
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        pipe.map(|mut p| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = p.read_to_end(&mut buf);
                buf
            })
        })
    };
    let stdout_thread = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr_thread = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );

    let deadline = Instant::now() + timeout + Duration::from_secs(10);
    let status = loop {
        match child
            .try_wait()
            .map_err(io("waiting for rdkafka_tool.py"))?
        {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => thread::sleep(Duration::from_millis(10)),
        }
    };
    if let Some(t) = stdin_thread {
        let _ = t.join();
    }
    let join = |t: Option<thread::JoinHandle<Vec<u8>>>| {
        t.and_then(|t| t.join().ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    let stdout = join(stdout_thread);
    let stderr = join(stderr_thread);

    let Some(status) = status else {
        return Err(Error::Tool {
            command: command.into(),
            status: format!("timed out after {timeout:?}"),
            message: String::new(),
            stderr: tail(&stderr, 8000),
        });
    };
    if !status.success() {
        let message = serde_json::from_str::<ErrorOut>(stdout.trim())
            .map(|e| e.error)
            .unwrap_or_else(|_| truncate(stdout.trim(), 2000));
        return Err(Error::Tool {
            command: command.into(),
            status: status.to_string(),
            message,
            stderr: tail(&stderr, 8000),
        });
    }
    serde_json::from_str(stdout.trim()).map_err(|e| Error::ToolOutput {
        command: command.into(),
        reason: e.to_string(),
        stdout: truncate(&stdout, 2000),
    })
}
