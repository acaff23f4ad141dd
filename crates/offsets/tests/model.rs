//! Property tests against a brute-force model: a plain list of every (source, target) pair
//! of replicated records, the replicated ends and the log starts.
//!
//! For random sequences of dense, gapped and re-encoded batches, advances past skipped
//! offsets, log-start moves on both sides, checkpoints, restarts (snapshot + delta replay)
//! and coarsening under tiny budgets, every position on both sides is translated and
//! compared with the model: equal wherever nothing was coarsened, and never past the
//! model's answer (never past an unread record) where it was.
//!
//! A map may start mid-log ([`OffsetMap::start_at`], as `start_position = "latest"` does):
//! the model then keeps positions before the replication start apart from gaps inside
//! the replicated range. Only the first may be reported as
//! [`Translation::BeforeReplication`], and never as an exact answer.

use proptest::prelude::*;
use strait_offsets::{
    Checkpoint, CheckpointKind, OffsetMap, Precision, Replayed, Side, Translation,
};

#[derive(Clone, Debug)]
enum Op {
    /// A batch forwarded as is: `len` records, after `gap_*` skipped offsets.
    Dense {
        gap_s: u64,
        gap_t: u64,
        len: u64,
    },
    /// A re-encoded batch: source offsets with holes (`steps` apart), dense on the target.
    Listed {
        gap_s: u64,
        gap_t: u64,
        steps: Vec<u64>,
    },
    /// Skipped trailing offsets (markers, aborted records; own markers on the target).
    Advance {
        ds: u64,
        dt: u64,
    },
    /// Retention on the source: log start moves to `next + 3 - back` (may pass `next`).
    SourceLogStart {
        back: u64,
    },
    /// Retention or truncation on the target.
    TargetLogStart {
        back: u64,
    },
    Checkpoint,
    Snapshot,
    Restart,
}

fn gap() -> impl Strategy<Value = u64> {
    prop_oneof![3 => Just(0u64), 1 => 1..5u64]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (gap(), gap(), 1..8u64).prop_map(|(gap_s, gap_t, len)| Op::Dense { gap_s, gap_t, len }),
        3 => (gap(), gap(), prop::collection::vec(prop_oneof![2 => Just(1u64), 1 => 2..4u64], 0..6))
            .prop_map(|(gap_s, gap_t, steps)| Op::Listed { gap_s, gap_t, steps }),
        2 => (0..3u64, 0..2u64).prop_map(|(ds, dt)| Op::Advance { ds, dt }),
        1 => (0..25u64).prop_map(|back| Op::SourceLogStart { back }),
        1 => (0..25u64).prop_map(|back| Op::TargetLogStart { back }),
        2 => Just(Op::Checkpoint),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Restart),
    ]
}

/// Replication from the beginning, or from a position mid-log.
fn started() -> impl Strategy<Value = Option<(u64, u64)>> {
    prop::option::of((0..20u64, 0..20u64))
}

#[derive(Default)]
struct Model {
    /// (source, target) of every replicated record, increasing on both sides.
    pairs: Vec<[u64; 2]>,
    next: [u64; 2],
    log_start: [u64; 2],
    /// Where replication started (0 0 when from the beginning).
    start: [u64; 2],
}

fn side(i: usize) -> Side {
    if i == 0 { Side::Source } else { Side::Target }
}

impl Model {
    /// The definition: the first replicated record at or after `pos` on side `from`.
    fn expected(&self, from: usize, pos: u64) -> Translation {
        let to = 1 - from;
        if pos < self.log_start[from] {
            return truncated(from, self.log_start[from]);
        }
        if pos > self.next[from] {
            return Translation::NotYetReplicated {
                replicated_end: self.next[from],
                counterpart_end: self.next[to],
            };
        }
        let i = self.pairs.partition_point(|p| p[from] < pos);
        let answer = self.pairs.get(i).map_or(self.next[to], |p| p[to]);
        if answer < self.log_start[to] {
            return truncated(to, self.log_start[to]);
        }
        // Before the first replicated record *and* before where replication started:
        // records were never copied, whatever the first record's offset.
        if pos < self.start[from] {
            return Translation::BeforeReplication {
                replication_start: self.start[from],
                counterpart: self.start[to],
            };
        }
        Translation::Mapped {
            offset: answer,
            precision: Precision::Exact,
        }
    }

    fn raise_log_start(&mut self, i: usize, at: u64) {
        if at > self.log_start[i] {
            self.log_start[i] = at;
            self.next[i] = self.next[i].max(at);
        }
    }
}

fn truncated(i: usize, log_start: u64) -> Translation {
    Translation::Truncated {
        side: side(i),
        log_start,
    }
}

fn lookup(map: &OffsetMap, from: usize, pos: u64) -> Translation {
    if from == 0 {
        map.translate(pos)
    } else {
        map.translate_reverse(pos)
    }
}

/// Compares every position on both sides (a few past the ends too).
fn check(map: &OffsetMap, model: &Model) -> Result<(), TestCaseError> {
    for from in 0..2 {
        let exact_from = map.exact_from(side(from));
        for pos in 0..=model.next[from] + 2 {
            let got = lookup(map, from, pos);
            let want = model.expected(from, pos);
            if pos >= exact_from {
                prop_assert_eq!(
                    got,
                    want,
                    "exact region: side {:?} position {}",
                    side(from),
                    pos
                );
                continue;
            }
            match (got, want) {
                (
                    Translation::Mapped { offset, precision },
                    Translation::Mapped { offset: exact, .. },
                ) => {
                    // Invariant 7: never past the exact answer, and within the stated error.
                    prop_assert!(
                        offset <= exact,
                        "{:?} {}: {} > {}",
                        side(from),
                        pos,
                        offset,
                        exact
                    );
                    match precision {
                        Precision::Exact => prop_assert_eq!(offset, exact),
                        Precision::RoundedDown { at_most } => {
                            prop_assert!(at_most > 0 && exact - offset <= at_most)
                        }
                    }
                }
                // A rounded-down answer inside a coarse segment that straddles the other
                // side's log start is reported as truncated rather than guessed.
                (Translation::Truncated { side: lost, .. }, Translation::Mapped { .. }) => {
                    prop_assert_eq!(lost, side(1 - from))
                }
                // Never an exact (or rounded) answer before where replication started.
                (Translation::Mapped { .. }, Translation::BeforeReplication { .. }) => {
                    prop_assert!(
                        false,
                        "{:?} {} is before the replication start",
                        side(from),
                        pos
                    )
                }
                (got, want) => {
                    prop_assert_eq!(got, want, "coarse region: {:?} {}", side(from), pos)
                }
            }
        }
    }
    Ok(())
}

/// Rebuilds a map from the newest snapshot and the deltas after it, as a restart would.
fn restore(log: &[Checkpoint], budget: usize) -> Result<OffsetMap, TestCaseError> {
    let start = log.iter().rposition(|c| c.kind == CheckpointKind::Snapshot);
    let mut map = match start {
        Some(i) => OffsetMap::from_snapshot(&log[i].bytes, budget)
            .map_err(|e| TestCaseError::fail(e.to_string()))?,
        None => OffsetMap::with_budget(budget),
    };
    // Deltas the snapshot already includes are recognised and skipped.
    for (i, checkpoint) in log.iter().enumerate() {
        if checkpoint.kind == CheckpointKind::Snapshot {
            continue;
        }
        let outcome = map
            .replay(&checkpoint.bytes)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected = if start.is_some_and(|s| i < s) {
            Replayed::AlreadyIncluded
        } else {
            Replayed::Applied
        };
        prop_assert_eq!(outcome, expected);
    }
    Ok(map)
}

fn run(budget: usize, start: Option<(u64, u64)>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut map = OffsetMap::with_budget(budget);
    let mut model = Model::default();
    let mut log: Vec<Checkpoint> = Vec::new();
    if let Some((s, t)) = start {
        map.start_at(s, t)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        model.next = [s, t];
        model.start = [s, t];
        // The flow's first state write of a new partition is a snapshot.
        log.push(map.snapshot());
    }
    check(&map, &model)?;
    for op in ops {
        match op {
            Op::Dense { gap_s, gap_t, len } => {
                let (s, t) = (model.next[0] + gap_s, model.next[1] + gap_t);
                map.append_dense(s, len, t)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                model.pairs.extend((0..len).map(|i| [s + i, t + i]));
                model.next = [s + len, t + len];
            }
            Op::Listed {
                gap_s,
                gap_t,
                steps,
            } => {
                let mut source = vec![model.next[0] + gap_s];
                for step in steps {
                    source.push(source[source.len() - 1] + step);
                }
                let t = model.next[1] + gap_t;
                map.append_listed(&source, t)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                model
                    .pairs
                    .extend(source.iter().enumerate().map(|(i, s)| [*s, t + i as u64]));
                model.next = [source[source.len() - 1] + 1, t + source.len() as u64];
            }
            Op::Advance { ds, dt } => {
                let next = [model.next[0] + ds, model.next[1] + dt];
                map.advance(next[0], next[1])
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                model.next = next;
            }
            Op::SourceLogStart { back } => {
                let at = (model.next[0] + 3).saturating_sub(back);
                map.set_source_log_start(at)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                model.raise_log_start(0, at);
            }
            Op::TargetLogStart { back } => {
                let at = (model.next[1] + 3).saturating_sub(back);
                map.set_target_log_start(at)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                model.raise_log_start(1, at);
            }
            Op::Checkpoint => log.extend(map.take_checkpoint()),
            Op::Snapshot => log.push(map.snapshot()),
            Op::Restart => {
                log.extend(map.take_checkpoint());
                let restored = restore(&log, budget)?;
                prop_assert_eq!(&restored, &map);
                prop_assert_eq!(restored.seq(), map.seq());
                map = restored;
            }
        }
        prop_assert!(map.runs().len() + map.coarse_segments().len() <= budget.max(4));
        check(&map, &model)?;
    }
    // Whatever happened, the durable log rebuilds the final map.
    log.extend(map.take_checkpoint());
    prop_assert_eq!(&restore(&log, budget)?, &map);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Tiny budgets: coarsening happens constantly.
    #[test]
    fn matches_model_with_coarsening(budget in 4..12usize, start in started(), ops in prop::collection::vec(op(), 1..60)) {
        run(budget, start, ops)?;
    }

    /// Budget never reached: every answer must equal the model's.
    #[test]
    fn matches_model_exactly(start in started(), ops in prop::collection::vec(op(), 1..60)) {
        run(10_000, start, ops)?;
    }
}
