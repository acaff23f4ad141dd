//! The pure rules of `strait verify` for one partition: which source and target offsets
//! the offset map pairs, and what each difference between the two logs is called. No I/O:
//! [`super`] reads the records and feeds them in; every rule is unit-tested by name.
//!
//! The map is cut into [`Span`]s ([`super::spans`]): its exact runs, its coarse segments
//! and the gaps between them, up to the replicated end on both sides. Then:
//!
//! 1. **An exact run pairs records by offset**: source offset `s` and target offset
//!    `t + (s - run.source)` hold the same record (key, value, headers, timestamp).
//!    Different fields are a [`Finding::Changed`], naming the fields (and, when the target
//!    record is a copy of another source record, which one: a shift). A source record
//!    whose target offset holds none is [`Finding::Missing`]; a target record whose source
//!    offset holds none is a [`Finding::Duplicate`] of the source record with the same
//!    content, or [`Finding::Foreign`] when no source record read so far has it.
//! 2. **A gap holds nothing**: a source record at an offset the map does not pair was
//!    never written ([`Finding::Missing`]); a target record in a gap is a duplicate or a
//!    foreign record, as in rule 1.
//! 3. **Coarse history compares as sequences**: a coarse segment forgot where its gaps
//!    are, so its records are compared in order, by count and digest
//!    ([`Finding::CoarseDiffers`]).
//! 4. **Compaction explains an absence**: on a compacted topic a record present on one side
//!    only is not a finding when it is a tombstone or when the side lacking it holds a
//!    later record with the same key (compaction removed it). This is decided at the end
//!    of the partition ([`Comparer::finish`]), with the keys seen on each side, the
//!    records past the replicated end included ([`Comparer::later`]). Coarse history of a
//!    compacted topic that differs cannot be told apart from compaction: it is counted as
//!    unchecked.
//! 5. **Only what both sides still hold is compared**: spans are clipped to the log starts
//!    (retention), and a coarse segment partly below one is not compared (counted in
//!    [`super::spans::Spans::skipped`]).
//! 6. **Findings are named up to [`MAX_NAMED`] per partition**; the tally counts all.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use strait_offsets::Side;

use super::content::{Content, Field, Seen};
use super::spans::Span;

/// Findings named per partition (rule 6).
pub const MAX_NAMED: usize = 50;
/// Source records remembered to name the source record a target record copies (rule 1).
pub const RECENT: usize = 200_000;
/// Keys remembered per side on a compacted topic (rule 4); past it, absences are unchecked.
pub const MAX_KEYS: usize = 2_000_000;

/// A difference between the two logs, named by offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A source record that is not on the target.
    Missing {
        /// Its source offset.
        source: u64,
        /// Where the map says it should be (`None`: the map never paired it).
        target: Option<u64>,
    },
    /// A target record that copies a source record already paired elsewhere.
    Duplicate {
        /// Its target offset.
        target: u64,
        /// The source record it copies.
        of_source: u64,
    },
    /// A target record no source record read has the content of.
    Foreign {
        /// Its target offset.
        target: u64,
    },
    /// A pair whose records differ.
    Changed {
        /// The source offset.
        source: u64,
        /// The target offset the map pairs with it.
        target: u64,
        /// The fields that differ.
        fields: Vec<Field>,
        /// The source record the target record copies instead, when one was read.
        holds_source: Option<u64>,
    },
    /// A coarse segment whose records differ (rule 3).
    CoarseDiffers {
        /// The segment's source offsets.
        source: Range<u64>,
        /// Its target offsets.
        target: Range<u64>,
        /// Records read on the source.
        source_records: u64,
        /// Records read on the target.
        target_records: u64,
    },
}

/// What one partition's comparison counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Source records compared.
    pub source_records: u64,
    /// Target records compared.
    pub target_records: u64,
    /// Pairs that hold the same record.
    pub matched: u64,
    /// [`Finding::Missing`].
    pub missing: u64,
    /// [`Finding::Duplicate`].
    pub duplicate: u64,
    /// [`Finding::Foreign`].
    pub foreign: u64,
    /// [`Finding::Changed`].
    pub changed: u64,
    /// Records in [`Finding::CoarseDiffers`] segments.
    pub coarse_differs: u64,
    /// Absences compaction explains (rule 4): not findings.
    pub compacted: u64,
    /// Records that could not be checked (rule 4's limits).
    pub unchecked: u64,
}

impl Tally {
    /// No finding and nothing unchecked.
    pub fn clean(&self) -> bool {
        self.missing + self.duplicate + self.foreign + self.changed + self.coarse_differs == 0
            && self.unchecked == 0
    }
}

/// One partition's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// The counts.
    pub tally: Tally,
    /// The first [`MAX_NAMED`] findings, in the order found.
    pub findings: Vec<Finding>,
    /// SHA-256 (hex, first 16 bytes) of the source records compared, in order.
    pub source_digest: String,
    /// The same over the target records compared.
    pub target_digest: String,
}

/// A record on one side only, on a compacted topic, waiting for rule 4.
#[derive(Debug, Clone, Copy)]
struct Absent {
    /// The side holding it.
    on: Side,
    offset: u64,
    /// Its place in source offsets (for "a later record with the same key").
    position: u64,
    content: Content,
}

/// The comparison of one partition, fed span by span in offset order.
#[derive(Debug)]
pub struct Comparer {
    compacted: bool,
    tally: Tally,
    findings: Vec<Finding>,
    recent: HashMap<Content, u64>,
    order: VecDeque<Content>,
    keys: [HashMap<u64, u64>; 2],
    keys_full: bool,
    absent: Vec<Absent>,
    digests: [Sha256; 2],
    coarse: [(u64, Sha256); 2],
}

fn idx(side: Side) -> usize {
    match side {
        Side::Source => 0,
        Side::Target => 1,
    }
}

impl Comparer {
    /// A comparison; `compacted`: the topic's `cleanup.policy` includes `compact`.
    pub fn new(compacted: bool) -> Self {
        Comparer {
            compacted,
            tally: Tally::default(),
            findings: Vec::new(),
            recent: HashMap::new(),
            order: VecDeque::new(),
            keys: [HashMap::new(), HashMap::new()],
            keys_full: false,
            absent: Vec::new(),
            digests: [Sha256::new(), Sha256::new()],
            coarse: [(0, Sha256::new()), (0, Sha256::new())],
        }
    }

    fn name(&mut self, f: Finding) {
        if self.findings.len() < MAX_NAMED {
            self.findings.push(f);
        }
    }

    fn remember(&mut self, s: &Seen) {
        if self.recent.insert(s.content, s.offset).is_none() {
            self.order.push_back(s.content);
            if self.order.len() > RECENT
                && let Some(old) = self.order.pop_front()
            {
                self.recent.remove(&old);
            }
        }
    }

    fn key(&mut self, side: Side, key: u64, position: u64) {
        if !self.compacted || self.keys_full {
            return;
        }
        let keys = &mut self.keys[idx(side)];
        if keys.len() >= MAX_KEYS && !keys.contains_key(&key) {
            self.keys_full = true;
            return;
        }
        let e = keys.entry(key).or_insert(position);
        *e = (*e).max(position);
    }

    fn count(&mut self, side: Side, s: &Seen, position: u64) {
        match side {
            Side::Source => self.tally.source_records += 1,
            Side::Target => self.tally.target_records += 1,
        }
        s.content.feed(&mut self.digests[idx(side)]);
        self.key(side, s.content.key, position);
    }

    /// A target record no source offset pairs with (rules 1 and 2).
    fn unpaired_target(&mut self, t: &Seen) {
        match self.recent.get(&t.content) {
            Some(&of_source) => {
                self.tally.duplicate += 1;
                self.name(Finding::Duplicate {
                    target: t.offset,
                    of_source,
                });
            }
            None => {
                self.tally.foreign += 1;
                self.name(Finding::Foreign { target: t.offset });
            }
        }
    }

    /// Compares an exact span or a gap: `source` and `target` are the records read in its
    /// source and target offsets, in order. A coarse span is fed with [`Comparer::coarse`].
    pub fn span(&mut self, span: &Span, source: &[Seen], target: &[Seen]) {
        for s in source {
            self.remember(s);
        }
        match *span {
            Span::Exact {
                source: s0,
                target: t0,
                ..
            } => self.exact(s0, t0, source, target),
            Span::Gap { .. } => {
                for s in source {
                    self.count(Side::Source, s, s.offset);
                    self.tally.missing += 1;
                    self.name(Finding::Missing {
                        source: s.offset,
                        target: None,
                    });
                }
                let position = span.source().start;
                for t in target {
                    self.count(Side::Target, t, position);
                    self.unpaired_target(t);
                }
            }
            Span::Coarse { .. } => self.coarse(source, target),
        }
    }

    fn exact(&mut self, s0: u64, t0: u64, source: &[Seen], target: &[Seen]) {
        let (mut i, mut j) = (0, 0);
        while i < source.len() || j < target.len() {
            let rs = source.get(i).map(|s| s.offset - s0);
            let rt = target.get(j).map(|t| t.offset - t0);
            match (rs, rt) {
                (Some(a), Some(b)) if a == b => {
                    self.paired(source[i], target[j]);
                    i += 1;
                    j += 1;
                }
                (Some(a), b) if b.is_none_or(|b| a < b) => {
                    self.source_only(source[i], t0 + a);
                    i += 1;
                }
                (_, Some(b)) => {
                    self.target_only(target[j], s0 + b);
                    j += 1;
                }
                _ => break,
            }
        }
    }

    /// A source record and the target record at its place: matched, or changed (with
    /// where the target holds the source's content, if it does recently).
    fn paired(&mut self, s: Seen, t: Seen) {
        self.count(Side::Source, &s, s.offset);
        self.count(Side::Target, &t, s.offset);
        let fields = s.content.differs(&t.content);
        if fields.is_empty() {
            self.tally.matched += 1;
        } else {
            self.tally.changed += 1;
            let holds_source = self
                .recent
                .get(&t.content)
                .copied()
                .filter(|o| *o != s.offset);
            self.name(Finding::Changed {
                source: s.offset,
                target: t.offset,
                fields,
                holds_source,
            });
        }
    }

    /// A source record with nothing at its place `target` on the target: missing, or
    /// (compacted topics) absent until the rest is seen.
    fn source_only(&mut self, s: Seen, target: u64) {
        self.count(Side::Source, &s, s.offset);
        if self.compacted {
            self.absent.push(Absent {
                on: Side::Source,
                offset: s.offset,
                position: s.offset,
                content: s.content,
            });
        } else {
            self.tally.missing += 1;
            self.name(Finding::Missing {
                source: s.offset,
                target: Some(target),
            });
        }
    }

    /// A target record with nothing at its place `position` on the source: unpaired, or
    /// (compacted topics) absent until the rest is seen.
    fn target_only(&mut self, t: Seen, position: u64) {
        self.count(Side::Target, &t, position);
        if self.compacted {
            self.absent.push(Absent {
                on: Side::Target,
                offset: t.offset,
                position,
                content: t.content,
            });
        } else {
            self.unpaired_target(&t);
        }
    }

    /// Feeds part of a coarse segment's records (rule 3); [`Comparer::coarse_done`] ends it.
    pub fn coarse(&mut self, source: &[Seen], target: &[Seen]) {
        for (side, records) in [(Side::Source, source), (Side::Target, target)] {
            for r in records {
                // Positions inside coarse history are not known: the key counts as seen
                // at the segment's start (it explains no absence after it).
                self.count(side, r, 0);
                let (n, h) = &mut self.coarse[idx(side)];
                *n += 1;
                r.content.feed(h);
            }
        }
    }

    /// Ends a coarse segment fed with [`Comparer::coarse`] (rule 3).
    pub fn coarse_done(&mut self, span: &Span) {
        let [(ns, hs), (nt, ht)] =
            std::mem::replace(&mut self.coarse, [(0, Sha256::new()), (0, Sha256::new())]);
        if ns == nt && hs.finalize() == ht.finalize() {
            self.tally.matched += ns;
        } else if self.compacted {
            self.tally.unchecked += ns.max(nt);
        } else {
            self.tally.coarse_differs += ns.max(nt);
            self.name(Finding::CoarseDiffers {
                source: span.source(),
                target: span.target(),
                source_records: ns,
                target_records: nt,
            });
        }
    }

    /// Records of `side` past the replicated end: on a compacted topic their keys explain
    /// absences (rule 4); otherwise nothing.
    pub fn later(&mut self, side: Side, records: &[Seen]) {
        for r in records {
            self.key(side, r.content.key, u64::MAX);
        }
    }

    /// Rule 4 for what was on one side only, and the result.
    pub fn finish(mut self) -> Compared {
        for a in std::mem::take(&mut self.absent) {
            let other = match a.on {
                Side::Source => Side::Target,
                Side::Target => Side::Source,
            };
            let later = self.keys[idx(other)]
                .get(&a.content.key)
                .is_some_and(|p| *p > a.position);
            if a.content.tombstone || later {
                self.tally.compacted += 1;
            } else if self.keys_full {
                self.tally.unchecked += 1;
            } else {
                match a.on {
                    Side::Source => {
                        self.tally.missing += 1;
                        self.name(Finding::Missing {
                            source: a.offset,
                            target: None,
                        });
                    }
                    Side::Target => {
                        let t = Seen {
                            offset: a.offset,
                            content: a.content,
                        };
                        self.unpaired_target(&t);
                    }
                }
            }
        }
        let [s, t] = self.digests;
        Compared {
            tally: self.tally,
            findings: self.findings,
            source_digest: hex16(s),
            target_digest: hex16(t),
        }
    }
}

fn hex16(h: Sha256) -> String {
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
