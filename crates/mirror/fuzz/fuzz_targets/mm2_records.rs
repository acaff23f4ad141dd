//! MM2 checkpoint and heartbeat records: decode, re-encode, round trip (see strait_mirror::fuzzing::fuzz_mm2_records).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strait_mirror::fuzzing::fuzz_mm2_records(data));
