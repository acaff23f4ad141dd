use super::*;
use strait_offsets::Precision;

fn mapped(offset: u64) -> Option<FlowCopy> {
    Some(Translation::Mapped {
        offset,
        precision: Precision::Exact,
    })
}

#[test]
fn rule_19_a_range_the_flow_has_not_replicated_yet_is_refused() {
    let not_yet = Some(Translation::NotYetReplicated {
        replicated_end: 5,
        counterpart_end: 5,
    });
    assert!(into_flow_topic(not_yet, 5, 10).is_err());
}

#[test]
fn rule_18_a_partition_the_flow_never_started_takes_any_range() {
    assert_eq!(into_flow_topic(None, 1_000_000, 1_000_000), Ok(()));
}

#[test]
fn rule_20_a_range_within_the_window_is_allowed_and_one_beyond_refused() {
    assert_eq!(into_flow_topic(mapped(100), 200, 50), Ok(()));
    assert_eq!(into_flow_topic(mapped(0), LOOKBACK - 10, 10), Ok(()));
    let e = into_flow_topic(mapped(0), LOOKBACK - 10, 11).unwrap_err();
    assert!(e.contains("foreign writer"), "{e}");
}
