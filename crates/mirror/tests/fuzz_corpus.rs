//! The cargo-fuzz targets of `crates/mirror/fuzz`, on stable: each target's entry point
//! (`strait_mirror::fuzzing`) runs over every file of its stored corpus in
//! `tests/fuzz-corpus/<target>/` — hand-made hostile inputs and what the fuzzer found —
//! so the targets cannot rot and known crashers stay fixed.
//!
//! `STRAIT_FUZZ_ITERS=N cargo test -p strait-mirror --test fuzz_corpus -- --ignored`
//! also runs N random mutations of each corpus file through its target (a bounded,
//! stable-toolchain stand-in for the fuzzer; `STRAIT_FUZZ_SEED` picks the seed).

use std::path::{Path, PathBuf};

use strait_mirror::fuzzing;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("state_codec", fuzzing::fuzz_state_codec),
    ("mm2_records", fuzzing::fuzz_mm2_records),
    ("config", fuzzing::fuzz_config),
    ("mm2_import", fuzzing::fuzz_mm2_import),
];

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "{}: expected a corpus of hostile inputs",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

fn run_corpus(target: &str) {
    let f = TARGETS.iter().find(|(n, _)| *n == target).unwrap().1;
    for (path, bytes) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| f(&bytes));
        assert!(outcome.is_ok(), "{target}: {} panicked", path.display());
    }
}

#[test]
fn state_codec_corpus() {
    run_corpus("state_codec");
}

#[test]
fn mm2_records_corpus() {
    run_corpus("mm2_records");
}

#[test]
fn config_corpus() {
    run_corpus("config");
}

#[test]
fn mm2_import_corpus() {
    run_corpus("mm2_import");
}

/// xorshift64*: enough randomness for mutations, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A few libFuzzer-like mutations: flip, set, insert, delete, duplicate, splice.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff$\\{}[]\"'#=:\n.-";
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(6) {
            0 if at < input.len() => input[at] ^= 1 << rng.below(8),
            1 if at < input.len() => input[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => input.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            3 if at < input.len() => {
                let n = rng.below(input.len() - at).max(1);
                input.drain(at..at + n);
            }
            4 if at < input.len() => {
                let n = rng.below((input.len() - at).min(64)).max(1);
                let chunk = input[at..at + n].to_vec();
                input.splice(at..at, chunk);
            }
            _ if !other.is_empty() => {
                let from = rng.below(other.len());
                let n = rng.below((other.len() - from).min(64)).max(1);
                input.splice(at..at, other[from..from + n].iter().copied());
            }
            _ => {}
        }
        input.truncate(1 << 16);
    }
}

/// Random mutations of the corpus through every target; opt-in (`STRAIT_FUZZ_ITERS`).
#[test]
#[ignore = "bounded random fuzzing on stable; set STRAIT_FUZZ_ITERS"]
fn random_mutations() {
    let iters: usize = std::env::var("STRAIT_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = std::env::var("STRAIT_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    for (target, f) in TARGETS {
        let files = corpus(target);
        let mut rng = Rng(seed | 1);
        for i in 0..iters {
            let (_, base) = &files[rng.below(files.len())];
            let (_, other) = &files[rng.below(files.len())];
            let mut input = base.clone();
            mutate(&mut rng, &mut input, other);
            let outcome = std::panic::catch_unwind(|| f(&input));
            assert!(
                outcome.is_ok(),
                "{target}: iteration {i} (seed {seed}) panicked on {input:?}"
            );
        }
    }
}
