//! strait-testkit: real brokers, an independent client, a fault proxy and test data for
//! Strait's integration tests and benches. A dev-dependency only; it does not depend on
//! `strait-client` (it speaks the little raw Kafka it needs itself).
//!
//! One module per concern:
//!
//! | module | what |
//! |---|---|
//! | [`broker`] | [`TansuBroker`] / [`TansuCluster`]: Tansu processes on free loopback ports, killed on drop (also on panic, with the log tail printed), [`TansuBroker::restart`] |
//! | [`kafka`] | Apache Kafka: [`kafka::KafkaCluster`] (KRaft nodes from the Maven jars, 1 or 3, secure listeners, the StandardAuthorizer; stop, `kill -9`, restart keeping the log) and MirrorMaker 2 ([`kafka::Mm2`], [`kafka::mm2::translate_offsets`]) |
//! | [`probe`] | a raw ApiVersions v0 request over `std::net::TcpStream` ([`probe::api_versions`]) |
//! | [`rdkafka`] | librdkafka (Python confluent-kafka) as an independent client: create topics, produce, consume, group offsets |
//! | [`proxy`] | [`FaultProxy`]: TCP proxy with delay, stall, cut and corrupt; [`TansuBroker::start_behind_proxy`] puts all of a client's traffic through one |
//! | [`netns`] | [`NetNs`]: a network namespace with a veth pair to the host (root, iproute2): `tbf` rate limits, link down; deleted on drop |
//! | [`verify`] | per-partition comparison of source and target records: lost, order, duplicates, foreign |
//! | [`secure`] | [`TestPki`] (per-run certificates), [`SecureFront`] (TLS / SASL PLAIN, SCRAM, OAUTHBEARER / KIP-368 re-auth front end for Tansu), [`SecureBroker`] (a broker advertising its front end), [`TokenEndpoint`] (HTTPS OAuth client-credentials) |
//! | [`data`] | [`TestRecord`] and the seeded generator [`DataGen`] |
//! | [`levels`] | a crate's module levels held against its imports (`crate::x` paths) |
//! | [`load`] | [`load::NumberedProducer`]: a background librdkafka producer of numbered records (`"<partition>:<n>"`) |
//! | [`config`] | the text of a two-cluster, one-flow Strait config ([`config::two_cluster_flow`]) |
//! | [`process`] | a `strait run` process under test ([`process::StraitProcess`]): output to a log file, killed and reaped on drop |
//! | [`paths`] | where the workspace, the Tansu binary, Python and the helper script are |
//! | [`error`] | the [`Error`] type |
//!
//! Tools come from `scripts/install-brokers`: the Tansu binary (`$STRAIT_TANSU_BIN`, default
//! `<workspace>/.tools/tansu/tansu`) and a Python venv with confluent-kafka, scramp and
//! cryptography
//! (`$STRAIT_PYTHON`, default `<workspace>/.tools/venv/bin/python`). Errors say so when
//! they are missing.
//!
//! Tansu differs from Apache Kafka in ways tests must know (memory storage only,
//! ListOffsets(latest) under-reports, `max_wait=0` fetches return nothing, no aborted
//! transactions list): see docs/compatibility.md ("Tansu 0.6 vs Apache Kafka") and
//! `crates/records/tests/data/README.md`.
//!
//! ```no_run
//! # fn main() -> strait_testkit::Result<()> {
//! use strait_testkit::{DataGen, FaultProxy, RecordSpec, TansuCluster, rdkafka};
//!
//! let cluster = TansuCluster::start(2)?; // source and target, independent clusters
//! let (source, target) = (cluster.broker(0), cluster.broker(1));
//! rdkafka::create_topic(&source.bootstrap(), "t", 3, &[])?;
//! let records = DataGen::new(1).records(1000, &RecordSpec { partition: None, ..RecordSpec::default() });
//! rdkafka::produce(&source.bootstrap(), "t", &records, &Default::default())?;
//! let proxy = FaultProxy::start(target.addr())?; // faults between the replicator and the target
//! // ... run the replicator from source.bootstrap() to proxy.bootstrap(), then:
//! let copied = rdkafka::consume(&target.bootstrap(), "t", &rdkafka::ConsumeOptions::count(1000))?;
//! # let _ = (proxy, copied);
//! # Ok(()) }
//! ```

pub mod broker;
pub mod config;
pub mod data;
pub mod error;
pub mod kafka;
pub mod levels;
pub mod load;
pub mod netns;
pub mod paths;
pub mod probe;
pub mod process;
pub mod proxy;
pub mod rdkafka;
pub mod secure;
pub mod verify;

pub use broker::{BrokerOptions, TansuBroker, TansuCluster};
pub use data::{DataGen, RecordHeader, RecordSpec, TestRecord};
pub use error::{Error, Result};
pub use netns::NetNs;
pub use proxy::{Direction, FaultProxy, FrameCorruption};
pub use secure::{
    FrontOptions, SaslMechanism, SaslOptions, SecureBroker, SecureFront, TestPki, TlsOptions,
    TokenEndpoint, TokenEndpointOptions,
};
