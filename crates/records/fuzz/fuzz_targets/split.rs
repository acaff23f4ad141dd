//! Split a record set, parse every header, verify, patch and classify every batch.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strait_records::{Batches, Limits, ProducerStamp};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
    };
    let set = Bytes::copy_from_slice(data);
    let mut batches = Batches::new(set.clone(), limits);
    let mut covered = 0;
    for batch in batches.by_ref() {
        let Ok(batch) = batch else { return };
        assert_eq!(batch.position(), covered);
        covered += batch.size();
        let h = batch.header();
        assert_eq!(h.total_len(), batch.size());
        let fast = batch.verify_and_patch(ProducerStamp::NONE);
        let slow = batch.patch(ProducerStamp::NONE);
        assert_eq!(
            slow.payload().as_ptr(),
            set[batch.position() + 61..].as_ptr()
        );
        // When the input CRC is valid, both ways of patching must agree.
        if let Ok(fast) = fast {
            assert_eq!(fast.to_contiguous(), slow.to_contiguous());
        }
        let _ = batch.classify(1 << 16);
    }
    // Whole batches plus the trimmed tail account for every byte.
    assert_eq!(covered + batches.trimmed(), data.len());
});
