//! Merging the golden fixtures (`tests/data/README.md`): consecutive data batches of
//! `codec-none.bin` merged as they are, and of `codec-lz4.bin` / `codec-zstd.bin` with
//! [`CompressedPolicy::Recompress`]. The merged batches must hold exactly the records
//! librdkafka wrote (compared with the records decoded from the source batches, and their
//! count with `NAME.meta.json`), at dense offsets, with the source offsets reported exactly.

use std::path::Path;

use bytes::Bytes;
use strait_records::{
    Batch, Class, CompressedPolicy, Compression, Limits, MergeOptions, Merged, OffsetRun, Record,
    merge, split,
};

fn batches(name: &str) -> Vec<Batch> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.bin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = split(Bytes::from(bytes), &Limits::default()).expect("fixture splits");
    assert_eq!(s.trimmed, 0);
    s.batches
}

fn data_record_count(name: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.meta.json"));
    let text = std::fs::read_to_string(&path).expect("meta.json");
    let meta: serde_json::Value = serde_json::from_str(&text).expect("meta.json parses");
    meta["data_record_count"]
        .as_u64()
        .expect("data_record_count") as usize
}

fn all_records(batches: &[Batch]) -> Vec<Record> {
    batches
        .iter()
        .flat_map(|b| {
            b.decode_records(&Limits::default())
                .expect("fixture decodes")
        })
        .collect()
}

/// Merges, checks every output, and returns the records as the target would hold them,
/// with their source offsets put back, plus the outputs.
fn merged_records(inputs: &[Batch], opts: &MergeOptions) -> (Vec<Record>, Vec<Merged>) {
    let outs = merge(inputs, opts).expect("fixture merges");
    let covered: Vec<usize> = outs.iter().flat_map(Merged::inputs).collect();
    assert_eq!(covered, (0..inputs.len()).collect::<Vec<_>>());
    let mut got = Vec::new();
    for out in &outs {
        match out {
            Merged::Unchanged { batch, .. } => {
                got.extend(batch.decode_records(&Limits::default()).unwrap())
            }
            Merged::Rewritten {
                batch,
                source_offsets,
                ..
            } => {
                assert_eq!(batch.compute_crc(), batch.header().crc, "merged CRC");
                assert_eq!(batch.classify(opts.max_bytes), Class::Forward);
                assert!(batch.size() <= opts.max_bytes);
                let h = batch.header();
                assert_eq!((h.base_offset, h.producer_id, h.base_sequence), (0, -1, -1));
                let records = batch.decode_records(&Limits::default()).unwrap();
                assert_eq!(records.len(), source_offsets.len());
                for ((i, mut r), src) in records.into_iter().enumerate().zip(source_offsets.iter())
                {
                    assert_eq!(r.offset, i as i64);
                    r.offset = src;
                    got.push(r);
                }
            }
        }
    }
    (got, outs)
}

#[test]
fn codec_none_merges_without_recompression() {
    let inputs = batches("codec-none");
    let expected = all_records(&inputs);
    assert_eq!(expected.len(), data_record_count("codec-none"));
    let (got, outs) = merged_records(&inputs, &MergeOptions::new(1 << 20));
    assert_eq!(got, expected);
    // Six producer batches, offsets 0..50 without gaps: one batch, one run.
    assert_eq!(outs.len(), 1);
    let Merged::Rewritten { source_offsets, .. } = &outs[0] else {
        panic!("not merged")
    };
    assert_eq!(
        source_offsets.runs(),
        &[OffsetRun {
            first: 0,
            count: 50
        }]
    );

    // A limit below the 100 KiB batch: it stays as it is, its neighbours merge around it.
    let (got, outs) = merged_records(&inputs, &MergeOptions::new(64 << 10));
    assert_eq!(got, expected);
    let shape: Vec<_> = outs
        .iter()
        .map(|o| (o.inputs(), matches!(o, Merged::Rewritten { .. })))
        .collect();
    assert_eq!(shape, [(0..1, false), (1..2, false), (2..6, true)]);

    // Every other batch only (gaps between inputs): offsets still exact.
    let sparse: Vec<Batch> = inputs.iter().step_by(2).cloned().collect();
    let (got, _) = merged_records(&sparse, &MergeOptions::new(1 << 20));
    assert_eq!(got, all_records(&sparse));
}

#[test]
fn codec_lz4_and_zstd_merge_with_recompress() {
    for (name, codec) in [
        ("codec-lz4", Compression::Lz4),
        ("codec-zstd", Compression::Zstd),
    ] {
        let inputs = batches(name);
        let expected = all_records(&inputs);
        assert_eq!(expected.len(), data_record_count(name), "{name}");
        // Never: compressed batches stay; only uncompressed neighbours could merge.
        let (got, outs) = merged_records(&inputs, &MergeOptions::new(1 << 20));
        assert_eq!(got, expected, "{name}");
        assert!(
            outs.iter().all(|o| matches!(o, Merged::Unchanged { .. })),
            "{name}"
        );
        let opts = MergeOptions::new(1 << 20).compressed(CompressedPolicy::Recompress);
        let (got, outs) = merged_records(&inputs, &opts);
        assert_eq!(got, expected, "{name}");
        // librdkafka left the last single-record batch uncompressed (README): codecs are
        // never mixed, so it stays apart.
        let codecs: Vec<_> = outs
            .iter()
            .map(|o| (o.inputs(), o.batch().header().compression()))
            .collect();
        let last = inputs.len() - 1;
        assert_eq!(
            inputs[last].header().compression(),
            Compression::None,
            "{name}"
        );
        assert_eq!(
            codecs,
            [(0..last, codec), (last..last + 1, Compression::None)]
        );
        // One batch compresses better than many, but merges write zstd at level 1, a few to
        // 15 % larger than librdkafka's level 3.
        let merged = outs[0].batch();
        let inputs_size: usize = inputs[..last].iter().map(Batch::size).sum();
        let bound = match codec {
            Compression::Zstd => inputs_size + inputs_size / 5,
            _ => inputs_size,
        };
        assert!(
            merged.size() < bound,
            "{name}: {} bytes, inputs {inputs_size}",
            merged.size()
        );
    }
}
