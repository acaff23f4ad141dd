//! The live check ([`live_duplicates`]): whether target records between where the map
//! expected an acknowledged batch and where it landed are duplicates of ours. Pure.

use std::collections::{BTreeSet, VecDeque};

use strait_records::{Batch, Limits, Record};

use super::repeat_len;

/// Records of ours known around a live acknowledgement past the map (see the module
/// rules): the target's records just before `expected` and the acknowledged batch and
/// every batch sent after it.
#[derive(Debug)]
pub struct LiveCheck<'a> {
    /// The target's batches from some offset before `expected` up to `acked`.
    pub target: &'a [Batch],
    /// Target offsets from here to `expected` hold records of ours (the map's).
    pub ours_from: u64,
    /// Where the map expected the batch.
    pub expected: u64,
    /// Where the broker says it landed (`> expected`).
    pub acked: u64,
    /// The acknowledged batch and the batches sent after it, in order.
    pub sent: &'a [Batch],
}

/// `Ok(duplicates)` when every target record in `expected..acked` repeats records of ours
/// (block by block, in order, at consecutive offsets); `Err(why not)` otherwise.
pub fn live_duplicates(c: &LiveCheck<'_>, limits: &Limits) -> Result<u64, String> {
    let Around {
        ours,
        mut between,
        markers,
    } = around(c, limits)?;
    let want = c.acked - c.expected - markers.len() as u64;
    let mut next = c.expected;
    let skip = |next: &mut u64| {
        while markers.contains(next) {
            *next += 1;
        }
    };
    skip(&mut next);
    for (off, _) in &between {
        if *off != next {
            return Err(format!(
                "the target has no record at offset {next} (next is {off})"
            ));
        }
        next += 1;
        skip(&mut next);
    }
    if next != c.acked {
        return Err(format!(
            "the target holds {} record(s) of the {want} between {} and {}",
            between.len(),
            c.expected,
            c.acked
        ));
    }
    while !between.is_empty() {
        let k = repeat_len(&ours, &between);
        if k == 0 {
            let at = between.front().map_or(c.expected, |(o, _)| *o);
            return Err(format!(
                "the target record at offset {at} is not a record Strait wrote just before"
            ));
        }
        between.drain(..k);
    }
    Ok(want)
}

/// What [`live_duplicates`] compares, decoded from a [`LiveCheck`]'s batches.
struct Around {
    /// Records of ours: the map's just before `expected`, then those sent.
    ours: VecDeque<Record>,
    /// The target's records in `expected..acked`, with their offsets.
    between: VecDeque<(u64, Record)>,
    /// Offsets in `expected..acked` that hold transaction markers.
    markers: BTreeSet<u64>,
}

/// Decodes `c`'s target batches into the records between and those of ours before
/// `expected`, and appends the records of the batches sent.
fn around(c: &LiveCheck<'_>, limits: &Limits) -> Result<Around, String> {
    let mut ours = VecDeque::new();
    let mut between = VecDeque::new();
    // Transaction markers between hold no records: an earlier transaction's end landing
    // after the bounds were read (an exactly-once hand-over on a broker that writes the
    // fenced transaction's markers late). Their offsets are skipped, not counted.
    let mut markers = BTreeSet::new();
    for b in c.target {
        let h = b.header();
        let first = u64::try_from(h.base_offset).unwrap_or(0);
        if h.attributes.is_control() {
            let last = first + u64::try_from(h.last_offset_delta).unwrap_or(0);
            markers.extend((first..=last).filter(|o| *o >= c.expected && *o < c.acked));
            continue;
        }
        let records = b
            .decode_records(limits)
            .map_err(|e| format!("a target batch at offset {first} cannot be decoded: {e}"))?;
        for r in records {
            let Ok(off) = u64::try_from(r.offset) else {
                continue;
            };
            if off >= c.expected && off < c.acked {
                between.push_back((off, r));
            } else if off >= c.ours_from && off < c.expected {
                ours.push_back(r);
            }
        }
    }
    for b in c.sent {
        let records = b
            .decode_records(limits)
            .map_err(|e| format!("a batch of ours cannot be decoded to compare: {e}"))?;
        ours.extend(records);
    }
    Ok(Around {
        ours,
        between,
        markers,
    })
}
