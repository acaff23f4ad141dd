//! The check behind `topics.start_position` as a timestamp, against a real Tansu broker.

mod control;

use control::{Pair, create};

/// The check behind a timestamp start position, against Tansu: an offset whose record is
/// at least as recent as the time passes; an earlier one (Tansu answers 0 for any time)
/// is a configuration error naming the broker's failing.
#[tokio::test]
async fn a_time_offset_is_checked_against_the_record_it_points_at() {
    use strait_mirror::datapath::probe::check_time_offset;
    let pair = Pair::start().await;
    create(&pair.source, "timed", 1, &[]).await;
    let records: Vec<strait_testkit::TestRecord> = (0..10)
        .map(|i| {
            strait_testkit::TestRecord::new(format!("k{i}"), format!("v{i}"))
                .with_partition(0)
                .with_timestamp(1_700_000_000_000 + i * 1000)
        })
        .collect();
    strait_testkit::rdkafka::produce(
        &pair.source_bootstrap(),
        "timed",
        &records,
        &strait_testkit::rdkafka::ProduceOptions::default(),
    )
    .expect("produce");
    let ts = 1_700_000_005_000;
    check_time_offset(&pair.source, "timed", 0, 5, ts)
        .await
        .expect("record 5 is that recent");
    let e = check_time_offset(&pair.source, "timed", 0, 0, ts)
        .await
        .expect_err("record 0 is older");
    assert!(e.stops_flow(), "a configuration error: {e}");
    assert!(
        e.to_string()
            .contains("does not implement ListOffsets by timestamp"),
        "{e}"
    );
}
