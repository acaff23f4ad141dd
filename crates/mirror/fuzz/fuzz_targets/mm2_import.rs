//! MM2 properties -> Strait TOML, which must parse back (see strait_mirror::fuzzing::fuzz_mm2_import).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strait_mirror::fuzzing::fuzz_mm2_import(data));
