use super::*;
use proptest::prelude::*;
use strait_records::{BatchBuilder, Compression};

/// A source batch of the given record values (timestamp = value).
fn batch(values: &[u32], base_offset: i64, codec: Compression) -> Batch {
    let mut b = BatchBuilder::new(codec);
    for v in values {
        b.push(i64::from(*v), Some(b"k"), Some(&v.to_be_bytes()), &[])
            .expect("push");
    }
    let built = b.build().expect("build");
    if base_offset == 0 {
        return built;
    }
    let mut bytes = built.into_bytes().to_vec();
    bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
    strait_records::split(bytes::Bytes::from(bytes), &Limits::default())
        .expect("split")
        .batches
        .remove(0)
}

fn step(values: &[u32], source_first: i64) -> Step {
    Step::Forward {
        batch: batch(values, source_first, Compression::None),
        source_first,
        count: values.len() as i64,
    }
}

/// The target as a list of batches of values, laid out from offset `from`.
fn target(batches: &[&[u32]], from: u64, codec: Compression) -> (Vec<Batch>, u64) {
    let mut out = Vec::new();
    let mut off = from;
    for b in batches {
        out.push(batch(b, off as i64, codec));
        off += b.len() as u64;
    }
    (out, off)
}

fn recovery(batches: &[&[u32]], from: u64) -> Recovery {
    let (t, end) = target(batches, from, Compression::Lz4);
    Recovery::from_target(&t, from, end, Limits::default()).expect("decode")
}

#[test]
fn records_on_the_target_are_matched_by_content_whatever_the_batch_boundaries() {
    // The target holds one merged batch of what the source had as two.
    let mut r = recovery(&[&[1, 2, 3, 4]], 100);
    assert_eq!(
        r.decide(&step(&[1, 2], 10)),
        Decision::AlreadyWritten { target_base: 100 }
    );
    assert_eq!(
        r.decide(&Step::Skip { source_next: 13 }),
        Decision::Produce,
        "markers write nothing"
    );
    assert_eq!(
        r.decide(&step(&[3, 4], 13)),
        Decision::AlreadyWritten { target_base: 102 }
    );
    assert_eq!(r.remaining(), 0);
    assert_eq!(r.decide(&step(&[5], 15)), Decision::Produce);
}

#[test]
fn a_missing_batch_is_a_mismatch_never_counted_as_written() {
    // Batch [1, 2] failed for good; [3, 4] was written after it (the traced loss path).
    let mut r = recovery(&[&[3, 4]], 0);
    let d = r.decide(&step(&[1, 2], 0));
    assert!(matches!(d, Decision::Mismatch { at: 0, .. }), "{d:?}");
}

#[test]
fn other_data_with_the_same_count_is_a_mismatch() {
    let mut r = recovery(&[&[7, 8]], 0);
    assert!(matches!(
        r.decide(&step(&[1, 2], 0)),
        Decision::Mismatch { .. }
    ));
}

#[test]
fn a_target_ending_inside_a_step_is_a_mismatch() {
    let mut r = recovery(&[&[1, 2]], 0);
    let d = r.decide(&step(&[1, 2, 3], 0));
    assert!(matches!(d, Decision::Mismatch { at: 2, .. }), "{d:?}");
}

#[test]
fn a_duplicate_block_is_skipped_counted_and_the_map_stays_exact() {
    // [3, 4] was appended twice (a request of the killed process landed again).
    let mut r = recovery(&[&[1, 2], &[3, 4], &[3, 4], &[5]], 0);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(
        r.decide(&step(&[3, 4], 2)),
        Decision::AlreadyWritten { target_base: 2 }
    );
    assert_eq!(
        r.decide(&step(&[5], 4)),
        Decision::AlreadyWritten { target_base: 6 }
    );
    assert_eq!(r.duplicates(), 2);
    assert_eq!(r.remaining(), 0);
}

#[test]
fn a_trailing_duplicate_ends_recovery() {
    let mut r = recovery(&[&[1, 2], &[1, 2]], 0);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(r.decide(&step(&[3], 2)), Decision::Produce);
    assert_eq!(r.duplicates(), 2);
}

#[test]
fn records_below_the_map_position_are_not_matched_again() {
    // The fetch returned the whole batch holding `from`.
    let (t, end) = target(&[&[9, 1, 2]], 99, Compression::None);
    let mut r = Recovery::from_target(&t, 100, end, Limits::default()).expect("decode");
    assert_eq!(r.remaining(), 2);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 100 }
    );
}

#[test]
fn records_at_or_past_the_target_end_read_are_not_matched() {
    // The target grew after its end was read: the last batch reaches past `end`.
    let (t, _) = target(&[&[1, 2, 3]], 0, Compression::None);
    let mut r = Recovery::from_target(&t, 0, 2, Limits::default()).expect("decode");
    assert_eq!(r.remaining(), 2);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(r.decide(&step(&[3], 2)), Decision::Produce);
}

#[test]
fn a_duplicate_of_records_written_before_the_state_is_recognised() {
    // [3, 4] was recorded and checkpointed; a request of the dead process appended it
    // again after the state was written, then [5] followed.
    let (t, end) = target(&[&[1, 2], &[3, 4], &[3, 4], &[5]], 0, Compression::None);
    let mut r = Recovery::from_target(&t, 4, end, Limits::default()).expect("decode");
    assert_eq!(r.remaining(), 3);
    assert_eq!(
        r.decide(&step(&[5], 4)),
        Decision::AlreadyWritten { target_base: 6 }
    );
    assert_eq!(r.duplicates(), 2);
}

#[test]
fn a_duplicate_of_an_earlier_block_not_only_the_last_is_recognised() {
    // [1, 2] and [3, 4] were written, then a request of [1, 2] landed again.
    let mut r = recovery(&[&[1, 2], &[3, 4], &[1, 2], &[5]], 0);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(
        r.decide(&step(&[3, 4], 2)),
        Decision::AlreadyWritten { target_base: 2 }
    );
    assert_eq!(
        r.decide(&step(&[5], 4)),
        Decision::AlreadyWritten { target_base: 6 }
    );
    assert_eq!(r.duplicates(), 2);
}

#[test]
fn nothing_to_recover_produces_everything() {
    let mut r = Recovery::none();
    assert_eq!(r.remaining(), 0);
    assert_eq!(r.decide(&step(&[1], 0)), Decision::Produce);
}

/// A recovery read chunk by chunk, as a restart's is: the target's batches laid out
/// from offset 0, `per_read` of them a chunk, the map at `from`, reading from
/// `read_from`.
struct Chunked {
    r: Recovery,
    target: Vec<Batch>,
    per_read: usize,
    reads: usize,
}

impl Chunked {
    fn new(batches: &[&[u32]], read_from: u64, from: u64, per_read: usize) -> Self {
        let (target, end) = target(batches, 0, Compression::None);
        Chunked {
            r: Recovery::tail(read_from, from, end, Limits::default()),
            target,
            per_read,
            reads: 0,
        }
    }

    /// The batches a read from `from` brings.
    fn chunk(&self, from: u64) -> Vec<Batch> {
        self.target
            .iter()
            .filter(|b| {
                let h = b.header();
                (h.base_offset + i64::from(h.last_offset_delta)) as u64 >= from
            })
            .take(self.per_read)
            .cloned()
            .collect()
    }

    /// Decides `step`, reading the chunks recovery asks for.
    fn decide(&mut self, step: &Step) -> Decision {
        loop {
            match self.r.decide(step) {
                Decision::ReadMore { from } => {
                    let chunk = self.chunk(from);
                    self.r.read(&chunk).expect("decode");
                    self.reads += 1;
                    assert!(self.reads < 1_000, "reads without end");
                }
                d => return d,
            }
        }
    }
}

#[test]
fn a_step_straddling_two_chunks_is_matched_once_both_are_read() {
    // Chunks of one batch: the step's records are in [1, 2] and [3, 4].
    let mut c = Chunked::new(&[&[1, 2], &[3, 4]], 0, 0, 1);
    assert_eq!(
        c.decide(&step(&[1, 2, 3], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(c.reads, 2);
    assert_eq!(
        c.decide(&step(&[4], 3)),
        Decision::AlreadyWritten { target_base: 3 }
    );
    assert_eq!(c.decide(&step(&[5], 4)), Decision::Produce);
    assert_eq!(c.reads, 2, "the target's end is known: no read past it");
}

#[test]
fn a_step_is_not_decided_and_nothing_consumed_before_the_chunk_it_needs_is_read() {
    let mut c = Chunked::new(&[&[1, 2], &[3, 4]], 0, 0, 1);
    let s = step(&[1, 2, 3], 0);
    assert_eq!(c.r.decide(&s), Decision::ReadMore { from: 0 });
    c.r.read(&c.chunk(0)).expect("decode");
    assert_eq!(c.r.decide(&s), Decision::ReadMore { from: 2 });
    assert_eq!(
        c.r.decide(&s),
        Decision::ReadMore { from: 2 },
        "asked again"
    );
    assert_eq!(c.r.remaining(), 2, "nothing consumed");
    c.r.read(&c.chunk(2)).expect("decode");
    assert_eq!(c.r.decide(&s), Decision::AlreadyWritten { target_base: 0 });
}

#[test]
fn the_next_chunk_is_read_only_when_the_records_read_cannot_decide() {
    // Two batches a chunk: [1] [2] in the first, [3] [4] in the second.
    let mut c = Chunked::new(&[&[1], &[2], &[3], &[4]], 0, 0, 2);
    for (v, reads) in [(1, 1), (2, 1), (3, 2), (4, 2)] {
        assert_eq!(
            c.decide(&step(&[v], i64::from(v) - 1)),
            Decision::AlreadyWritten {
                target_base: u64::from(v) - 1
            }
        );
        assert_eq!(c.reads, reads, "after record {v}");
    }
}

#[test]
fn a_duplicate_block_straddling_two_chunks_is_decided_as_if_read_whole() {
    // [3, 4] was appended again, one record a batch, and the source's next record
    // has the content of 4: the block is skipped whole (as the whole tail decides),
    // not cut at the chunk's end with its second half taken for the next step.
    let tail: &[&[u32]] = &[&[1, 2], &[3, 4], &[3], &[4], &[4]];
    let whole = {
        let mut r = recovery(tail, 0);
        [
            r.decide(&step(&[1, 2], 0)),
            r.decide(&step(&[3, 4], 2)),
            r.decide(&step(&[4], 4)),
        ]
    };
    let mut c = Chunked::new(tail, 0, 0, 1);
    let chunked = [
        c.decide(&step(&[1, 2], 0)),
        c.decide(&step(&[3, 4], 2)),
        c.decide(&step(&[4], 4)),
    ];
    assert_eq!(chunked, whole);
    assert_eq!(chunked[2], Decision::AlreadyWritten { target_base: 6 });
    assert_eq!(c.r.duplicates(), 2);
    assert_eq!(
        c.r.finished(),
        Some(Finished {
            duplicates: 2,
            target_end: 7
        })
    );
}

#[test]
fn a_trailing_duplicate_in_the_last_chunk_ends_recovery_with_the_duplicates_once() {
    let mut c = Chunked::new(&[&[1, 2], &[1], &[2]], 0, 0, 1);
    assert_eq!(
        c.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(c.r.finished(), None, "the tail is not all read yet");
    assert_eq!(c.decide(&step(&[3], 2)), Decision::Produce);
    assert_eq!(
        c.r.finished(),
        Some(Finished {
            duplicates: 2,
            target_end: 4
        })
    );
    assert_eq!(c.r.finished(), None, "reported once");
}

#[test]
fn a_mismatch_in_the_second_chunk_is_found_when_it_is_read() {
    let mut c = Chunked::new(&[&[1, 2], &[9]], 0, 0, 1);
    assert_eq!(
        c.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    let d = c.decide(&step(&[3], 2));
    assert!(matches!(d, Decision::Mismatch { at: 2, .. }), "{d:?}");
}

#[test]
fn a_read_that_brings_nothing_ends_the_tail_as_a_whole_read_stopping_short_does() {
    // The target said it ends at 4, then serves nothing past 2: as with the whole
    // tail read up to where the target stopped serving, the records read are matched
    // and recovery is over.
    let (t, _) = target(&[&[1, 2]], 0, Compression::None);
    let mut r = Recovery::tail(0, 0, 4, Limits::default());
    assert_eq!(r.decide(&step(&[1, 2], 0)), Decision::ReadMore { from: 0 });
    r.read(&t).expect("decode");
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert_eq!(r.decide(&step(&[3], 2)), Decision::ReadMore { from: 2 });
    r.read(&[]).expect("nothing");
    assert_eq!(r.decide(&step(&[3], 2)), Decision::Produce);
    let (short, _) = target(&[&[1, 2]], 0, Compression::None);
    let mut whole = Recovery::from_target(&short, 0, 4, Limits::default()).expect("decode");
    whole.decide(&step(&[1, 2], 0));
    assert_eq!(whole.decide(&step(&[3], 2)), Decision::Produce);
}

#[test]
fn records_read_before_the_map_position_in_chunks_seed_the_duplicate_window() {
    // As a_duplicate_of_records_written_before_the_state_is_recognised, read from the
    // target's start one batch at a time.
    let mut c = Chunked::new(&[&[1, 2], &[3, 4], &[3, 4], &[5]], 0, 4, 1);
    assert_eq!(
        c.decide(&step(&[5], 4)),
        Decision::AlreadyWritten { target_base: 6 }
    );
    assert_eq!(c.r.duplicates(), 2);
}

#[test]
fn a_released_window_is_read_again_and_changes_no_decision() {
    let mut c = Chunked::new(&[&[1, 2, 3, 4]], 0, 0, 1);
    assert_eq!(
        c.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    c.r.release();
    assert_eq!(c.r.remaining(), 0);
    assert_eq!(c.r.holds_from(), u64::MAX, "nothing held");
    assert_eq!(
        c.r.decide(&step(&[3, 4], 2)),
        Decision::ReadMore { from: 2 }
    );
    assert_eq!(
        c.decide(&step(&[3, 4], 2)),
        Decision::AlreadyWritten { target_base: 2 },
        "the records below the read position are not read twice"
    );
    assert_eq!(c.r.finished().map(|f| f.duplicates), Some(0));
}

#[test]
fn the_duplicate_window_holds_no_read_chunk() {
    let (t, end) = target(&[&[1, 2]], 0, Compression::None);
    let raw = t[0].as_bytes().clone();
    let mut r = Recovery::tail(0, 0, end, Limits::default());
    r.read(&t).expect("decode");
    drop(t);
    assert_eq!(
        r.decide(&step(&[1, 2], 0)),
        Decision::AlreadyWritten { target_base: 0 }
    );
    assert!(raw.is_unique(), "the matched records are kept as digests");
}

#[test]
fn the_duplicate_window_digest_tells_apart_every_content_the_comparison_does() {
    let r = |key: Option<&'static [u8]>, value: Option<&'static [u8]>, headers| Record {
        offset: 0,
        timestamp: 1,
        key: key.map(bytes::Bytes::from_static),
        value: value.map(bytes::Bytes::from_static),
        headers,
    };
    let h = |k: &'static [u8], v: Option<&'static [u8]>| strait_records::Header {
        key: bytes::Bytes::from_static(k),
        value: v.map(bytes::Bytes::from_static),
    };
    let all = [
        r(Some(b"ab"), Some(b"c"), vec![]),
        r(Some(b"a"), Some(b"bc"), vec![]),
        r(None, Some(b"abc"), vec![]),
        r(Some(b""), Some(b"abc"), vec![]),
        r(Some(b"abc"), None, vec![]),
        r(Some(b"abc"), Some(b""), vec![]),
        r(Some(b"a"), Some(b"b"), vec![h(b"c", None)]),
        r(Some(b"a"), Some(b"b"), vec![h(b"c", Some(b""))]),
        r(Some(b"a"), Some(b"b"), vec![h(b"", Some(b"c"))]),
        r(Some(b"a"), Some(b"b"), vec![h(b"c", None), h(b"c", None)]),
        Record {
            timestamp: 2,
            ..r(Some(b"ab"), Some(b"c"), vec![])
        },
    ];
    for (i, a) in all.iter().enumerate() {
        for (j, b) in all.iter().enumerate() {
            assert_eq!(digest(a) == digest(b), same(a, b), "{i} and {j}");
        }
    }
    let moved = Record {
        offset: 7,
        ..all[0].clone()
    };
    assert_eq!(digest(&moved), digest(&all[0]), "the offset is not content");
}

/// A transaction marker (a control batch of one record) at `base`.
fn marker(base: i64) -> Batch {
    let mut raw = batch(&[0], 0, Compression::None).into_bytes().to_vec();
    raw[..8].copy_from_slice(&base.to_be_bytes());
    // Attributes (bytes 21..23): control | transactional; the CRC covers them.
    raw[21..23].copy_from_slice(&0x30i16.to_be_bytes());
    let crc = crc32c::crc32c(&raw[21..]);
    raw[17..21].copy_from_slice(&crc.to_be_bytes());
    strait_records::split(bytes::Bytes::from(raw), &Limits::default())
        .expect("split")
        .batches
        .remove(0)
}

fn live(
    target: &[Batch],
    ours_from: u64,
    expected: u64,
    acked: u64,
    sent: &[Batch],
) -> Result<u64, String> {
    let c = LiveCheck {
        target,
        ours_from,
        expected,
        acked,
        sent,
    };
    live_duplicates(&c, &Limits::default())
}

#[test]
fn live_only_markers_between_the_expected_and_the_acknowledged_offset_are_skipped() {
    // A at 0..2, a marker at 2 (before the expected offset: the map's known gap), a
    // copy of B at 3..5; B landed at 5.
    let b = batch(&[3, 4], 0, Compression::None);
    let target = [
        batch(&[1, 2], 0, Compression::None),
        marker(2),
        batch(&[3, 4], 3, Compression::None),
    ];
    assert_eq!(live(&target, 0, 3, 5, std::slice::from_ref(&b)), Ok(2));
    // A marker at the acknowledged offset is not between.
    let target = [batch(&[3, 4], 3, Compression::None), marker(5)];
    assert_eq!(live(&target, 3, 3, 5, std::slice::from_ref(&b)), Ok(2));
}

#[test]
fn live_records_before_ours_from_are_not_ours() {
    // Another writer's record at 0, ours at 1..3, then a copy of the other writer's.
    let target = [
        batch(&[9], 0, Compression::None),
        batch(&[1, 2], 1, Compression::None),
        batch(&[9], 3, Compression::None),
    ];
    let sent = [batch(&[5], 0, Compression::None)];
    let e = live(&target, 1, 3, 4, &sent).expect_err("not a record of ours");
    assert!(e.contains("offset 3"), "{e}");
}

/// What the target can hold past the map after a crash, built from the source's
/// batches: a prefix of them in order, maybe with one batch missing (a hole), maybe
/// with a duplicated batch, maybe with a foreign record.
#[derive(Debug, Clone)]
struct Case {
    source: Vec<Vec<u32>>,
    written: usize,
    hole: Option<usize>,
    dup: Option<usize>,
    foreign: Option<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..8).prop_flat_map(|n| {
        (
            proptest::collection::vec(proptest::collection::vec(0u32..3, 1..4), n),
            0..=n,
            proptest::option::of(0..n),
            proptest::option::of(0..n),
            proptest::option::of(0..n),
        )
            .prop_map(|(mut source, written, hole, dup, foreign)| {
                // Distinct records (timestamps increase), as real data has.
                let mut t = 0;
                for b in &mut source {
                    for v in b.iter_mut() {
                        t += 1;
                        *v = *v * 1000 + t;
                    }
                }
                Case {
                    source,
                    written,
                    hole,
                    dup,
                    foreign,
                }
            })
    })
}

proptest! {
    /// For any target tail, the map never claims a record the target does not hold in
    /// order: every AlreadyWritten step's records are exactly the target's records at
    /// the offsets given, each target offset is claimed at most once, and a hole is
    /// never skipped over.
    #[test]
    fn the_map_never_claims_a_record_the_target_does_not_hold(c in case()) {
        let mut tail: Vec<Vec<u32>> = Vec::new();
        for (i, b) in c.source.iter().take(c.written).enumerate() {
            if c.hole == Some(i) {
                continue;
            }
            if c.foreign == Some(i) {
                tail.push(vec![999_999]);
            }
            tail.push(b.clone());
            if c.dup == Some(i) {
                tail.push(b.clone());
            }
        }
        let flat: Vec<u32> = tail.iter().flatten().copied().collect();
        let refs: Vec<&[u32]> = tail.iter().map(Vec::as_slice).collect();
        let mut r = recovery(&refs, 0);
        let mut claimed = std::collections::BTreeSet::new();
        let mut last_end = 0u64;
        let mut source_first = 0i64;
        for b in &c.source {
            match r.decide(&step(b, source_first)) {
                Decision::AlreadyWritten { target_base } => {
                    prop_assert!(target_base >= last_end, "target offsets only move forward");
                    for (i, v) in b.iter().enumerate() {
                        let off = target_base as usize + i;
                        prop_assert_eq!(flat.get(off), Some(v), "claimed a record the target lacks");
                        prop_assert!(claimed.insert(off));
                    }
                    last_end = target_base + b.len() as u64;
                }
                Decision::Produce => {}
                Decision::Mismatch { .. } => break,
                Decision::ReadMore { .. } => prop_assert!(false, "the whole tail was read"),
            }
            source_first += b.len() as i64;
        }
        // A hole before the end of what was written is always caught.
        if let Some(h) = c.hole && h + 1 < c.written && c.foreign.is_none() {
            let before: usize = c.source[..h].iter().map(Vec::len).sum();
            prop_assert!(claimed.iter().all(|o| *o < before + c.dup.filter(|d| *d < h).map_or(0, |d| c.source[d].len())),
                "nothing past the hole was claimed: {:?}", claimed);
        }
    }

    /// For any target tail read in chunks of any size (and let go of between steps,
    /// or not), every decision is the one the whole tail read at once gives, also
    /// when the target holds a record a batch (chunks then end inside steps).
    #[test]
    fn read_in_chunks_recovery_decides_as_the_whole_tail_does(
        c in case(),
        per_read in 1usize..4,
        release in any::<bool>(),
        one_a_batch in any::<bool>(),
    ) {
        let mut tail: Vec<Vec<u32>> = Vec::new();
        for (i, b) in c.source.iter().take(c.written).enumerate() {
            if c.hole == Some(i) {
                continue;
            }
            if c.foreign == Some(i) {
                tail.push(vec![999_999]);
            }
            tail.push(b.clone());
            if c.dup == Some(i) {
                // A duplicate in batches of one record: its block crosses chunks.
                tail.extend(b.iter().map(|v| vec![*v]));
            }
        }
        if one_a_batch {
            tail = tail.iter().flatten().map(|v| vec![*v]).collect();
        }
        let refs: Vec<&[u32]> = tail.iter().map(Vec::as_slice).collect();
        let mut whole = recovery(&refs, 0);
        let mut chunked = Chunked::new(&refs, 0, 0, per_read);
        let mut source_first = 0i64;
        for b in &c.source {
            let s = step(b, source_first);
            let d = chunked.decide(&s);
            prop_assert_eq!(&d, &whole.decide(&s));
            prop_assert_eq!(chunked.r.duplicates(), whole.duplicates());
            if matches!(d, Decision::Mismatch { .. }) {
                break;
            }
            if release {
                chunked.r.release();
            }
            source_first += b.len() as i64;
        }
    }
}
