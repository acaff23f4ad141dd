//! strait-kafka-scenarios: the end-to-end scenarios of `tests/` and `crates/cli/tests/`
//! (fidelity, transactions, consumer groups, crash, scale-out) against Apache Kafka in
//! KRaft mode, through testcontainers. The real `strait` binary replicates between two
//! Kafka containers and librdkafka (`strait_testkit::rdkafka`) checks what arrived.
//!
//! The tests need a Docker engine that can pull `apache/kafka`: they are `#[ignore]`d (so
//! `cargo test --workspace` does not run them), `scripts/test-kafka` runs them with
//! `--ignored`, and each one starts with [`engine::require`], which fails the test (never
//! skips it) when no engine answers. `scripts/test` compiles them so they cannot rot.
//!
//! | module | what |
//! |---|---|
//! | [`engine`] | is a Docker engine there? (`/_ping` on `DOCKER_HOST` or the default socket) |
//! | [`kafka`] | [`Kafka`]: one single-node Apache Kafka container, removed on drop; partition ends |
//! | [`process`] | [`process::start`], [`process::once`], [`process::stop`]: a `strait run` process ([`Strait`], strait-testkit's guard: killed and reaped on drop); [`strait_binary`] |
//! | [`metrics`] | a member's own view: one series of its `/metrics` |
//! | [`group`] | the `strait` group's members and their assignments, as the target's coordinator reports them |
//! | [`wait`] | [`wait::until`]: poll a condition up to a deadline, failing with a diagnosis |

pub mod engine;
pub mod group;
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
