//! Recovery after an unclean stop: which re-fetched records are already on the target,
//! proven record by record. Pure: the target's tail is read by the caller.
//!
//! After a restart the map ends at the last state write (`map.next(Target)`); the target
//! may hold more of our records past it (written, not yet checkpointed). The data path
//! re-plans the source from the map's source position and asks, step by step, whether the
//! step's records are what the target holds next. The caller reads the target from a
//! little before `map.next(Target)` to its end, known from the start: all at once
//! ([`Recovery::from_target`]) or chunk by chunk, as the steps need it ([`Recovery::tail`],
//! [`Recovery::read`]).
//!
//! Rules:
//! - A step is [`Decision::AlreadyWritten`] only when each of its records equals the next
//!   target record — timestamp, key, value and headers, whatever the batch boundaries
//!   (forwarded, merged and re-encoded batches alike) — at consecutive target offsets. The
//!   map then records it where the target holds it. Never on a count alone.
//! - A block of target records that repeats records matched before it, in order (a
//!   request of the killed process appended twice, or after its retry) is a duplicate:
//!   skipped, counted, and the map stays exact (the duplicate's offsets are mapped to
//!   nothing). The rule is [`repeat_len`], shared with the live check below. The last
//!   [`DUPLICATE_WINDOW`] records matched (or read before the map's position) are kept to
//!   recognise them, each as a SHA-256 digest of its content (timestamp, key, value and
//!   headers, unambiguously framed): 32 bytes whatever the record's size, holding no read
//!   chunk in memory. Two records are the same content exactly when their digests are
//!   equal (barring a SHA-256 collision); a step is still matched record by record.
//! - **Chunks.** Read in chunks, recovery decides from the records read so far (its
//!   window). When a step cannot be decided from the window — the window is empty, the
//!   step's records run past it, or a duplicate block reaches its end — and the target's
//!   end is not reached, the answer is [`Decision::ReadMore`]: nothing is decided or
//!   consumed, the caller reads the next chunk ([`Recovery::read`], which appends to the
//!   window) and asks again for the same step. So every decision is the one the whole
//!   tail read at once gives, whatever the chunk boundaries: a record's comparison or a
//!   duplicate block straddling two chunks is decided once both are read. A read that
//!   brings nothing new ends the tail where it stopped, as a whole read that stops short
//!   does. [`Recovery::release`] lets go of the window (it is read again when next
//!   needed), changing no decision.
//! - **Live duplicates** ([`live_duplicates`]): while running, an acknowledgement past
//!   where the map expects it is checked the same way: every target record between the
//!   expected offset and the acknowledged one must repeat, block by block and in order,
//!   records of ours — those the target holds just before the expected offset (the map's
//!   records) or those of the acknowledged batch and the batches sent after it (an
//!   earlier request of them landed first). Then they are duplicates; transaction markers
//!   between are skipped (they hold no records: an older transaction's end that landed
//!   after the bounds were read); anything else (a hole, a record we never wrote) is a
//!   mismatch.
//! - Anything else — a record that differs, a step that runs past the target's end, a hole
//!   where a batch is missing — is [`Decision::Mismatch`], an incident for the policy;
//!   never absorbed.
//! - Once every target record is read and matched, every step is [`Decision::Produce`];
//!   [`Recovery::finished`] reports it once (with the duplicates) and drops the state.

mod live;
mod state;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use strait_records::{Batch, Limits, Record};

pub use self::live::{LiveCheck, live_duplicates};
use super::plan::Step;

/// How many matched records are kept to recognise duplicates (a killed process had at
/// most 5 batches per partition in flight).
pub const DUPLICATE_WINDOW: usize = 50_000;

/// What to do with a planned step while recovering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Produce it (recovery is over, or the step writes nothing).
    Produce,
    /// The target already holds exactly its records, starting at `target_base`.
    AlreadyWritten {
        /// Target offset of the step's first record.
        target_base: u64,
    },
    /// The target does not hold the step's records next: not our data, or a hole.
    Mismatch {
        /// Target offset where the comparison failed.
        at: u64,
        /// What differs, for the incident message.
        reason: String,
    },
    /// Not decided: the records read so far do not tell (see the module rules). Read the
    /// target's tail on from `from` ([`Recovery::read`]) and ask again for the same step.
    ReadMore {
        /// First target offset not read yet.
        from: u64,
    },
}

/// Recovery is over: every target record past the map was matched (or skipped as a
/// duplicate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Duplicate records found and skipped.
    pub duplicates: u64,
    /// Where the target ended at start: the map's target side moves here.
    pub target_end: u64,
}

/// The record as compared: what a consumer sees, without offsets.
fn same(a: &Record, b: &Record) -> bool {
    a.timestamp == b.timestamp && a.key == b.key && a.value == b.value && a.headers == b.headers
}

/// A record's content as compared by [`same`] (timestamp, key, value and headers, not its
/// offset), as a SHA-256 digest: what the duplicate window keeps of a record.
type Digest = [u8; 32];

/// The [`Digest`] of `r`: every field framed by its presence and length, so that
/// different contents never frame to the same bytes.
fn digest(r: &Record) -> Digest {
    use sha2::Digest as _;
    fn bytes(h: &mut sha2::Sha256, b: Option<&[u8]>) {
        match b {
            None => h.update([0]),
            Some(b) => {
                h.update([1]);
                h.update((b.len() as u64).to_be_bytes());
                h.update(b);
            }
        }
    }
    let mut h = sha2::Sha256::new();
    h.update(r.timestamp.to_be_bytes());
    bytes(&mut h, r.key.as_deref());
    bytes(&mut h, r.value.as_deref());
    h.update((r.headers.len() as u64).to_be_bytes());
    for header in &r.headers {
        bytes(&mut h, Some(&header.key));
        bytes(&mut h, header.value.as_deref());
    }
    h.finalize().into()
}

/// One partition's recovery state. Boxed, and absent when there is nothing to recover
/// (almost every partition of a run): every partition's pipeline keeps one, and the
/// boxed state is about 100 bytes where the handle is 8.
#[derive(Debug, Default)]
pub struct Recovery {
    state: Option<Box<State>>,
}

/// What a partition that had target records past its map compares them with.
#[derive(Debug, Default)]
struct State {
    /// Target records past the map read and not matched yet (the window):
    /// (target offset, record).
    pending: VecDeque<(u64, Record)>,
    /// The map's target position: records read below it seed the duplicate window.
    from: u64,
    /// Every target offset below this was read; the next read starts here.
    read_to: u64,
    /// Where the target ends.
    end: u64,
    /// Recently matched records (for duplicate detection), oldest first, as digests.
    matched: VecDeque<Digest>,
    /// Duplicate records skipped so far.
    duplicates: u64,
    /// Whether any target record past the map was read (only then is the end reported).
    found: bool,
    limits: Limits,
}

impl Recovery {
    /// Nothing to recover: the target holds nothing past the map.
    pub fn none() -> Self {
        Recovery::default()
    }

    /// From the target's batches covering `from..end` (`from` = `map.next(Target)`), read
    /// whole. Records below `from` (the batches may start earlier; the caller reads a
    /// little before `from` on purpose) are what was written before the state: they seed
    /// the duplicate window, so a duplicate of them appended after the state is recognised.
    /// Control batches (transaction markers) hold no data and are skipped.
    pub fn from_target(
        batches: &[Batch],
        from: u64,
        end: u64,
        limits: Limits,
    ) -> Result<Self, strait_records::Error> {
        let mut r = Recovery::tail(0, from, end, limits);
        if let Some(s) = &mut r.state {
            s.take(batches)?;
            s.read_to = end;
        }
        Ok(r)
    }

    /// The target holds `from..end` past the map and nothing of it is read yet: the caller
    /// reads it chunk by chunk, starting at `read_from` (a little before `from`, to seed
    /// the duplicate window as [`Recovery::from_target`] does), when a step asks
    /// ([`Decision::ReadMore`]).
    pub fn tail(read_from: u64, from: u64, end: u64, limits: Limits) -> Self {
        if from >= end {
            return Recovery::none();
        }
        Recovery {
            state: Some(Box::new(State {
                from,
                read_to: read_from.min(from),
                end,
                limits,
                ..State::default()
            })),
        }
    }

    /// The next chunk of the target's tail, asked for by [`Decision::ReadMore`]: batches
    /// from its `from` on (they may start earlier; records already read are not read
    /// twice). A read that brings nothing new is taken as the target's end.
    pub fn read(&mut self, batches: &[Batch]) -> Result<(), strait_records::Error> {
        let Some(s) = &mut self.state else {
            return Ok(());
        };
        let before = s.read_to;
        s.take(batches)?;
        if s.read_to == before {
            s.read_to = s.end;
        }
        Ok(())
    }

    /// Lets go of the records read and not matched yet: they are read again (from the
    /// first of them) when a step next needs them. Changes no decision.
    pub fn release(&mut self) {
        if let Some(s) = &mut self.state
            && let Some((first, _)) = s.pending.front()
        {
            s.read_to = *first;
            s.pending = VecDeque::new();
        }
    }

    /// The lowest target offset whose record the window holds: a read chunk that ends at
    /// or below it is no longer needed (`u64::MAX` when the window is empty).
    pub fn holds_from(&self) -> u64 {
        self.state
            .as_ref()
            .and_then(|s| s.pending.front())
            .map_or(u64::MAX, |(o, _)| *o)
    }

    /// Where the reads have got to: every target offset below was read.
    pub fn read_to(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.read_to)
    }

    /// Target records read and not matched yet.
    pub fn remaining(&self) -> i64 {
        self.state.as_ref().map_or(0, |s| s.pending.len() as i64)
    }

    /// Where the target ends (the map restarts here if the policy skips a mismatch).
    pub fn target_end(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.end)
    }

    /// Duplicate records found and skipped.
    pub fn duplicates(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.duplicates)
    }

    /// Decides for the next step (call once per step, in order; after
    /// [`Decision::ReadMore`], again for the same step once the chunk is read).
    pub fn decide(&mut self, step: &Step) -> Decision {
        match &mut self.state {
            Some(s) => s.decide(step),
            None => Decision::Produce,
        }
    }

    /// `Some` once, when recovery is over and it had found records past the map; the state
    /// (and its duplicate window) is dropped when over, found or not.
    pub fn finished(&mut self) -> Option<Finished> {
        let s = self.state.as_deref()?;
        if !s.pending.is_empty() || s.read_to < s.end {
            return None;
        }
        let finished = s.found.then_some(Finished {
            duplicates: s.duplicates,
            target_end: s.end,
        });
        self.state = None;
        finished
    }
}

/// The length of the longest block at the front of `block` (target records with their
/// offsets) that repeats a contiguous run of `ours`, in order, at consecutive offsets; 0 if
/// none. The duplicate rule of recovery and of the live check.
pub fn repeat_len(ours: &VecDeque<Record>, block: &VecDeque<(u64, Record)>) -> usize {
    repeat_len_by(ours, block, same)
}

/// [`repeat_len`] with records compared by `eq`.
fn repeat_len_by<A, B>(
    ours: &VecDeque<A>,
    block: &VecDeque<(u64, B)>,
    eq: impl Fn(&A, &B) -> bool,
) -> usize {
    let Some((base, _)) = block.front() else {
        return 0;
    };
    let mut best = 0;
    for start in 0..ours.len() {
        let mut k = 0;
        while let (Some(r), Some((off, t))) = (ours.get(start + k), block.get(k)) {
            if *off != base + k as u64 || !eq(r, t) {
                break;
            }
            k += 1;
        }
        best = best.max(k);
        if best == block.len() {
            break;
        }
    }
    best
}
