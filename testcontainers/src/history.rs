//! A source log with transactions in it, and what a `read_committed` reader finds at an
//! offset: the scenarios that check group translation across markers and aborted data
//! (`groups`, `consumer_protocol`, `mm2_interop`) build and read their logs with these.

use std::time::Duration;

use strait_testkit::TestRecord;
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions, StartOffset, Transaction};

/// Writes 20 records `LABEL-P-I` to each of `partitions` partitions of `topic` with
/// librdkafka, plainly or in one transaction (`transactional.id` `tx-LABEL`) that commits
/// or aborts.
pub fn produce_labelled(
    src: &str,
    topic: &str,
    partitions: i32,
    label: &str,
    transaction: Transaction,
) {
    let records: Vec<TestRecord> = (0..partitions)
        .flat_map(|p| {
            (0..20).map(move |i| TestRecord::new("k", format!("{label}-{p}-{i}")).with_partition(p))
        })
        .collect();
    let opts = ProduceOptions {
        transaction,
        transactional_id: Some(format!("tx-{label}")),
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(src, topic, &records, &opts).expect("produce");
    assert!(
        delivered.iter().all(|d| d.error.is_none()),
        "{label}: {delivered:?}"
    );
}

/// The first record a read_committed consumer of partition `p` starting at `offset` gets:
/// (offset, value); `None` at the end.
pub fn next_record(bootstrap: &str, topic: &str, p: i32, offset: i64) -> Option<(i64, String)> {
    let opts = ConsumeOptions {
        partitions: Some(vec![p]),
        from: StartOffset::Offset(offset),
        idle: Duration::from_secs(5),
        ..ConsumeOptions::count(1)
    };
    let got = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    got.first().map(|r| {
        (
            r.offset,
            String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned(),
        )
    })
}
