//! `strait-kafka [CLUSTERS]`: starts CLUSTERS (default 2) independent single-node Apache
//! Kafka clusters from the testkit's jars, prints one `BOOTSTRAP <i> <host:port> <folder>`
//! line each, and keeps them until its standard input closes (Ctrl-D, or the parent dies).
//! For trying Strait against real Kafka by hand.

use std::io::Read;

use strait_testkit::kafka::{KafkaCluster, KafkaOptions};

fn main() {
    let n: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 2,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: strait-kafka [CLUSTERS]");
            std::process::exit(2);
        }
    };
    let clusters: Vec<KafkaCluster> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| s.spawn(|| KafkaCluster::start(KafkaOptions::default())))
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
