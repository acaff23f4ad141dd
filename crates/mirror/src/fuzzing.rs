//! Fuzz entry points, shared by the cargo-fuzz targets in `crates/mirror/fuzz` and the
//! stored-corpus test `tests/fuzz_corpus.rs` (which runs on stable in CI). Not an API.
//!
//! Each function takes arbitrary bytes, must return without panicking, and panics
//! (an `assert!`) only when a property of the code under test fails. Every length comes
//! from the input, so work and memory are bounded by its size.

use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap};
use uuid::Uuid;

use crate::config::env::substitute;
use crate::config::mm2::{import_mm2, properties};
use crate::config::{load_str, parse_str};
use crate::groups::Checkpoint;
use crate::heartbeat::Heartbeat;
use crate::state::codec::{self, PartitionState};
use crate::state::replay;

/// Splits `data` in two: the first two bytes (big-endian) give the length of the first
/// part, capped at what is left.
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data {
        [a, b, rest @ ..] => {
            rest.split_at(usize::from(u16::from_be_bytes([*a, *b])).min(rest.len()))
        }
        _ => (data, &[]),
    }
}

/// A string made from `bytes` (lossy) of at most `max` bytes, cut at a char boundary.
fn string(bytes: &[u8], max: usize) -> String {
    let mut s = String::from_utf8_lossy(bytes).into_owned();
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// A fixed-size array from the front of `bytes`, zero-padded.
fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = bytes.len().min(N);
    a[..n].copy_from_slice(&bytes[..n]);
    a
}

/// The state topic's key and value codecs ([`codec`], and [`replay`] for replay records).
///
/// - the whole input, as a key and as a value: decodes or fails; what decodes re-encodes
///   to the same bytes (the format has one encoding per value), and a decoded snapshot is
///   handed to [`OffsetMap::from_snapshot`];
/// - a key and a value built from the input: `decode(encode(x)) == x`.
pub fn fuzz_state_codec(data: &[u8]) {
    if let Ok((topic, partition)) = codec::decode_key(data) {
        assert_eq!(codec::encode_key(&topic, partition), data, "key re-encodes");
    }
    if let Ok(state) = codec::decode_value(data) {
        assert_eq!(codec::encode_value(&state), data, "value re-encodes");
        let _ = OffsetMap::from_snapshot(&state.snapshot, DEFAULT_RUN_BUDGET);
    }

    let (head, snapshot) = split(data);
    let topic = string(head, u16::MAX as usize);
    let partition = i32::from_be_bytes(array(snapshot));
    let key = codec::encode_key(&topic, partition);
    assert_eq!(codec::decode_key(&key), Ok((topic.clone(), partition)));
    let state = PartitionState {
        topic_id: Uuid::from_bytes(array(head)),
        target_topic: topic,
        snapshot: snapshot.to_vec(),
    };
    assert_eq!(codec::decode_value(&codec::encode_value(&state)), Ok(state));

    replay_codec(data, partition);
}

/// The replay records sharing the state topic ([`replay`]): the same two properties as
/// [`fuzz_state_codec`]'s, with the same input split (`partition`: the one it read).
fn replay_codec(data: &[u8], partition: i32) {
    let (head, snapshot) = split(data);
    if let Ok(key) = replay::decode_replay_key(data) {
        assert_eq!(
            replay::encode_replay_key(&key),
            data,
            "replay key re-encodes"
        );
    }
    if let Ok(state) = replay::decode_replay_value(data) {
        assert_eq!(
            replay::encode_replay_value(&state),
            data,
            "replay value re-encodes"
        );
        let _ = OffsetMap::from_snapshot(&state.snapshot, DEFAULT_RUN_BUDGET);
    }
    let key = replay::ReplayKey {
        id: string(head, u16::MAX as usize),
        run: u32::from_be_bytes(array(snapshot)),
        partition,
    };
    assert_eq!(
        replay::decode_replay_key(&replay::encode_replay_key(&key)),
        Ok(key)
    );
    let n = i64::from_be_bytes(array(snapshot));
    let state = replay::ReplayState {
        status: if n % 2 == 0 {
            replay::ReplayStatus::Copying
        } else {
            replay::ReplayStatus::Done
        },
        topic_id: Uuid::from_bytes(array(head)),
        source_topic: string(head, u16::MAX as usize),
        target_topic: string(snapshot, u16::MAX as usize),
        from_ms: n,
        until_ms: (n % 3 != 0).then_some(n.wrapping_mul(7)),
        start: n.wrapping_add(1),
        end: n.wrapping_sub(1),
        partitions: u32::from_be_bytes(array(head)),
        snapshot: snapshot.to_vec(),
    };
    assert_eq!(
        replay::decode_replay_value(&replay::encode_replay_value(&state)),
        Ok(state)
    );
}

/// MM2's checkpoint and heartbeat records ([`Checkpoint`], [`Heartbeat`]).
///
/// - the input split into a key and a value: decodes or fails; what decodes re-encodes
///   to a prefix of the input (trailing bytes are ignored, as Java's `Schema.read` does)
///   and decodes again to the same record;
/// - records built from the input: `decode(encode(x)) == x`.
pub fn fuzz_mm2_records(data: &[u8]) {
    let (key, value) = split(data);
    if let Ok(c) = Checkpoint::decode(key, value) {
        let (k, v) = (c.encode_key(), c.encode_value());
        assert!(
            key.starts_with(&k) && value.starts_with(&v),
            "checkpoint re-encodes"
        );
        assert_eq!(Checkpoint::decode(&k, &v).as_ref(), Ok(&c));
    }
    if let Ok(h) = Heartbeat::decode(key, value) {
        let (k, v) = (h.encode_key(), h.encode_value());
        assert!(
            key.starts_with(&k) && value.starts_with(&v),
            "heartbeat re-encodes"
        );
        assert_eq!(Heartbeat::decode(&k, &v).as_ref(), Ok(&h));
    }

    let (a, rest) = split(value);
    let (b, rest) = split(rest);
    let max = i16::MAX as usize;
    let numbers = array::<20>(key);
    let c = Checkpoint {
        group: string(a, max),
        topic: string(b, max),
        partition: i32::from_be_bytes(array(&numbers[..4])),
        upstream_offset: i64::from_be_bytes(array(&numbers[4..12])),
        downstream_offset: i64::from_be_bytes(array(&numbers[12..])),
        metadata: string(rest, max),
    };
    assert_eq!(
        Checkpoint::decode(&c.encode_key(), &c.encode_value()).as_ref(),
        Ok(&c)
    );
    let h = Heartbeat {
        source_alias: c.group,
        target_alias: c.topic,
        timestamp: c.upstream_offset,
    };
    assert_eq!(
        Heartbeat::decode(&h.encode_key(), &h.encode_value()).as_ref(),
        Ok(&h)
    );
}

/// The config loader: env substitution, TOML, deserialization and validation.
///
/// The input is `NAME=VALUE` lines (the environment), a NUL byte, then the config text
/// (invalid UTF-8 replaced, as the file reader would refuse it); without a NUL it is all
/// text and the environment is empty. Properties: text without `$` is unchanged by
/// substitution; what loads also parses; errors render.
pub fn fuzz_config(data: &[u8]) {
    let (env, text) = match data.iter().position(|b| *b == 0) {
        Some(n) => (&data[..n], &data[n + 1..]),
        None => (&[][..], data),
    };
    let env = String::from_utf8_lossy(env);
    let vars: Vec<(&str, &str)> = env.lines().filter_map(|l| l.split_once('=')).collect();
    let lookup = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    };
    let text = String::from_utf8_lossy(text);

    match substitute(&text, &lookup) {
        Ok(out) if !text.contains('$') => assert_eq!(out, text, "nothing to substitute"),
        Ok(_) => {}
        Err(problems) => assert!(!problems.is_empty()),
    }
    let parsed = parse_str(&text, "fuzz.toml", &lookup);
    match load_str(&text, "fuzz.toml", &lookup) {
        Ok(_) => assert!(parsed.is_ok(), "loads but does not parse"),
        Err(e) => {
            assert!(!e.problems().is_empty(), "an error without problems");
            let _ = e.to_string();
        }
    }
    if let Err(e) = parsed {
        let _ = e.to_string();
    }
}

/// The MirrorMaker 2 importer: properties text → Strait TOML.
///
/// Properties: the properties parser and the importer never panic; what the importer
/// writes is valid TOML that parses back as a Strait config (every `${VAR}` it writes
/// set), and the keys it reports carry lines within the file.
pub fn fuzz_mm2_import(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines = text.split('\n').count();
    if let Ok(props) = properties::parse(&text) {
        assert!(props.iter().all(|p| p.line >= 1 && p.line <= lines));
    }
    if let Ok((toml, unmapped)) = import_mm2(&text) {
        assert!(unmapped.iter().all(|u| u.line <= lines));
        if let Err(e) = parse_str(&toml, "imported.toml", &|_| Some("x".to_owned())) {
            panic!("the imported config does not parse: {e}\n{toml}");
        }
    }
}
