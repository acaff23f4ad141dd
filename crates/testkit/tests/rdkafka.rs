//! The librdkafka helper (py/rdkafka_tool.py) through its Rust wrappers, on a real Tansu.

use bytes::Bytes;
use strait_testkit::rdkafka::{
    self, Codec, ConsumeOptions, Isolation, ProduceOptions, StartOffset, TimestampType, Transaction,
};
use strait_testkit::{DataGen, Error, RecordSpec, TansuBroker, TestRecord};

#[test]
fn produce_and_consume_round_trip_keeps_everything() {
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    rdkafka::create_topic(&bs, "round-trip", 2, &[("retention.ms", "3600000")]).unwrap();

    let mut g = DataGen::new(7);
    let mut records = g.edge_cases(0);
    records.extend(g.records(
        50,
        &RecordSpec {
            partition: Some(1),
            headers: 2,
            ..RecordSpec::default()
        },
    ));
    let delivered = rdkafka::produce(
        &bs,
        "round-trip",
        &records,
        &ProduceOptions {
            codec: Codec::Zstd,
            idempotence: true,
            ..ProduceOptions::default()
        },
    )
    .unwrap();
    assert_eq!(delivered.len(), records.len());
    assert_eq!(delivered[0].partition, 0);
    assert_eq!(delivered[0].offset, Some(0));
    assert_eq!(delivered.last().unwrap().partition, 1);
    assert_eq!(delivered.last().unwrap().offset, Some(49));

    let read = rdkafka::consume(&bs, "round-trip", &ConsumeOptions::count(records.len())).unwrap();
    assert_eq!(read.len(), records.len());
    // Sorted by partition then offset: the same order we produced in.
    let back: Vec<TestRecord> = read.iter().map(|r| r.to_test_record()).collect();
    assert_eq!(back, records);
    assert!(read.iter().all(|r| r.topic == "round-trip"));
    assert!(
        read.iter()
            .all(|r| r.timestamp_type == TimestampType::CreateTime)
    );
    assert_eq!(read[3].value, None, "tombstone");
    assert_eq!(read[1].key, None, "null key");
    assert_eq!(read[2].key, Some(Bytes::new()), "empty key");

    // One partition, from an offset.
    let tail = rdkafka::consume(
        &bs,
        "round-trip",
        &ConsumeOptions {
            partitions: Some(vec![1]),
            from: StartOffset::Offset(45),
            count: Some(5),
            ..ConsumeOptions::default()
        },
    )
    .unwrap();
    let offsets: Vec<i64> = tail.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![45, 46, 47, 48, 49]);
}

#[test]
fn every_codec_round_trips() {
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    for codec in Codec::ALL {
        let topic = format!("codec-{}", codec.as_str());
        let records = DataGen::new(1).records(
            20,
            &RecordSpec {
                compressible: true,
                ..RecordSpec::default()
            },
        );
        let options = ProduceOptions {
            codec,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&bs, &topic, &records, &options).unwrap();
        let read = rdkafka::consume(&bs, &topic, &ConsumeOptions::count(20)).unwrap();
        let back: Vec<TestRecord> = read.iter().map(|r| r.to_test_record()).collect();
        assert_eq!(back, records, "{codec:?}");
    }
}

#[test]
fn transactions_commit_and_abort() {
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    rdkafka::create_topic(&bs, "txn", 1, &[]).unwrap();
    let mut g = DataGen::new(3);
    let spec = RecordSpec::default();

    // Aborted without flushing first: librdkafka purges the records, nothing reaches
    // the log.
    let aborted = g.records(3, &spec);
    let delivered = rdkafka::produce(
        &bs,
        "txn",
        &aborted,
        &ProduceOptions {
            transaction: Transaction::Abort,
            flush_before_end: false,
            linger_ms: 1000,
            ..ProduceOptions::default()
        },
    )
    .unwrap();
    assert!(
        delivered.iter().all(|d| d.offset.is_none()),
        "{delivered:?}"
    );

    let committed = g.records(4, &spec);
    let delivered = rdkafka::produce(
        &bs,
        "txn",
        &committed,
        &ProduceOptions {
            transaction: Transaction::Commit,
            ..ProduceOptions::default()
        },
    )
    .unwrap();
    assert!(delivered.iter().all(|d| d.offset.is_some()));

    let read = rdkafka::consume(
        &bs,
        "txn",
        &ConsumeOptions {
            isolation: Isolation::ReadCommitted,
            idle: std::time::Duration::from_secs(2),
            ..ConsumeOptions::default()
        },
    )
    .unwrap();
    let back: Vec<TestRecord> = read.iter().map(|r| r.to_test_record()).collect();
    assert_eq!(back, committed);
}

#[test]
fn group_offsets_commit_and_list() {
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    rdkafka::create_topic(&bs, "g-topic", 3, &[]).unwrap();
    assert!(
        rdkafka::list_group_offsets(&bs, "group-a")
            .unwrap()
            .is_empty()
    );
    rdkafka::commit_group_offsets(&bs, "group-a", "g-topic", &[(0, 10), (2, 7)]).unwrap();
    let offsets = rdkafka::list_group_offsets(&bs, "group-a").unwrap();
    let got: Vec<(String, i32, i64)> = offsets
        .into_iter()
        .map(|o| (o.topic, o.partition, o.offset))
        .collect();
    assert_eq!(
        got,
        vec![("g-topic".into(), 0, 10), ("g-topic".into(), 2, 7)]
    );
}

#[test]
fn errors_carry_the_tools_message_and_stderr() {
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    rdkafka::create_topic(&bs, "twice", 1, &[]).unwrap();
    rdkafka::create_topic_if_missing(&bs, "twice", 1, &[]).unwrap();
    let err = rdkafka::create_topic(&bs, "twice", 1, &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Tool { .. }), "{msg}");
    assert!(msg.contains("TOPIC_ALREADY_EXISTS"), "{msg}");
    assert!(msg.contains("Traceback"), "stderr is included: {msg}");
}

/// The one target reader sees what a reader capped at the source's count cannot: a
/// duplicate at the very end of the last partition, and a foreign record.
#[test]
fn read_to_end_counts_a_duplicate_at_the_end_of_the_last_partition() {
    use strait_testkit::verify::{check, read_to_end, read_to_end_if_exists};
    let broker = TansuBroker::start().unwrap();
    let bs = broker.bootstrap();
    let values = |vs: &[&str], p: i32| -> Vec<TestRecord> {
        vs.iter()
            .map(|v| TestRecord::new("k", v.to_string()).with_partition(p))
            .collect()
    };
    for t in ["source", "target"] {
        rdkafka::create_topic(&bs, t, 2, &[]).unwrap();
    }
    let mut source = values(&["a", "b"], 0);
    source.extend(values(&["c", "d"], 1));
    let mut target = values(&["a", "b"], 0);
    // The last partition ends with a duplicate of "d" and a record the source never had.
    target.extend(values(&["c", "d", "d", "z"], 1));
    rdkafka::produce(&bs, "source", &source, &ProduceOptions::default()).unwrap();
    rdkafka::produce(&bs, "target", &target, &ProduceOptions::default()).unwrap();

    let s = read_to_end(&bs, "source", Isolation::ReadUncommitted).unwrap();
    let t = read_to_end(&bs, "target", Isolation::ReadUncommitted).unwrap();
    let report = check(&s, &t);
    let total = report.total();
    assert_eq!(
        (total.lost, total.duplicates, total.foreign),
        (0, 1, 1),
        "{report}"
    );
    assert_eq!(t[&1].len(), 4, "read past the source's count");
    assert!(
        read_to_end_if_exists(&bs, "never-created", Isolation::ReadUncommitted)
            .unwrap()
            .is_empty()
    );
}
