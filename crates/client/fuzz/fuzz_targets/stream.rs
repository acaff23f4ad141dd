//! Arbitrary bytes as a stream of size-prefixed response frames, split by the connection's
//! frame reader and each decoded as the API byte 0 picks, at the negotiable versions in turn.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strait_client::decode::fuzz_stream(data);
});
