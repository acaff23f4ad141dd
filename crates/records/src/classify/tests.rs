//! Classifying a batch: forward, too large, re-encode (gapped, empty), control.

use crate::test_support::{control_batch, hand_batch, one, raw};
use crate::*;

#[test]
fn classification() {
    let n = ProducerStamp::NONE;
    let dense = one(hand_batch(
        Compression::None,
        0,
        1,
        0,
        n,
        &[raw(0, 1, b"a"), raw(1, 1, b"b")],
    ));
    assert_eq!(dense.classify(1 << 20), Class::Forward);
    assert_eq!(
        dense.classify(10),
        Class::TooLarge {
            size: dense.size(),
            limit: 10
        }
    );
    let gapped = one(hand_batch(
        Compression::Lz4,
        0,
        5,
        0,
        n,
        &[raw(0, 1, b"a"), raw(5, 1, b"b")],
    ));
    assert_eq!(
        gapped.classify(1 << 20),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    assert_eq!(
        gapped.classify(10),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    let empty = one(hand_batch(Compression::None, 0, 3, 0, n, &[]));
    assert_eq!(
        empty.classify(1 << 20),
        Class::NeedsReencode(ReencodeReason::Empty)
    );
    assert_eq!(one(control_batch(0, 1, 1)).classify(0), Class::Control);
}
