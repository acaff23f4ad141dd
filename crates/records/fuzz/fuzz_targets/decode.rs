//! Decode the records of every batch (any codec, CRC not required), read control records,
//! re-encode, and run the aborted-transaction filter.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strait_records::{AbortedTransaction, Batches, Limits, ReencodeOptions, filter_aborted};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
    };
    let batches: Vec<_> = Batches::new(Bytes::copy_from_slice(data), limits)
        .map_while(Result::ok)
        .collect();
    for batch in &batches {
        let _ = batch.control_type(&limits);
        let Ok(records) = batch.decode_records(&limits) else {
            continue;
        };
        assert_eq!(records.len(), batch.header().records_count as usize);
        if let Ok(out) = batch.reencode(&ReencodeOptions {
            limits,
            ..ReencodeOptions::default()
        }) {
            // Re-encoding keeps every record, densely numbered.
            let n: usize = out.iter().map(|r| r.source_offsets.len()).sum();
            assert_eq!(n, records.len());
            for r in &out {
                r.batch.verify_crc().expect("re-encoded batches are valid");
                let dense = r
                    .batch
                    .decode_records(&limits)
                    .expect("re-encoded batches decode");
                assert_eq!(dense.len(), r.source_offsets.len());
            }
        }
    }
    let aborted: Vec<AbortedTransaction> = batches
        .iter()
        .map(|b| AbortedTransaction {
            producer_id: b.header().producer_id,
            first_offset: b.header().base_offset,
        })
        .collect();
    let _ = filter_aborted(&batches, &aborted, &limits);
});
