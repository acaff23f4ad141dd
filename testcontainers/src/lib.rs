//! strait-kafka-scenarios: the end-to-end scenarios against Apache Kafka in KRaft mode. The
//! real `strait` binary replicates between Kafka clusters and librdkafka
//! (`strait_testkit::rdkafka`) checks what arrived.
//!
//! The brokers are JVMs from the jars `scripts/install-brokers` brings (the default), or
//! `apache/kafka` containers through testcontainers with `STRAIT_KAFKA_BACKEND=docker`
//! ([`kafka::BACKEND_ENV`]). `scripts/test-kafka` runs the scenarios, and `scripts/test`
//! runs it. A scenario that cannot start its brokers fails; none is skipped.
//!
//! | module | what |
//! |---|---|
//! | [`engine`] | for the Docker backend: is a Docker engine there? (`/_ping` on `DOCKER_HOST` or the default socket) |
//! | [`kafka`] | [`Kafka`]: an Apache Kafka cluster on the selected backend, stopped on drop; partition ends; the per-partition comparison |
//! | [`process`] | [`process::start`], [`process::once`], [`process::stop`]: a `strait run` process ([`Strait`], strait-testkit's guard: killed and reaped on drop); [`strait_binary`] |
//! | [`history`] | a source log with committed and aborted transactions ([`history::produce_labelled`]), and the record a read_committed reader finds at an offset ([`history::next_record`]) |
//! | [`metrics`] | a member's own view: one series of its `/metrics` |
//! | [`group`] | the `strait` group's members and their assignments, as the target's coordinator reports them |
//! | [`wait`] | [`wait::until`]: poll a condition up to a deadline, failing with a diagnosis |

pub mod engine;
pub mod group;
pub mod history;
pub mod kafka;
pub mod metrics;
pub mod process;
pub mod wait;

pub use kafka::Kafka;
pub use process::{Strait, strait_binary};

/// A current-thread Tokio runtime for the few strait-client calls the scenarios make.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
