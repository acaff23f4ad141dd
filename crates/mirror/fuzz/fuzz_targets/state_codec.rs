//! State-topic keys and values: decode, re-encode, round trip (see strait_mirror::fuzzing::fuzz_state_codec).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strait_mirror::fuzzing::fuzz_state_codec(data));
