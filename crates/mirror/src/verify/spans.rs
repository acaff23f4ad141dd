//! The offset map cut into the pieces `strait verify` compares
//! ([`compare`](mod@super::compare)): its exact runs, its coarse segments and the gaps
//! between them, up to the replicated end on both sides; clipped to what both logs still
//! hold (retention), split into windows read at once, or sampled.

use std::ops::Range;

use strait_offsets::{OffsetMap, Side};

/// Offsets per side read and compared at once: exact runs and gaps are split to it.
pub const WINDOW: u64 = 20_000;

/// A piece of the map: what the source offsets `source` and target offsets `target` should
/// hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// An exact run (rule 1): `len` records, one for one.
    Exact {
        /// First source offset.
        source: u64,
        /// First target offset.
        target: u64,
        /// Records.
        len: u64,
    },
    /// A coarse segment (rule 3): `records` records in order, gaps somewhere inside.
    Coarse {
        /// Source offsets.
        source: Range<u64>,
        /// Target offsets.
        target: Range<u64>,
        /// Records on each side.
        records: u64,
    },
    /// Offsets the map does not pair (rule 2): nothing should be there.
    Gap {
        /// Source offsets.
        source: Range<u64>,
        /// Target offsets.
        target: Range<u64>,
    },
}

impl Span {
    /// The source offsets it covers.
    pub fn source(&self) -> Range<u64> {
        match self {
            Span::Exact { source, len, .. } => *source..source + len,
            Span::Coarse { source, .. } | Span::Gap { source, .. } => source.clone(),
        }
    }

    /// The target offsets it covers.
    pub fn target(&self) -> Range<u64> {
        match self {
            Span::Exact { target, len, .. } => *target..target + len,
            Span::Coarse { target, .. } | Span::Gap { target, .. } => target.clone(),
        }
    }
}

/// A partition's spans, clipped to the log starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spans {
    /// In offset order on both sides; exact runs and gaps at most [`WINDOW`] long.
    pub spans: Vec<Span>,
    /// Records of coarse segments not compared because retention removed part of them.
    pub skipped: u64,
}

impl Spans {
    /// The source offsets the spans cover (empty when none).
    pub fn source_range(&self) -> Range<u64> {
        match (self.spans.first(), self.spans.last()) {
            (Some(a), Some(b)) => a.source().start..b.source().end,
            _ => 0..0,
        }
    }

    /// The target offsets the spans cover (empty when none).
    pub fn target_range(&self) -> Range<u64> {
        match (self.spans.first(), self.spans.last()) {
            (Some(a), Some(b)) => a.target().start..b.target().end,
            _ => 0..0,
        }
    }
}

/// The spans of `map` from its first entry to its replicated end on both sides, clipped
/// to `from` (each side's log start now) and split to [`WINDOW`] (rule 5).
pub fn spans(map: &OffsetMap, from: [u64; 2]) -> Spans {
    let mut entries: Vec<Span> = map
        .coarse_segments()
        .iter()
        .map(|s| Span::Coarse {
            source: s.start(Side::Source)..s.end(Side::Source),
            target: s.start(Side::Target)..s.end(Side::Target),
            records: s.records(),
        })
        .collect();
    entries.extend(map.runs().map(|r| Span::Exact {
        source: r.start(Side::Source),
        target: r.start(Side::Target),
        len: r.len(),
    }));
    let mut all = Vec::new();
    let mut cursor: Option<(u64, u64)> = None;
    for e in entries {
        if let Some((s, t)) = cursor
            && (e.source().start > s || e.target().start > t)
        {
            all.push(Span::Gap {
                source: s..e.source().start,
                target: t..e.target().start,
            });
        }
        cursor = Some((e.source().end, e.target().end));
        all.push(e);
    }
    if let Some((s, t)) = cursor {
        let (ns, nt) = (map.next(Side::Source), map.next(Side::Target));
        if ns > s || nt > t {
            all.push(Span::Gap {
                source: s..ns.max(s),
                target: t..nt.max(t),
            });
        }
    }
    let mut out = Spans::default();
    for span in all {
        match clip(span, from) {
            Clipped::Keep(s) => split_into(s, &mut out.spans),
            Clipped::Skipped(records) => out.skipped += records,
            Clipped::Gone => {}
        }
    }
    out
}

enum Clipped {
    Keep(Span),
    Skipped(u64),
    Gone,
}

fn clip(span: Span, [fs, ft]: [u64; 2]) -> Clipped {
    match span {
        Span::Exact {
            source,
            target,
            len,
        } => {
            let skip = fs.saturating_sub(source).max(ft.saturating_sub(target));
            if skip >= len {
                Clipped::Gone
            } else {
                Clipped::Keep(Span::Exact {
                    source: source + skip,
                    target: target + skip,
                    len: len - skip,
                })
            }
        }
        Span::Coarse {
            source,
            target,
            records,
        } => {
            if source.end <= fs || target.end <= ft {
                Clipped::Gone
            } else if source.start < fs || target.start < ft {
                Clipped::Skipped(records)
            } else {
                Clipped::Keep(Span::Coarse {
                    source,
                    target,
                    records,
                })
            }
        }
        Span::Gap { source, target } => {
            let source = source.start.max(fs).min(source.end)..source.end;
            let target = target.start.max(ft).min(target.end)..target.end;
            if source.is_empty() && target.is_empty() {
                Clipped::Gone
            } else {
                Clipped::Keep(Span::Gap { source, target })
            }
        }
    }
}

fn split_into(span: Span, out: &mut Vec<Span>) {
    match span {
        Span::Exact {
            source,
            target,
            len,
        } => {
            let mut done = 0;
            while done < len {
                let n = (len - done).min(WINDOW);
                out.push(Span::Exact {
                    source: source + done,
                    target: target + done,
                    len: n,
                });
                done += n;
            }
        }
        Span::Gap { source, target } => {
            let (mut s, mut t) = (source.start, target.start);
            while s < source.end || t < target.end {
                let (se, te) = ((s + WINDOW).min(source.end), (t + WINDOW).min(target.end));
                out.push(Span::Gap {
                    source: s..se,
                    target: t..te,
                });
                (s, t) = (se, te);
            }
        }
        coarse @ Span::Coarse { .. } => out.push(coarse),
    }
}

/// `records` records of the exact spans, in `windows` windows spread evenly over them;
/// every span when they hold no more than `records` (the sampled mode).
pub fn sample(spans: &Spans, records: u64, windows: u64) -> Spans {
    let exact: Vec<&Span> = spans
        .spans
        .iter()
        .filter(|s| matches!(s, Span::Exact { .. }))
        .collect();
    let total: u64 = exact
        .iter()
        .map(|s| s.source().end - s.source().start)
        .sum();
    if total <= records {
        return spans.clone();
    }
    let windows = windows.clamp(1, records.max(1));
    let width = (records / windows).max(1);
    let mut wanted: Vec<Range<u64>> = Vec::new();
    for i in 0..windows {
        let start = if windows == 1 {
            0
        } else {
            i * (total - width) / (windows - 1)
        };
        wanted.push(start..start + width);
    }
    let mut out = Spans::default();
    let mut before = 0;
    for s in exact {
        let Span::Exact {
            source,
            target,
            len,
        } = *s
        else {
            continue;
        };
        let here = before..before + len;
        for w in &wanted {
            let (a, b) = (w.start.max(here.start), w.end.min(here.end));
            if a < b {
                out.spans.push(Span::Exact {
                    source: source + (a - before),
                    target: target + (a - before),
                    len: b - a,
                });
            }
        }
        before += len;
    }
    out
}
