//! Replays the stored fuzz corpus (`tests/corpus/`) through the same entry points as the
//! cargo-fuzz targets in `crates/client/fuzz`, on stable, on every `cargo test`.
//!
//! * `corpus/response/*`: inputs of the `response` target (byte 0 the API, byte 1 the
//!   version, then a response frame). Files named `hostile-*` are hand-made hostile frames
//!   (huge array counts, strings and bytes longer than the frame, negative lengths) and must
//!   give a typed protocol error naming the API; every other file (inputs the fuzzer found
//!   interesting) must decode or give such an error, and never panic or abort.
//! * `corpus/stream/*`: inputs of the `stream` target (byte 0 the API, then size-prefixed
//!   frames read by the connection's frame reader).
//!
//! To add what a fuzzing run found: copy `crates/client/fuzz/artifacts/<target>/crash-*` (after
//! fixing it) or a few small files of `crates/client/fuzz/corpus/<target>/` here.

use std::path::PathBuf;

use strait_client::ErrorKind;
use strait_client::decode::{fuzz_response, fuzz_stream};

fn files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(dir);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn response_corpus_gives_typed_errors_never_panics() {
    let corpus = files("response");
    assert!(corpus.len() >= 10, "{} files", corpus.len());
    for (name, data) in corpus {
        match fuzz_response(&data) {
            None => assert!(!name.starts_with("hostile-"), "{name}: too short"),
            Some(Ok(())) => assert!(!name.starts_with("hostile-"), "{name} decoded"),
            Some(Err(e)) => {
                assert!(matches!(e.kind(), ErrorKind::Protocol(_)), "{name}: {e:?}");
                if data.len() >= 6 {
                    // Past the correlation id the error names the API.
                    assert!(e.api_key().is_some(), "{name}: {e:?}");
                }
            }
        }
    }
}

#[test]
fn stream_corpus_never_panics() {
    let corpus = files("stream");
    assert!(!corpus.is_empty());
    for (_, data) in corpus {
        fuzz_stream(&data);
    }
}
