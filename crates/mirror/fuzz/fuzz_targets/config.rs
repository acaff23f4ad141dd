//! Config text (with an environment) -> substitution -> TOML -> validation (see strait_mirror::fuzzing::fuzz_config).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strait_mirror::fuzzing::fuzz_config(data));
