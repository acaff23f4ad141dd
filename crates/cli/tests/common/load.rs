//! The background producer of numbered records (moved to strait-testkit, where the Apache
//! Kafka scenarios in testcontainers/ use it too).

// Not every test binary that includes common/ uses it.
#[allow(unused_imports)]
pub use strait_testkit::load::NumberedProducer;
