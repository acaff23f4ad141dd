//! Reading an exactly-once target as a `read_committed` consumer does on a broker that
//! lists aborted transactions. Tansu sends no aborted list in Fetch, so librdkafka also
//! returns the batches of aborted transactions there (docs/compatibility.md): each target
//! partition is also read with strait-client's marker-resolving consumer, and librdkafka's
//! records are kept only at offsets whose transaction committed. Against Apache Kafka that
//! filter keeps everything.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use strait_client::{Client, ClientConfig, FetchOptions, PartitionConsumer};
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Per partition (`0..partitions`), the offsets of records whose transaction committed
/// (or that are not transactional), by the markers in the log.
pub fn committed_offsets(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, BTreeSet<i64>> {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let mut out = BTreeMap::new();
        for p in 0..partitions {
            let opts = FetchOptions {
                max_wait: Duration::from_millis(50),
                ..FetchOptions::default()
            };
            let mut c = PartitionConsumer::new(client.clone(), topic, p, 0)
                .with_options(opts)
                .resolving_markers();
            let mut offsets = BTreeSet::new();
            loop {
                for r in c.poll().await.expect("poll") {
                    offsets.insert(r.offset);
                }
                if c.high_watermark() >= 0 && c.position() >= c.high_watermark() {
                    break;
                }
            }
            out.insert(p, offsets);
        }
        out
    })
}

/// Values per partition in offset order, read by librdkafka (`isolation`), keeping only
/// the offsets in `keep` when given.
pub fn read(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
    keep: Option<&BTreeMap<i32, BTreeSet<i64>>>,
) -> BTreeMap<i32, Vec<String>> {
    let opts = ConsumeOptions {
        isolation,
        idle: Duration::from_secs(3),
        ..ConsumeOptions::until_idle(Duration::from_secs(3))
    };
    let mut records = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in records {
        if let Some(keep) = keep
            && !keep
                .get(&r.partition)
                .is_some_and(|k| k.contains(&r.offset))
        {
            continue;
        }
        let v = r.value.map(|v| String::from_utf8_lossy(&v).into_owned());
        out.entry(r.partition)
            .or_default()
            .push(v.unwrap_or_default());
    }
    out
}

/// The target topic read as a read_committed consumer sees it (see the module doc).
pub fn target_committed(dst: &str, topic: &str, partitions: i32) -> BTreeMap<i32, Vec<String>> {
    let keep = committed_offsets(dst, topic, partitions);
    read(dst, topic, Isolation::ReadCommitted, Some(&keep))
}

/// Every record of the source `topic` on the target `target_topic` exactly once, in order,
/// per partition.
pub fn assert_exactly_once(
    (src, topic): (&str, &str),
    (dst, target_topic): (&str, &str),
    partitions: i32,
    produced: u64,
    log: &str,
) {
    let source = read(src, topic, Isolation::ReadCommitted, None);
    let total: usize = source.values().map(Vec::len).sum();
    assert_eq!(total as u64, produced, "the source holds what was produced");
    let target = target_committed(dst, target_topic, partitions);
    for p in 0..partitions {
        let s = source.get(&p).cloned().unwrap_or_default();
        let t = target.get(&p).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        let dups: Vec<&String> = t.iter().filter(|v| !seen.insert(v.as_str())).collect();
        let lost = s.iter().filter(|v| !seen.contains(v.as_str())).count();
        assert!(
            dups.is_empty() && lost == 0 && t == s,
            "partition {p}: {} source records, {} on the target, {} duplicates (first {:?}), \
             {lost} lost\n{log}",
            s.len(),
            t.len(),
            dups.len(),
            dups.first()
        );
    }
}
