//! Arbitrary bytes as a response frame of every API strait-client decodes, at every version it
//! negotiates (byte 0 picks the API, byte 1 the version). Must never panic or abort; a
//! hostile frame is a typed protocol error naming the API.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(Err(e)) = strait_client::decode::fuzz_response(data) {
        assert!(
            matches!(e.kind(), strait_client::ErrorKind::Protocol(_)),
            "{e:?}"
        );
    }
});
