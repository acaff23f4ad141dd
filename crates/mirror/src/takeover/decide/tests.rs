use bytes::Bytes;

use super::*;

fn rec(offset: i64, v: &str) -> ConsumedRecord {
    ConsumedRecord {
        offset,
        timestamp: 1_000 + i64::from(v.as_bytes()[0]),
        key: Some(Bytes::from(format!("k-{v}"))),
        value: Some(Bytes::from(v.to_owned())),
        headers: vec![(Bytes::from_static(b"h"), Some(Bytes::from(v.to_owned())))],
    }
}

fn log(from: i64, values: &[&str]) -> Vec<ConsumedRecord> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| rec(from + i as i64, v))
        .collect()
}

#[test]
fn an_offset_sync_round_trips_in_mm2_s_layout() {
    let (k, v) = encode_offset_sync(
        "orders",
        3,
        OffsetSync {
            upstream: 1_000,
            downstream: 7,
        },
    );
    assert_eq!(k, [0, 6, b'o', b'r', b'd', b'e', b'r', b's', 0, 0, 0, 3]);
    assert_eq!(&v[..8], &1_000i64.to_be_bytes());
    let (t, p, s) = decode_offset_sync(&k, &v).expect("decodes");
    assert_eq!(
        (t.as_str(), p, s.upstream, s.downstream),
        ("orders", 3, 1_000, 7)
    );
    assert!(decode_offset_sync(&k[..5], &v).is_err());
    assert!(decode_offset_sync(&k, &v[..12]).is_err());
}

#[test]
fn rule_2_the_newest_sync_at_or_below_the_last_record_gives_the_candidate() {
    let syncs = [
        OffsetSync {
            upstream: 100,
            downstream: 0,
        },
        OffsetSync {
            upstream: 250,
            downstream: 140,
        },
        OffsetSync {
            upstream: 400,
            downstream: 290,
        },
    ];
    assert_eq!(candidate_from_syncs(200, &syncs), Some(310));
    assert_eq!(candidate_from_syncs(140, &syncs), Some(250));
    assert_eq!(candidate_from_syncs(-1, &syncs), None);
    assert_eq!(candidate_from_syncs(5, &[]), None);
}

#[test]
fn rule_3_the_target_s_last_records_found_on_the_source_prove_the_start() {
    let source = log(100, &["a", "b", "c", "d", "e", "f"]);
    let tail = log(40, &["b", "c", "d"]);
    let start = prove(&tail, &source, Hint::Timestamp(101), (100, 106)).expect("proven");
    assert_eq!(start.source_next, 104);
    assert_eq!(
        start.proof,
        Proof::Content {
            target_offset: 42,
            source_offset: 103,
            compared: 3,
            hint: Hint::Timestamp(101),
        }
    );
}

#[test]
fn rule_3_source_records_the_target_lacks_do_not_break_the_proof() {
    // "x" was aborted on the source and never copied.
    let source = log(0, &["a", "b", "x", "c", "d"]);
    let tail = log(7, &["b", "c"]);
    let start = prove(&tail, &source, Hint::OffsetSync(3), (0, 5)).expect("proven");
    assert_eq!(start.source_next, 4);
}

#[test]
fn rule_3_a_changed_record_is_no_match() {
    let source = log(0, &["a", "b", "c"]);
    let mut tail = log(0, &["b", "c"]);
    tail[1].headers.clear();
    assert!(matches!(
        prove(&tail, &source, Hint::Timestamp(0), (0, 3)),
        Err(Unproven::NoMatch {
            target_offset: 1,
            ..
        })
    ));
    let mut tail = log(0, &["c"]);
    tail[0].timestamp += 1;
    assert!(matches!(
        prove(&tail, &source, Hint::Timestamp(0), (0, 3)),
        Err(Unproven::NoMatch { .. })
    ));
}

#[test]
fn rule_3_earlier_tail_records_must_precede_the_match_on_the_source() {
    let source = log(0, &["c", "a", "b"]);
    let tail = log(0, &["b", "c"]);
    assert!(matches!(
        prove(&tail, &source, Hint::Timestamp(0), (0, 3)),
        Err(Unproven::NoMatch { .. })
    ));
}

#[test]
fn rule_3_repeated_content_is_refused_unless_an_offset_sync_names_one() {
    let source = log(0, &["a", "b", "a", "b"]);
    let tail = log(0, &["a", "b"]);
    assert_eq!(
        prove(&tail, &source, Hint::Timestamp(0), (0, 4)),
        Err(Unproven::Ambiguous {
            compared: 2,
            offsets: vec![1, 3],
        })
    );
    let start = prove(&tail, &source, Hint::OffsetSync(3), (0, 4)).expect("named");
    assert_eq!(start.source_next, 4);
    assert!(matches!(
        prove(&tail, &source, Hint::OffsetSync(2), (0, 4)),
        Err(Unproven::Ambiguous { .. })
    ));
}

#[test]
fn rule_1_a_target_that_moves_is_still_written() {
    assert_eq!(quiet(Some(10), 10), Ok(()));
    assert_eq!(
        quiet(Some(10), 12),
        Err(Unproven::StillWritten {
            before: 10,
            after: 12
        })
    );
}

#[test]
fn rule_1_a_written_partition_the_watch_did_not_see_is_unwatched_not_grown_from_minus_one() {
    assert_eq!(quiet(None, 12), Err(Unproven::Unwatched { after: 12 }));
}
