//! Batch planning: one partition's fetched record set → the steps the pipeline takes.
//! Pure (no I/O), so every rule is unit-tested.
//!
//! Per batch, in offset order: batches wholly before the fetch position are ignored (a
//! broker may return a batch that starts before the offset asked for); every batch goes
//! through the response's aborted-transaction filter so its state follows the log, then
//! through the partition's [`TxnResolver`], which holds transactional data until its
//! marker decides it (brokers such as Tansu return aborted data to `read_committed`
//! fetches with an empty aborted list) — unless the fetch's last stable offset is known to
//! be real (Apache Kafka: [`Planner::plan_stable`]), below which transactional data not in
//! the aborted list is committed and is released at once; released control batches and aborted data become
//! [`Step::Skip`]; a batch that starts before the position, has
//! gaps, is empty or exceeds the target's batch limit is re-encoded (the slow path);
//! everything else is forwarded as it is (the fast path; the producer patches the header).

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use strait_client::AbortedTxn;
use strait_records::{
    AbortedFilter, AbortedTransaction, Batch, BatchBuilder, Class, Compression, Limits, Record,
    ReencodeOptions, ReencodeReason, Resolved, SkipReason, TxnResolver, TxnVerdict, split,
};

/// What to do with (part of) a source batch.
#[derive(Debug, Clone)]
pub enum Step {
    /// Produce the source batch unchanged (fast path).
    Forward {
        /// The batch.
        batch: Batch,
        /// Its first source offset.
        source_first: i64,
        /// Records in it (dense: offsets `source_first..source_first + count`).
        count: i64,
    },
    /// Produce a re-encoded batch holding the records at `source_offsets`.
    Reencoded {
        /// The new batch.
        batch: Batch,
        /// Source offset of each record, increasing.
        source_offsets: Vec<i64>,
    },
    /// Nothing to produce: the source position moves to `source_next`.
    Skip {
        /// The new source position.
        source_next: i64,
    },
}

impl Step {
    /// Records this step writes to the target.
    pub fn records(&self) -> i64 {
        match self {
            Step::Forward { count, .. } => *count,
            Step::Reencoded { source_offsets, .. } => source_offsets.len() as i64,
            Step::Skip { .. } => 0,
        }
    }

    /// The source position after this step.
    pub fn source_next(&self) -> i64 {
        match self {
            Step::Forward {
                source_first,
                count,
                ..
            } => source_first + count,
            Step::Reencoded { source_offsets, .. } => {
                source_offsets.last().map_or(0, |o| o.saturating_add(1))
            }
            Step::Skip { source_next } => *source_next,
        }
    }
}

/// Why a batch took the slow path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlowReason {
    /// Compaction left gaps in its offsets.
    Gapped,
    /// Compaction removed every record.
    Empty,
    /// Larger than the target accepts.
    TooLarge,
    /// It starts before the fetch position (after a log-start move): the records before
    /// the position are left out.
    Partial,
}

impl SlowReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowReason::Gapped => "gapped",
            SlowReason::Empty => "empty",
            SlowReason::TooLarge => "too_large",
            SlowReason::Partial => "partial",
        }
    }
}

/// The steps for one record set, and what was counted on the way.
#[derive(Debug)]
pub struct Plan<P = ()> {
    /// Released steps, in order, each with the pin of the record set its batch came from
    /// (see [`Planner`]). Every source offset from the released position to the last
    /// step's [`Step::source_next`] is accounted for by exactly one step (or lies in a gap).
    pub steps: Vec<(Step, P)>,
    /// Where the next fetch starts: after the last complete batch (past held batches).
    pub next_position: i64,
    /// Control batches dropped.
    pub dropped_control: u32,
    /// Aborted batches dropped.
    pub dropped_aborted: u32,
    /// Slow-path batches, by reason.
    pub slow: Vec<SlowReason>,
    /// Bytes of the partial batch trimmed at the end.
    pub trimmed: usize,
}

impl<P> Plan<P> {
    fn empty(position: i64, trimmed: usize) -> Self {
        Plan {
            steps: Vec::new(),
            next_position: position,
            dropped_control: 0,
            dropped_aborted: 0,
            slow: Vec::new(),
            trimmed,
        }
    }

    /// The steps without their pins.
    pub fn into_steps(self) -> Vec<Step> {
        self.steps.into_iter().map(|(s, _)| s).collect()
    }
}

/// Why a record set could not be planned.
#[derive(Debug)]
pub struct PlanError {
    /// The source offset of the batch at fault.
    pub offset: i64,
    /// The records crate's error.
    pub source: strait_records::Error,
}

/// The oldest transaction a [`Planner`] is waiting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTxn {
    /// Its producer id.
    pub producer_id: i64,
    /// The source offset of its first held batch.
    pub first_offset: i64,
}

/// One partition's planner, persistent across fetch responses.
///
/// Each response gets a fresh [`AbortedFilter`] (the aborted list is per response); its
/// verdicts feed the partition's [`TxnResolver`], which holds transactional batches until
/// their COMMIT/ABORT marker is fetched — possibly several responses later — and releases
/// every batch strictly in offset order. Only released batches become steps, so the fetch
/// position ([`Plan::next_position`]) runs ahead of the position the steps reach
/// ([`Planner::released_next`]), which is what the offset map may record.
///
/// `P` pins what a held batch keeps alive (the fetch buffer's in-flight budget
/// reservation): each batch carries the pin of its record set until it is released, and
/// each step hands it on to whoever holds the step.
#[derive(Debug)]
pub struct Planner<P> {
    resolver: TxnResolver,
    pins: VecDeque<P>,
    released_next: i64,
    open: BTreeMap<i64, i64>,
    max_batch_bytes: usize,
    limits: Limits,
}

impl<P: Clone> Planner<P> {
    /// A planner whose steps start at `position`, re-encoding batches larger than
    /// `max_batch_bytes`.
    pub fn new(position: i64, max_batch_bytes: usize, limits: Limits) -> Self {
        Planner {
            resolver: TxnResolver::new(limits),
            pins: VecDeque::new(),
            released_next: position,
            open: BTreeMap::new(),
            max_batch_bytes,
            limits,
        }
    }

    /// Forgets every held batch and restarts at `position` (after any reposition:
    /// truncation, re-creation, recovery).
    pub fn reposition(&mut self, position: i64) {
        self.resolver.clear();
        self.pins.clear();
        self.open.clear();
        self.released_next = position;
    }

    /// The source position through the released steps.
    pub fn released_next(&self) -> i64 {
        self.released_next
    }

    /// Bytes of batches fetched but not released yet.
    pub fn held_bytes(&self) -> usize {
        self.resolver.held_bytes()
    }

    /// Batches fetched but not released yet.
    pub fn held_batches(&self) -> usize {
        self.resolver.held_batches()
    }

    /// The oldest transaction still waiting for its marker, if any.
    pub fn oldest_open(&self) -> Option<OpenTxn> {
        self.open
            .iter()
            .min_by_key(|(_, first)| **first)
            .map(|(&producer_id, &first_offset)| OpenTxn {
                producer_id,
                first_offset,
            })
    }

    /// Plans `records` (one partition of a Fetch response, with its aborted list) fetched
    /// from `position`; `pin` is kept alive by each of its batches until released. Only
    /// markers decide transactions (the rule for brokers whose LSO is not known to be
    /// real, such as Tansu).
    pub fn plan(
        &mut self,
        records: Bytes,
        aborted: &[AbortedTxn],
        position: i64,
        pin: P,
    ) -> Result<Plan<P>, PlanError> {
        self.plan_stable(records, aborted, None, position, pin)
    }

    /// [`Planner::plan`] with the response's last stable offset when the broker is known
    /// to compute a real one (`stable`; the fetcher decides, see its `Stability`). Rules:
    /// a transactional data batch that ends at or below `stable` and that the aborted list
    /// does not condemn is committed and released without waiting for its marker (with
    /// the held batches of its producer id, the same transaction); one past `stable`, or
    /// any batch when `stable` is `None`, waits for its marker as in [`Planner::plan`].
    /// Aborted data is dropped either way: listed, or by its ABORT marker.
    pub fn plan_stable(
        &mut self,
        records: Bytes,
        aborted: &[AbortedTxn],
        stable: Option<i64>,
        position: i64,
        pin: P,
    ) -> Result<Plan<P>, PlanError> {
        let split = split(records, &self.limits).map_err(|source| PlanError {
            offset: position,
            source,
        })?;
        let aborted: Vec<AbortedTransaction> = aborted
            .iter()
            .map(|a| AbortedTransaction {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
            })
            .collect();
        let mut filter = AbortedFilter::new(&aborted, self.limits);
        let mut plan = Plan::empty(position, split.trimmed);
        for batch in split.batches {
            let h = *batch.header();
            let err = |source| PlanError {
                offset: h.base_offset,
                source,
            };
            // Every batch goes through the filter so its state follows the log.
            let verdict = filter.check(&batch).map_err(err)?;
            let next = h.next_offset();
            if next <= plan.next_position {
                continue;
            }
            plan.next_position = next;
            let txn_data = verdict == TxnVerdict::Keep
                && h.attributes.is_transactional()
                && !h.attributes.is_control()
                && h.producer_id >= 0;
            if txn_data && stable.is_some_and(|lso| next <= lso) {
                // Below a real LSO and not listed as aborted: committed.
                self.open.remove(&h.producer_id);
                self.resolver.push_committed(batch);
            } else {
                match verdict {
                    TxnVerdict::Control => {
                        self.open.remove(&h.producer_id);
                    }
                    _ if txn_data => {
                        self.open.entry(h.producer_id).or_insert(h.base_offset);
                    }
                    _ => {}
                }
                self.resolver.push(batch, verdict).map_err(err)?;
            }
            self.pins.push_back(pin.clone());
            while let Some(resolved) = self.resolver.pop() {
                // One pin per pushed batch, popped in the same order.
                let Some(pin) = self.pins.pop_front() else {
                    break;
                };
                let steps = self.release(resolved, &mut plan)?;
                plan.steps
                    .extend(steps.into_iter().map(|s| (s, pin.clone())));
            }
        }
        Ok(plan)
    }

    /// Plans one released batch, counting into `plan`; returns its steps.
    fn release(&mut self, resolved: Resolved, plan: &mut Plan<P>) -> Result<Vec<Step>, PlanError> {
        let from = self.released_next;
        let batch = match resolved {
            Resolved::Skip(batch, reason) => {
                match reason {
                    SkipReason::Control => plan.dropped_control += 1,
                    SkipReason::Aborted => plan.dropped_aborted += 1,
                }
                let next = batch.header().next_offset();
                if next <= from {
                    return Ok(Vec::new());
                }
                self.released_next = next;
                return Ok(vec![Step::Skip { source_next: next }]);
            }
            Resolved::Forward(batch) => batch,
        };
        let h = *batch.header();
        let next = h.next_offset();
        if next <= from {
            return Ok(Vec::new());
        }
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let limits = self.limits;
        let max = self.max_batch_bytes;
        let mut steps = Vec::new();
        if h.base_offset < from {
            plan.slow.push(SlowReason::Partial);
            batch.verify_crc().map_err(err)?;
            let mut kept = Vec::new();
            for r in batch.records(&limits).map_err(err)? {
                let r = r.map_err(err)?;
                if r.offset >= from {
                    kept.push(r);
                }
            }
            build_pieces(&kept, h.compression(), max, &mut steps).map_err(err)?;
            steps.push(Step::Skip { source_next: next });
        } else {
            match batch.classify(max) {
                Class::Forward => steps.push(Step::Forward {
                    source_first: h.base_offset,
                    count: i64::from(h.records_count),
                    batch,
                }),
                Class::Control => {
                    plan.dropped_control += 1;
                    steps.push(Step::Skip { source_next: next });
                }
                Class::NeedsReencode(ReencodeReason::Empty) => {
                    plan.slow.push(SlowReason::Empty);
                    steps.push(Step::Skip { source_next: next });
                }
                class => {
                    plan.slow.push(if matches!(class, Class::TooLarge { .. }) {
                        SlowReason::TooLarge
                    } else {
                        SlowReason::Gapped
                    });
                    batch.verify_crc().map_err(err)?;
                    let options = ReencodeOptions {
                        compression: None,
                        max_batch_bytes: Some(max),
                        limits,
                    };
                    for piece in batch.reencode(&options).map_err(err)? {
                        steps.push(Step::Reencoded {
                            batch: piece.batch,
                            source_offsets: piece.source_offsets,
                        });
                    }
                    // Trailing records removed by compaction still move the position.
                    steps.push(Step::Skip { source_next: next });
                }
            }
        }
        self.released_next = next;
        Ok(steps)
    }
}

/// Plans `records` fetched from `position` with a fresh [`Planner`]: what a single
/// response releases on its own (transactions whose marker it holds).
pub fn plan(
    records: Bytes,
    aborted: &[AbortedTxn],
    position: i64,
    max_batch_bytes: usize,
    limits: &Limits,
) -> Result<Plan, PlanError> {
    Planner::new(position, max_batch_bytes, *limits).plan(records, aborted, position, ())
}
/// Builds `records` into batches of at most `max` bytes (halving until each fits).
fn build_pieces(
    records: &[Record],
    codec: Compression,
    max: usize,
    out: &mut Vec<Step>,
) -> Result<(), strait_records::Error> {
    if records.is_empty() {
        return Ok(());
    }
    let mut builder = BatchBuilder::new(codec);
    for r in records {
        builder.push_record(r)?;
    }
    let batch = builder.build()?;
    if batch.size() > max && records.len() > 1 {
        let (left, right) = records.split_at(records.len() / 2);
        build_pieces(left, codec, max, out)?;
        return build_pieces(right, codec, max, out);
    }
    // A single record larger than `max` is produced anyway: the target's answer
    // (MESSAGE_TOO_LARGE) names the problem better than we could.
    out.push(Step::Reencoded {
        batch,
        source_offsets: records.iter().map(|r| r.offset).collect(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use strait_records::{BatchHeader, HEADER_LEN, ProducerStamp};

    /// A batch of `n` records (values "v<i>") at `base`, as a broker stores it.
    fn batch(base: i64, n: usize, codec: Compression) -> Bytes {
        let mut b = BatchBuilder::new(codec);
        for i in 0..n {
            let v = format!("v{}", base + i as i64);
            b.push(1_700_000_000_000, Some(b"k"), Some(v.as_bytes()), &[])
                .unwrap();
        }
        rebase(b.build().unwrap().into_bytes(), base, None)
    }

    /// Rewrites base offset (outside the CRC) and optionally the producer fields and
    /// attributes (inside it, so the CRC is recomputed).
    fn rebase(bytes: Bytes, base: i64, txn: Option<(i64, u16)>) -> Bytes {
        let mut b = BytesMut::from(&bytes[..]);
        b[0..8].copy_from_slice(&base.to_be_bytes());
        if let Some((pid, attrs)) = txn {
            let mut head = [0u8; HEADER_LEN];
            head.copy_from_slice(&b[..HEADER_LEN]);
            let mut h = BatchHeader::parse(&head, 0).unwrap();
            h.producer_id = pid;
            h.producer_epoch = 0;
            h.base_sequence = 0;
            h.attributes.0 |= attrs;
            b[..HEADER_LEN].copy_from_slice(&h.encode());
            let crc = crc32c::crc32c(&b[21..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        b.freeze()
    }

    fn concat(parts: &[Bytes]) -> Bytes {
        let mut b = BytesMut::new();
        for p in parts {
            b.extend_from_slice(p);
        }
        b.freeze()
    }

    const TXN: u16 = 0x10;
    const CONTROL: u16 = 0x20;

    /// A transaction marker of `pid` at `offset`: a control record with key version 0 and
    /// type 1 (COMMIT) or 0 (ABORT).
    fn marker(offset: i64, pid: i64, commit: bool) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None);
        b.push(
            0,
            Some(&[0, 0, 0, u8::from(commit)]),
            Some(&[0, 0, 0, 0, 0, 0]),
            &[],
        )
        .unwrap();
        rebase(
            b.build().unwrap().into_bytes(),
            offset,
            Some((pid, TXN | CONTROL)),
        )
    }

    /// A transactional data batch of `pid`.
    fn txn(base: i64, n: usize, pid: i64) -> Bytes {
        rebase(batch(base, n, Compression::None), base, Some((pid, TXN)))
    }

    /// (records, source_next) of each step.
    fn shape<P>(p: &Plan<P>) -> Vec<(i64, i64)> {
        p.steps
            .iter()
            .map(|(s, _)| (s.records(), s.source_next()))
            .collect()
    }

    #[test]
    fn dense_batches_are_forwarded_without_copying() {
        let set = concat(&[
            batch(0, 3, Compression::Lz4),
            batch(3, 2, Compression::None),
        ]);
        let p = plan(set.clone(), &[], 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.next_position, 5);
        assert_eq!(p.steps.len(), 2);
        match &p.steps[0].0 {
            Step::Forward {
                batch,
                source_first,
                count,
            } => {
                assert_eq!((*source_first, *count), (0, 3));
                assert_eq!(
                    batch.as_bytes().as_ptr(),
                    set.as_ptr(),
                    "a slice, not a copy"
                );
                // The producer will be able to patch it.
                batch.verify_and_patch(ProducerStamp::NONE).unwrap();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.steps[1].0.source_next(), 5);
        assert!(p.slow.is_empty());
    }

    #[test]
    fn batches_before_the_position_are_ignored_and_a_straddling_one_is_cut() {
        let set = concat(&[
            batch(0, 3, Compression::Gzip),
            batch(3, 4, Compression::Zstd),
        ]);
        let p = plan(set, &[], 5, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.slow, vec![SlowReason::Partial]);
        assert_eq!(p.next_position, 7);
        match &p.steps[0].0 {
            Step::Reencoded {
                batch,
                source_offsets,
            } => {
                assert_eq!(source_offsets, &vec![5, 6]);
                let values: Vec<_> = batch
                    .records(&Limits::default())
                    .unwrap()
                    .map(|r| r.unwrap().value.unwrap())
                    .collect();
                assert_eq!(values, vec![Bytes::from("v5"), Bytes::from("v6")]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.steps.last().unwrap().0.source_next(), 7);
    }

    #[test]
    fn too_large_batches_are_split_and_keep_their_source_offsets() {
        let set = batch(10, 40, Compression::None);
        let p = plan(set, &[], 10, 300, &Limits::default()).unwrap();
        assert_eq!(p.slow, vec![SlowReason::TooLarge]);
        let mut offsets: Vec<i64> = Vec::new();
        for (s, _) in &p.steps {
            if let Step::Reencoded {
                batch,
                source_offsets,
            } = s
            {
                assert!(batch.size() <= 300, "{}", batch.size());
                offsets.extend(source_offsets.iter().copied());
            }
        }
        assert!(p.steps.len() > 2);
        assert_eq!(offsets, (10..50).collect::<Vec<_>>());
        assert_eq!(p.next_position, 50);
    }

    #[test]
    fn control_and_aborted_batches_are_skipped_and_counted() {
        let committed = rebase(batch(0, 2, Compression::None), 0, Some((7, TXN)));
        let commit = marker(2, 7, true);
        let aborted = rebase(batch(3, 2, Compression::None), 3, Some((8, TXN)));
        let abort = marker(5, 8, false);
        let after = batch(6, 1, Compression::None);
        let set = concat(&[committed, commit, aborted, abort, after]);
        let aborted_list = [AbortedTxn {
            producer_id: 8,
            first_offset: 3,
        }];
        let p = plan(set, &aborted_list, 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!((p.dropped_aborted, p.dropped_control), (1, 2));
        let kinds: Vec<(i64, i64)> = p
            .steps
            .iter()
            .map(|(s, _)| (s.records(), s.source_next()))
            .collect();
        assert_eq!(kinds, vec![(2, 2), (0, 3), (0, 5), (0, 6), (1, 7)]);
    }

    #[test]
    fn partial_trailing_batch_is_left_for_the_next_fetch() {
        let whole = batch(0, 2, Compression::None);
        let next = batch(2, 2, Compression::None);
        let set = concat(&[whole, next.slice(..next.len() - 5)]);
        let p = plan(set, &[], 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.next_position, 2);
        assert_eq!(p.steps.len(), 1);
        assert!(p.trimmed > 0);
    }

    #[test]
    fn corrupt_batch_on_the_slow_path_is_an_error() {
        let mut b = BytesMut::from(&batch(0, 3, Compression::None)[..]);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        let e = plan(b.freeze(), &[], 1, 1 << 20, &Limits::default()).unwrap_err();
        assert_eq!(e.offset, 0);
    }

    /// Tansu: aborted data comes back with an empty aborted list; only the ABORT marker,
    /// in a later response, tells. Held data waits across responses and leaves in order.
    #[test]
    fn aborted_data_without_an_aborted_list_is_held_until_its_marker_then_dropped() {
        let limits = Limits::default();
        let mut planner: Planner<u32> = Planner::new(0, 1 << 20, limits);
        // Response 1: a committed transaction (data + marker), then the start of
        // transaction 8 and a plain batch behind it.
        let r1 = concat(&[
            txn(0, 2, 7),
            marker(2, 7, true),
            txn(3, 2, 8),
            batch(5, 1, Compression::None),
        ]);
        let p = planner.plan(r1, &[], 0, 1).unwrap();
        assert_eq!(
            p.next_position, 6,
            "the fetch position moves past held batches"
        );
        assert_eq!(shape(&p), vec![(2, 2), (0, 3)]);
        assert_eq!(
            planner.released_next(),
            3,
            "the map may only advance to here"
        );
        assert_eq!(planner.held_batches(), 2);
        assert!(planner.held_bytes() > 0);
        assert_eq!(
            planner.oldest_open(),
            Some(OpenTxn {
                producer_id: 8,
                first_offset: 3
            })
        );
        // Response 2: more of transaction 8, its ABORT marker, one more plain batch.
        let r2 = concat(&[
            txn(6, 1, 8),
            marker(7, 8, false),
            batch(8, 2, Compression::None),
        ]);
        let p = planner.plan(r2, &[], 6, 2).unwrap();
        assert_eq!(p.dropped_aborted, 2);
        assert_eq!(p.dropped_control, 1);
        assert_eq!(
            shape(&p),
            vec![(0, 5), (1, 6), (0, 7), (0, 8), (2, 10)],
            "aborted batches skipped, the plain batch held behind them released in order"
        );
        // The plain batch at 5 came from response 1 and still pins its buffer.
        let pins: Vec<u32> = p.steps.iter().map(|(_, pin)| *pin).collect();
        assert_eq!(pins, vec![1, 1, 2, 2, 2]);
        assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
        assert_eq!(planner.oldest_open(), None);
        assert_eq!(planner.released_next(), 10);
    }

    /// A transaction still open when `--once` reaches the end seen at start (Tansu: LSO =
    /// HW) is not replicated: none of its steps are released and the position the map
    /// may record stays before it, so the next run fetches it again.
    #[test]
    fn an_open_transaction_is_never_released() {
        let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
        let set = concat(&[
            batch(0, 3, Compression::None),
            txn(3, 2, 9),
            batch(5, 1, Compression::None),
        ]);
        let p = planner.plan(set, &[], 0, ()).unwrap();
        assert_eq!(shape(&p), vec![(3, 3)]);
        assert_eq!(p.next_position, 6);
        assert_eq!(planner.released_next(), 3);
        assert_eq!(planner.held_batches(), 2);
        // A reposition (truncation, re-creation, recovery) forgets what was held.
        planner.reposition(100);
        assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
        assert_eq!(planner.oldest_open(), None);
        assert_eq!(planner.released_next(), 100);
        let p = planner
            .plan(batch(100, 1, Compression::None), &[], 100, ())
            .unwrap();
        assert_eq!(shape(&p), vec![(1, 101)]);
    }

    /// Apache Kafka (a real LSO): transactional data below the LSO and not in the aborted
    /// list is committed and released at once, also when its marker is in a later
    /// response; listed data is dropped; data past the LSO (never returned by Kafka, but
    /// if it were) still waits for its marker.
    #[test]
    fn below_a_real_lso_unlisted_transactional_data_is_released_without_its_marker() {
        let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
        let set = concat(&[
            txn(0, 2, 7),
            txn(2, 1, 8),
            batch(3, 1, Compression::None),
            txn(4, 1, 9),
        ]);
        let aborted = [AbortedTxn {
            producer_id: 8,
            first_offset: 2,
        }];
        let p = planner.plan_stable(set, &aborted, Some(4), 0, ()).unwrap();
        assert_eq!(
            shape(&p),
            vec![(2, 2), (0, 3), (1, 4)],
            "7 committed at once, 8 dropped as listed, 9 (past the LSO) held"
        );
        assert_eq!(p.dropped_aborted, 1);
        assert_eq!(planner.held_batches(), 1);
        assert_eq!(
            planner.oldest_open(),
            Some(OpenTxn {
                producer_id: 9,
                first_offset: 4
            })
        );
        // The markers come later: 7's commit is only skipped, 9's decides it.
        let p = planner
            .plan_stable(
                concat(&[marker(5, 7, true), marker(6, 9, true)]),
                &[],
                Some(7),
                5,
                (),
            )
            .unwrap();
        assert_eq!(shape(&p), vec![(1, 5), (0, 6), (0, 7)]);
        assert_eq!((planner.held_batches(), planner.oldest_open()), (0, None));
    }

    /// A transaction held from a response without a trusted LSO is released, with the
    /// rest of its batches, once a later response puts it below a real LSO.
    #[test]
    fn held_batches_of_a_producer_are_released_with_its_batch_below_a_real_lso() {
        let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
        let p = planner.plan(txn(0, 2, 7), &[], 0, ()).unwrap();
        assert!(p.steps.is_empty());
        let p = planner
            .plan_stable(txn(2, 2, 7), &[], Some(4), 2, ())
            .unwrap();
        assert_eq!(shape(&p), vec![(2, 2), (2, 4)]);
        assert_eq!(planner.held_batches(), 0);
    }

    /// Tansu (no trusted LSO: LSO = high watermark with open and aborted data below it and
    /// no aborted list): data below the reported LSO still waits for its marker, and an
    /// ABORT marker drops it. Only [`Planner::plan`] (markers decide) is safe there.
    #[test]
    fn without_a_trusted_lso_data_below_the_reported_one_waits_for_its_marker() {
        let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
        let p = planner.plan_stable(txn(0, 2, 7), &[], None, 0, ()).unwrap();
        assert!(
            p.steps.is_empty(),
            "held, although the reported LSO (2) is past it"
        );
        let p = planner
            .plan_stable(marker(2, 7, false), &[], None, 2, ())
            .unwrap();
        assert_eq!(shape(&p), vec![(0, 2), (0, 3)]);
        assert_eq!(p.dropped_aborted, 1);
    }

    /// Kafka: the aborted list condemns data before its marker is fetched; committed
    /// data of another producer interleaved with it is released at its own marker.
    #[test]
    fn the_aborted_list_and_markers_combine_across_producers() {
        let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
        let set = concat(&[
            txn(0, 1, 1),
            txn(1, 1, 2),
            marker(2, 2, true),
            marker(3, 1, false),
        ]);
        let aborted = [AbortedTxn {
            producer_id: 1,
            first_offset: 0,
        }];
        let p = planner.plan(set, &aborted, 0, ()).unwrap();
        assert_eq!(shape(&p), vec![(0, 1), (1, 2), (0, 3), (0, 4)]);
        assert_eq!((p.dropped_aborted, p.dropped_control), (1, 2));
        assert_eq!(planner.held_batches(), 0);
    }
}
