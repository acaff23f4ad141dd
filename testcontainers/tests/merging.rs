//! Coalescing judged by librdkafka, on Apache Kafka. Merging is the one path where Strait
//! writes record bytes it built itself (on by default for small batches:
//! `engine.recompress = "small"`): queued small batches of a partition whose in-flight
//! window is full are merged into one batch, decompressed and recompressed when the codec
//! allows. Here every source batch holds one
//! record with headers, a key and an explicit timestamp, in each of Kafka's codecs; one
//! request in flight per partition (`max_in_flight_per_partition = 1`) keeps the window
//! full while the backlog drains, so the engine merges. The engine's own summary must show
//! fewer batches produced than the source holds (merging happened), and librdkafka, with
//! every batch's CRC-32C checked, must read on the target exactly the source's records,
//! field by field, in order, per partition, to each partition's end.
//!
//! The other side of the default: compressed batches of 4 KiB and more are never merged,
//! so such a batch reaches the target with its compressed records byte for byte as the
//! source broker stored them (only the producer fields of the header, and so the CRC,
//! are the target producer's).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use strait_client::{Client, ClientConfig, FetchOptions, FetchPosition};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::runtime;
use strait_kafka_scenarios::{Kafka, process};
use strait_records::{Compression, Limits, split};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, Codec, ConsumeOptions, ProduceOptions};
use strait_testkit::{RecordHeader, TestRecord};

const PARTITIONS: i32 = 2;
/// Records per partition, one per source batch.
const PER_PARTITION: usize = 600;

/// `PER_PARTITION` records per partition, each with a key, two headers (one with a null
/// value) and an explicit timestamp.
fn records(tag: &str) -> Vec<TestRecord> {
    (0..PARTITIONS)
        .flat_map(|p| {
            (0..PER_PARTITION).map(move |i| {
                let mut r = TestRecord::new(
                    format!("{tag}-k{p}-{i}"),
                    format!("{tag}-value-{p}-{i}-{}", "x".repeat(i % 97)),
                )
                .with_partition(p)
                .with_timestamp(1_700_000_000_000 + i as i64);
                r.headers = vec![
                    RecordHeader::new("trace", format!("t-{i}")),
                    RecordHeader::null("empty"),
                ];
                r
            })
        })
        .collect()
}

/// Per partition, every record to the partition's end (CRCs checked by librdkafka).
fn read(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<TestRecord>> {
    let options = ConsumeOptions {
        to_end: true,
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::default()
    };
    let mut got = rdkafka::consume(bootstrap, topic, &options)
        .unwrap_or_else(|e| panic!("consume {topic}: {e}"));
    got.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<TestRecord>> = BTreeMap::new();
    for r in got {
        out.entry(r.partition).or_default().push(r.to_test_record());
    }
    out
}

/// The number in `N batch(es) produced` of `strait run --once`'s summary.
fn batches_produced(log: &str) -> usize {
    log.lines()
        .rev()
        .filter(|l| l.contains(" batch(es) produced"))
        .filter_map(|l| {
            l.split(" batch(es) produced")
                .next()?
                .rsplit(' ')
                .next()?
                .parse()
                .ok()
        })
        .next()
        .unwrap_or_else(|| panic!("no batch count in the summary:\n{log}"))
}

/// Writes `recs` to a new source topic `topic` with `options`, then copies it with
/// `strait run --once` and the `[engine]` lines given (one request in flight per
/// partition, so the backlog queues and coalescing merges what it is allowed to); returns
/// the run's log.
fn produce_and_copy(
    kafka: &(Kafka, Kafka),
    topic: &str,
    recs: &[TestRecord],
    options: &ProduceOptions,
    engine: &str,
) -> String {
    let (src, dst) = (kafka.0.bootstrap(), kafka.1.bootstrap());
    rdkafka::create_topic(&src, topic, PARTITIONS, &[]).expect("create topic");
    let delivered = rdkafka::produce(&src, topic, recs, options).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "source writes");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        "{}[flows.topics]\ninclude = [\"{topic}\"]\n{SYNC_OFF}[engine]\n\
         max_in_flight_per_partition = 1\n{engine}[metrics]\nenabled = false\n",
        two_cluster_flow(&src, &dst, "10s"),
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let status = process::once(&config, &log, Duration::from_secs(180));
    assert!(
        status.success(),
        "strait run --once: {status}\n{}",
        log_tail(&log)
    );
    std::fs::read_to_string(&log).expect("log")
}

/// Produces `codec` records one per batch, replicates them with `recompress`, and checks.
fn merged_and_read_back(kafka: &(Kafka, Kafka), codec: Codec, recompress: &str) {
    let (src, dst) = (kafka.0.bootstrap(), kafka.1.bootstrap());
    let topic = format!("merge-{}-{recompress}", codec.as_str());
    let recs = records(&topic);
    let options = ProduceOptions {
        codec,
        linger_ms: 0,
        batch_num_messages: Some(1),
        timeout: Duration::from_secs(120),
        ..ProduceOptions::default()
    };
    let engine = format!("recompress = \"{recompress}\"\ncoalesce_max_bytes = \"64KiB\"\n");
    let summary = produce_and_copy(kafka, &topic, &recs, &options, &engine);
    let produced = batches_produced(&summary);
    let source_batches = recs.len();
    println!("{topic}: {source_batches} source batches, {produced} batches produced");
    assert!(
        produced < source_batches,
        "{topic}: nothing was merged ({produced} batches for {source_batches})\n{summary}"
    );

    let want = read(&src, &topic);
    let got = read(&dst, &format!("src.{topic}"));
    assert_eq!(
        want.len(),
        PARTITIONS as usize,
        "{topic}: source partitions"
    );
    for (p, records) in &want {
        assert_eq!(records.len(), PER_PARTITION, "{topic}-{p}: source");
        let copied = got.get(p).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            copied.len(),
            records.len(),
            "{topic}-{p}: record count on the target (read to its end)"
        );
        for (i, (w, g)) in records.iter().zip(copied).enumerate() {
            assert_eq!(w, g, "{topic}-{p}: record {i} differs after merging");
        }
    }
}

#[test]
fn merged_batches_of_every_codec_read_back_by_librdkafka_record_for_record() {
    let kafka = Kafka::pair();
    // `small` (the default) and `fast` merge and recompress lz4, snappy and zstd (gzip
    // goes as it is); `allowed` every codec; an uncompressed backlog is merged without a
    // codec. One-record batches are small under every policy.
    for (codec, recompress) in [
        (Codec::Lz4, "small"),
        (Codec::Zstd, "small"),
        (Codec::None, "fast"),
        (Codec::Lz4, "fast"),
        (Codec::Zstd, "fast"),
        (Codec::Snappy, "fast"),
        (Codec::Gzip, "allowed"),
        (Codec::Lz4, "allowed"),
    ] {
        merged_and_read_back(&kafka, codec, recompress);
    }
}

/// Per batch of `topic`'s `partition`, to its end: codec, record count, and the records
/// section (still compressed) as stored by the broker, read raw with strait-client.
fn raw_batches(bootstrap: &str, topic: &str, partition: i32) -> Vec<(Compression, i32, Bytes)> {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let (leader, _) = client.leader_for(topic, partition).await.expect("leader");
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let position = FetchPosition::new(topic, partition, offset);
            let fetched = client
                .fetch(leader, &[position], &FetchOptions::default())
                .await
                .expect("fetch");
            let p = &fetched.partitions[0];
            assert!(p.error().is_none(), "{topic}-{partition}: {:?}", p.error());
            let set = split(p.records.clone(), &Limits::default()).expect("split");
            for b in set.batches {
                let h = b.header();
                offset = h.base_offset + i64::from(h.last_offset_delta) + 1;
                out.push((h.compression(), h.records_count, b.payload()));
            }
            if offset >= p.high_watermark {
                return out;
            }
        }
    })
}

#[test]
fn under_the_default_large_compressed_batches_reach_the_target_byte_for_byte() {
    let kafka = Kafka::pair();
    let (src, dst) = (kafka.0.bootstrap(), kafka.1.bootstrap());
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Snappy, Codec::Gzip] {
        let topic = format!("forward-{}", codec.as_str());
        // 100 records of ~600 bytes, half of them random hex, per batch: several KiB
        // compressed, over the 4 KiB from which the default forwards as it is.
        let recs: Vec<TestRecord> = (0..PARTITIONS)
            .flat_map(|p| {
                (0..1000u64).map(move |i| {
                    let noise: String = (0..38)
                        .map(|j| {
                            format!(
                                "{:08x}",
                                (i * 7919 + j * 104_729 + p as u64).wrapping_mul(2_654_435_761)
                                    >> 8
                            )
                        })
                        .collect();
                    TestRecord::new(format!("k{p}-{i}"), format!("{noise}-{}", "v".repeat(300)))
                        .with_partition(p)
                })
            })
            .collect();
        let options = ProduceOptions {
            codec,
            linger_ms: 1000,
            batch_num_messages: Some(100),
            timeout: Duration::from_secs(120),
            ..ProduceOptions::default()
        };
        // The default engine (`recompress` not set).
        produce_and_copy(&kafka, &topic, &recs, &options, "");

        for p in 0..PARTITIONS {
            let want = raw_batches(&src, &topic, p);
            let got = raw_batches(&dst, &format!("src.{topic}"), p);
            assert!(
                want.iter()
                    .all(|(_, _, payload)| payload.len() + 61 >= 4 * 1024),
                "{topic}-{p}: the source batches are not all large: {:?}",
                want.iter().map(|b| b.2.len()).collect::<Vec<_>>()
            );
            assert_eq!(want.len(), got.len(), "{topic}-{p}: batch count");
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(w.0, g.0, "{topic}-{p}: batch {i} codec");
                assert_eq!(w.1, g.1, "{topic}-{p}: batch {i} record count");
                assert!(
                    w.2 == g.2,
                    "{topic}-{p}: batch {i}'s compressed records differ"
                );
            }
        }
    }
}
