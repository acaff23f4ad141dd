//! `strait-kafka [--production-jvm] [CLUSTERS]`: starts CLUSTERS (default 2) independent
//! single-node Apache Kafka clusters from the testkit's jars (`--production-jvm`: G1 and
//! the optimising compiler, as Kafka's scripts run it, for benchmarks), prints one
//! `BOOTSTRAP <i> <host:port> <folder>` line each, and keeps them until its standard input
//! closes (Ctrl-D, or the parent dies).
//! For trying Strait against real Kafka by hand.

use std::io::Read;

use strait_testkit::kafka::{KafkaCluster, KafkaOptions};

fn main() {
    let mut production = false;
    let mut n: usize = 2;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--production-jvm" => production = true,
            a => match a.parse() {
                Ok(x) if x > 0 => n = x,
                _ => {
                    eprintln!("usage: strait-kafka [--production-jvm] [CLUSTERS]");
                    std::process::exit(2);
                }
            },
        }
    }
    let options = || {
        let o = KafkaOptions::default();
        if production { o.production_jvm() } else { o }
    };
    let clusters: Vec<KafkaCluster> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| s.spawn(|| KafkaCluster::start(options())))
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    eprintln!("strait-kafka: {e}");
                    std::process::exit(1);
                }
                Err(_) => std::process::exit(1),
            })
            .collect()
    });
    for (i, c) in clusters.iter().enumerate() {
        println!("BOOTSTRAP {i} {} {}", c.bootstrap(), c.dir().display());
    }
    eprintln!(
        "strait-kafka: Apache Kafka {} x{n}; close stdin to stop",
        clusters[0].version()
    );
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
