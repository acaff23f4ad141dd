//! `strait`: the Strait binary.
//!
//! The replication engine has not landed yet, so the only thing this binary does today is
//! describe itself; every command it will have is listed in README.md as planned.

use clap::Parser;

/// Strait: a pure-Rust Kafka replicator (replication engine not built yet).
#[derive(Parser, Debug)]
#[command(name = "strait", version, about, long_about = None)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
    eprintln!("strait {}: the replication engine is not built yet; see README.md", env!("CARGO_PKG_VERSION"));
    std::process::exit(2);
}
