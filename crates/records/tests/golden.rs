//! Golden fixtures: real batches written by librdkafka and served by Tansu
//! (`tests/data/README.md`). For every `NAME.bin`: split, verify every CRC, check every
//! header field, decode every data record and compare it exactly with what librdkafka's
//! consumer returned (`NAME.json`; control records are not in it), then check that
//! patching, re-encoding and the aborted-transaction filter keep that content.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;
use strait_records::{
    AbortedTransaction, Batch, Compression, ControlRecordType, Header, Limits, ProducerStamp,
    Record, ReencodeOptions, TimestampType, TxnVerdict, filter_aborted, split,
};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .expect("tests/data must exist")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".bin").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Standard base64 with padding (what Python's `base64.b64encode` writes).
fn base64(s: &str) -> Vec<u8> {
    fn sextet(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 character {c:#x}"),
        }
    }
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | (sextet(c) << (18 - 6 * i)));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

fn nullable(v: &Value) -> Option<Bytes> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(Bytes::from(base64(s))),
        other => panic!("expected base64 or null, got {other}"),
    }
}

/// A record as a consumer sees it: (offset, timestamp, timestamp type, key, value, headers).
type Seen = (
    i64,
    i64,
    TimestampType,
    Option<Bytes>,
    Option<Bytes>,
    Vec<Header>,
);

fn expected_records(json: &Value) -> Vec<Seen> {
    json.as_array()
        .expect("NAME.json is a list")
        .iter()
        .map(|r| {
            let headers = r["headers"]
                .as_array()
                .expect("headers is a list")
                .iter()
                .map(|h| Header {
                    key: Bytes::from(h[0].as_str().expect("header name").as_bytes().to_vec()),
                    value: nullable(&h[1]),
                })
                .collect();
            let ts_type = match r["timestamp_type"].as_str() {
                Some("create") => TimestampType::CreateTime,
                Some("log_append") => TimestampType::LogAppendTime,
                other => panic!("unknown timestamp_type {other:?}"),
            };
            (
                r["offset"].as_i64().expect("offset"),
                r["timestamp"].as_i64().expect("timestamp"),
                ts_type,
                nullable(&r["key"]),
                nullable(&r["value"]),
                headers,
            )
        })
        .collect()
}

fn seen(batch: &Batch, r: Record) -> Seen {
    let h = batch.header();
    (
        r.offset,
        h.log_append_time().unwrap_or(r.timestamp),
        h.attributes.timestamp_type(),
        r.key,
        r.value,
        r.headers,
    )
}

fn i64_of(v: &Value, field: &str) -> i64 {
    v[field]
        .as_i64()
        .unwrap_or_else(|| panic!("missing {field}"))
}

fn check_header(name: &str, batch: &Batch, meta: &Value) {
    let h = batch.header();
    let ctx = format!("{name}: batch at byte {}", batch.position());
    assert_eq!(batch.position() as i64, i64_of(meta, "position"), "{ctx}");
    assert_eq!(batch.size() as i64, i64_of(meta, "size"), "{ctx}");
    assert_eq!(h.base_offset, i64_of(meta, "base_offset"), "{ctx}");
    assert_eq!(
        i64::from(h.batch_length),
        i64_of(meta, "batch_length"),
        "{ctx}"
    );
    assert_eq!(
        i64::from(h.partition_leader_epoch),
        i64_of(meta, "partition_leader_epoch"),
        "{ctx}"
    );
    assert_eq!(i64::from(h.magic), i64_of(meta, "magic"), "{ctx}");
    assert_eq!(i64::from(h.crc), i64_of(meta, "crc"), "{ctx}");
    assert_eq!(
        i64::from(h.attributes.0),
        i64_of(meta, "attributes"),
        "{ctx}"
    );
    assert_eq!(
        h.compression().name(),
        meta["codec"].as_str().unwrap(),
        "{ctx}"
    );
    let ts_type = match h.attributes.timestamp_type() {
        TimestampType::CreateTime => "create",
        TimestampType::LogAppendTime => "log_append",
    };
    assert_eq!(ts_type, meta["timestamp_type"].as_str().unwrap(), "{ctx}");
    assert_eq!(
        h.attributes.is_transactional(),
        meta["is_transactional"].as_bool().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        h.attributes.is_control(),
        meta["is_control"].as_bool().unwrap(),
        "{ctx}"
    );
    if let Some(dh) = meta["has_delete_horizon"].as_bool() {
        assert_eq!(h.attributes.has_delete_horizon(), dh, "{ctx}");
    }
    assert_eq!(
        i64::from(h.last_offset_delta),
        i64_of(meta, "last_offset_delta"),
        "{ctx}"
    );
    assert_eq!(h.base_timestamp, i64_of(meta, "base_timestamp"), "{ctx}");
    assert_eq!(h.max_timestamp, i64_of(meta, "max_timestamp"), "{ctx}");
    assert_eq!(h.producer_id, i64_of(meta, "producer_id"), "{ctx}");
    assert_eq!(
        i64::from(h.producer_epoch),
        i64_of(meta, "producer_epoch"),
        "{ctx}"
    );
    assert_eq!(
        i64::from(h.base_sequence),
        i64_of(meta, "base_sequence"),
        "{ctx}"
    );
    assert_eq!(
        i64::from(h.records_count),
        i64_of(meta, "records_count"),
        "{ctx}"
    );
}

/// Checks one fixture; returns the codecs its batches use.
fn check_fixture(name: &str) -> BTreeSet<Compression> {
    let dir = data_dir();
    let bin = Bytes::from(std::fs::read(dir.join(format!("{name}.bin"))).unwrap());
    let expected = expected_records(&read_json(&dir.join(format!("{name}.json"))));
    let meta = read_json(&dir.join(format!("{name}.meta.json")));
    let limits = Limits::default();

    let split = split(bin.clone(), &limits).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(split.trimmed, 0, "{name}: fixtures hold whole batches only");
    let meta_batches = meta["batches"].as_array().expect("batches");
    assert_eq!(split.batches.len(), meta_batches.len(), "{name}");
    assert_eq!(
        split.batches.len() as i64,
        i64_of(&meta, "batch_count"),
        "{name}"
    );

    let mut decoded = Vec::new();
    let mut markers = Vec::new();
    let mut codecs = BTreeSet::new();
    for (batch, bm) in split.batches.iter().zip(meta_batches) {
        check_header(name, batch, bm);
        batch.verify_crc().unwrap_or_else(|e| panic!("{name}: {e}"));
        // Zero copy: the batch is a slice of the fixture buffer.
        assert_eq!(batch.as_bytes().as_ptr(), bin[batch.position()..].as_ptr());
        codecs.insert(batch.header().compression());
        if batch.header().attributes.is_control() {
            let kind = match batch.control_type(&limits).unwrap() {
                Some(ControlRecordType::Abort) => "abort",
                Some(ControlRecordType::Commit) => "commit",
                other => panic!("{name}: unexpected control type {other:?}"),
            };
            markers.push((batch.header().base_offset, kind.to_owned()));
            continue;
        }
        for r in batch.records(&limits).unwrap() {
            decoded.push(seen(batch, r.unwrap_or_else(|e| panic!("{name}: {e}"))));
        }
    }
    assert_eq!(decoded.len(), expected.len(), "{name}: record count");
    for (got, want) in decoded.iter().zip(&expected) {
        assert_eq!(got, want, "{name}: record at offset {}", want.0);
    }
    let want_markers: Vec<(i64, String)> = meta["control_markers"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|p| (p[0].as_i64().unwrap(), p[1].as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(markers, want_markers, "{name}: control markers");

    check_patch_and_reencode(name, &split.batches, &bin, &limits);
    check_aborted(name, &split.batches, &meta, &expected, &limits);
    codecs
}

/// Patching keeps the payload bytes and the records; re-encoding keeps the records and
/// makes offsets dense.
fn check_patch_and_reencode(name: &str, batches: &[Batch], bin: &Bytes, limits: &Limits) {
    let stamp = ProducerStamp {
        producer_id: 4242,
        producer_epoch: 3,
        base_sequence: 17,
    };
    for batch in batches
        .iter()
        .filter(|b| !b.header().attributes.is_control())
    {
        let original = batch.decode_records(limits).unwrap();
        let patched = batch.verify_and_patch(stamp).unwrap();
        assert_eq!(
            patched.payload().as_ptr(),
            bin[batch.position() + 61..].as_ptr()
        );
        assert_eq!(patched.to_contiguous(), batch.patch(stamp).to_contiguous());
        let again = Batch::parse(patched.to_contiguous()).unwrap();
        again.verify_crc().unwrap_or_else(|e| panic!("{name}: {e}"));
        let h = again.header();
        assert_eq!(
            (
                h.base_offset,
                h.producer_id,
                h.producer_epoch,
                h.base_sequence
            ),
            (0, 4242, 3, 17)
        );
        assert!(!h.attributes.is_transactional());
        let shifted: Vec<Record> = again.decode_records(limits).unwrap();
        for (a, b) in shifted.iter().zip(&original) {
            assert_eq!(a.offset + batch.header().base_offset, b.offset, "{name}");
            assert_eq!(
                (&a.key, &a.value, &a.headers, a.timestamp),
                (&b.key, &b.value, &b.headers, b.timestamp)
            );
        }

        let re = batch.reencode(&ReencodeOptions::default()).unwrap();
        assert_eq!(re.len(), 1, "{name}");
        let re = &re[0];
        re.batch.verify_crc().unwrap();
        assert_eq!(
            re.batch.header().compression(),
            batch.header().compression()
        );
        assert_eq!(
            re.source_offsets,
            original.iter().map(|r| r.offset).collect::<Vec<_>>()
        );
        let dense = re.batch.decode_records(limits).unwrap();
        assert_eq!(dense.len(), original.len());
        for (i, (a, b)) in dense.iter().zip(&original).enumerate() {
            assert_eq!(a.offset, i as i64);
            assert_eq!(
                (&a.key, &a.value, &a.headers, a.timestamp),
                (&b.key, &b.value, &b.headers, b.timestamp)
            );
        }
    }
}

/// The aborted-transactions list Kafka would send drops exactly the aborted records.
fn check_aborted(name: &str, batches: &[Batch], meta: &Value, expected: &[Seen], limits: &Limits) {
    let Some(list) = meta["aborted_transactions"].as_array() else {
        return;
    };
    let aborted: Vec<AbortedTransaction> = list
        .iter()
        .map(|t| AbortedTransaction {
            producer_id: i64_of(t, "producer_id"),
            first_offset: i64_of(t, "first_offset"),
        })
        .collect();
    let mut aborted_ranges: BTreeMap<i64, i64> = BTreeMap::new();
    for t in list {
        aborted_ranges.insert(i64_of(t, "first_offset"), i64_of(t, "last_offset"));
    }
    let in_aborted = |o: i64| {
        aborted_ranges
            .range(..=o)
            .next_back()
            .is_some_and(|(_, &last)| o <= last)
    };

    let verdicts = filter_aborted(batches, &aborted, limits).unwrap();
    let mut kept = Vec::new();
    for (batch, verdict) in batches.iter().zip(&verdicts) {
        let h = batch.header();
        match verdict {
            TxnVerdict::Control => assert!(h.attributes.is_control(), "{name}"),
            TxnVerdict::Aborted => assert!(
                in_aborted(h.base_offset) && in_aborted(h.last_offset()),
                "{name}"
            ),
            TxnVerdict::Keep => {
                for r in batch.records(limits).unwrap() {
                    kept.push(r.unwrap().offset);
                }
            }
        }
    }
    let want: Vec<i64> = expected
        .iter()
        .map(|r| r.0)
        .filter(|&o| !in_aborted(o))
        .collect();
    assert_eq!(
        kept, want,
        "{name}: records a read_committed consumer keeps"
    );
}

#[test]
fn golden_fixtures_from_librdkafka() {
    let names = fixtures();
    assert!(
        !names.is_empty(),
        "no fixtures in {}: the golden test must not pass vacuously",
        data_dir().display()
    );
    let mut codecs = BTreeSet::new();
    for name in &names {
        codecs.extend(check_fixture(name));
    }
    // Every codec must have been read from real client output at least once.
    for codec in Compression::ALL {
        assert!(codecs.contains(&codec), "no fixture batch uses {codec}");
    }
    println!("checked {} fixtures: {names:?}", names.len());
}
