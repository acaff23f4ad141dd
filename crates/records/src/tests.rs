//! Crate-wide: no input makes the crate panic, through every entry point ([`fuzz_body`]).

use bytes::Bytes;
use proptest::prelude::*;

use crate::test_support::{Raw, hand_batch, raw};
use crate::*;

proptest! {
    #[test]
    fn no_panic_on_arbitrary_record_sets(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        fuzz_body(&data);
    }

    #[test]
    fn no_panic_on_mutated_batches(
        codec in 0u8..5,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let codec = Compression::from_id(codec).unwrap();
        let recs: Vec<Raw> = (0..5).map(|i| raw(i, i64::from(i), b"some value bytes")).collect();
        let mut b = hand_batch(codec, 0, 4, 0, ProducerStamp::NONE, &recs).to_vec();
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x;
        }
        // Skip the CRC so that the decoders see the damage.
        fuzz_body(&b);
    }
}

/// Everything a fuzzer should be able to throw at the crate: split, header, CRC, patch,
/// classify, decode, control records, re-encode, aborted filter. Never panics.
pub(crate) fn fuzz_body(data: &[u8]) {
    let limits = Limits {
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
    };
    let set = Bytes::copy_from_slice(data);
    let mut batches = Vec::new();
    let mut it = Batches::new(set, limits);
    for b in it.by_ref() {
        let Ok(b) = b else { break };
        let _ = b.verify_crc();
        let p = b.patch(ProducerStamp::NONE);
        assert_eq!(p.size(), b.size());
        let _ = b.verify_and_patch(ProducerStamp::NONE);
        let _ = b.classify(1 << 20);
        let _ = b.control_type(&limits);
        if let Ok(records) = b.records(&limits) {
            for r in records {
                if r.is_err() {
                    break;
                }
            }
        }
        let _ = b.reencode(&ReencodeOptions {
            limits,
            ..ReencodeOptions::default()
        });
        batches.push(b);
    }
    let _ = it.trimmed();
    let aborted = [AbortedTransaction {
        producer_id: 0,
        first_offset: 0,
    }];
    let _ = filter_aborted(&batches, &aborted, &limits);
    for policy in [
        CompressedPolicy::Never,
        CompressedPolicy::RecompressFast,
        CompressedPolicy::Recompress,
    ] {
        let opts = MergeOptions {
            limits,
            ..MergeOptions::new(1 << 10).compressed(policy)
        };
        let _ = merge(&batches, &opts);
    }
    // The bytes as a lone records section and as compressed data of each codec.
    for codec in Compression::ALL {
        let _ = compression::decompress(codec, data, 1 << 20);
    }
}
