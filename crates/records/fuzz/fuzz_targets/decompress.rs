//! Every codec's bounded decompression on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait_records::Compression;
use strait_records::compression::decompress;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let codec = Compression::ALL[usize::from(which) % Compression::ALL.len()];
    let cap = 1 << 20;
    if let Ok(out) = decompress(codec, rest, cap) {
        assert!(out.len() <= cap);
    }
});
