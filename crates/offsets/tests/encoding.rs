//! Decoding never panics and never accepts damaged input.

use proptest::prelude::*;
use strait_offsets::{Delta, OffsetMap};

fn gapped(runs: u64) -> OffsetMap {
    let mut map = OffsetMap::with_budget(16);
    for i in 0..runs {
        map.append_dense(i * 11, 10, i * 10).unwrap();
    }
    map
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = OffsetMap::from_snapshot(&bytes, 16);
        let _ = Delta::decode(&bytes);
    }

    /// Overwriting bytes of a valid snapshot is caught (by the checksum, in practice).
    #[test]
    fn damaged_snapshots_are_rejected(
        runs in 0..40u64,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4),
    ) {
        let bytes = gapped(runs).snapshot().bytes;
        let mut damaged = bytes.clone();
        for (index, mask) in edits {
            damaged[index.index(bytes.len())] ^= mask;
        }
        prop_assume!(damaged != bytes);
        prop_assert!(OffsetMap::from_snapshot(&damaged, 16).is_err());
    }

    #[test]
    fn snapshots_round_trip(runs in 0..40u64, budget in 4..64usize) {
        let mut map = gapped(runs);
        let bytes = map.snapshot().bytes;
        // Restoring under a smaller budget coarsens; under the same one it is identical.
        let same = OffsetMap::from_snapshot(&bytes, 16).unwrap();
        prop_assert_eq!(&same, &map);
        let other = OffsetMap::from_snapshot(&bytes, budget).unwrap();
        prop_assert!(other.runs().len() + other.coarse_segments().len() <= budget);
        for c in 0..runs * 11 + 2 {
            let (exact, coarse) = (map.translate(c), other.translate(c));
            prop_assert!(coarse.offset() <= exact.offset());
        }
    }
}
