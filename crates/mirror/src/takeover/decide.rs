//! Where a takeover starts, proven by content (pure; the rules of [`super`]).

use strait_client::ConsumedRecord;

use crate::groups::wire::{Reader, WireError, Writer};

/// One of MM2's offset syncs: source record `upstream` landed at target offset
/// `downstream` (`org.apache.kafka.connect.mirror.OffsetSync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetSync {
    /// The source offset.
    pub upstream: i64,
    /// The target offset it landed at.
    pub downstream: i64,
}

/// Decodes an offset-sync record: key `STRING topic | INT32 partition`, value
/// `INT64 upstreamOffset | INT64 offset`. Trailing bytes are ignored, as Java's
/// `Schema.read` ignores them.
pub fn decode_offset_sync(
    key: &[u8],
    value: &[u8],
) -> Result<(String, i32, OffsetSync), WireError> {
    let mut k = Reader::new(key);
    let topic = k.string("offset sync topic")?;
    let partition = k.i32("offset sync partition")?;
    let mut v = Reader::new(value);
    let upstream = v.i64("offset sync upstream offset")?;
    let downstream = v.i64("offset sync downstream offset")?;
    Ok((
        topic,
        partition,
        OffsetSync {
            upstream,
            downstream,
        },
    ))
}

/// Encodes an offset sync as MM2 writes it (for tests that play MM2).
pub fn encode_offset_sync(topic: &str, partition: i32, sync: OffsetSync) -> (Vec<u8>, Vec<u8>) {
    let key = Writer::default().string(topic).i32(partition).finish();
    let value = Writer::default()
        .i64(sync.upstream)
        .i64(sync.downstream)
        .finish();
    (key, value)
}

/// Rule 2: the source offset of the record at target offset `last`, from the newest sync
/// at or below it, assuming no gap on either side since; `None` without such a sync.
pub fn candidate_from_syncs(last: i64, syncs: &[OffsetSync]) -> Option<i64> {
    syncs
        .iter()
        .filter(|s| s.downstream <= last && s.upstream >= 0)
        .max_by_key(|s| (s.downstream, s.upstream))
        .map(|s| s.upstream.saturating_add(last - s.downstream))
}

/// Where the source offset of the target's last record was looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// MM2's offset syncs pointed at this source offset.
    OffsetSync(i64),
    /// The first source offset at or after the record's timestamp.
    Timestamp(i64),
}

/// How a takeover's start was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// The target partition was never written: replication starts at the source's start.
    EmptyTarget,
    /// The target's last records are the source's, compared by content (rule 3).
    Content {
        /// The target offset of the last record.
        target_offset: i64,
        /// The source offset of the same record.
        source_offset: i64,
        /// Records compared (the target's last ones, in order).
        compared: usize,
        /// Where the search started.
        hint: Hint,
    },
}

/// A partition's takeover: replication starts at `source_next`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The first source offset Strait copies.
    pub source_next: i64,
    /// Why.
    pub proof: Proof,
}

/// Why a partition cannot be taken over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unproven {
    /// The target's end moved while it was watched (rule 1).
    #[error(
        "the target partition grew from offset {before} to {after} while Strait watched it: \
         MirrorMaker 2 (or another writer) is still running; stop it, then start again"
    )]
    StillWritten {
        /// The end first read.
        before: i64,
        /// The end read after the quiet period.
        after: i64,
    },
    /// The target partition was not there (or empty) when the target was watched, and
    /// holds records now (rule 1: something wrote it since).
    #[error(
        "the target partition was empty or absent when Strait watched the target and holds \
         records up to offset {after} now: MirrorMaker 2 (or another writer) is still \
         running; stop it, then start again"
    )]
    Unwatched {
        /// Its end now.
        after: i64,
    },
    /// The target was written, but none of its records is left to compare.
    #[error(
        "the target partition ends at offset {end} but holds no record to compare (deleted \
         by retention, or only transaction markers): its position on the source cannot be \
         proven"
    )]
    NothingToCompare {
        /// The target's end.
        end: i64,
    },
    /// No source record in the searched range equals the target's last records.
    #[error(
        "the target's last record (offset {target_offset}) matches no source record in \
         offsets {from}..{to} searched from {hint:?}: the target does not hold a copy of this \
         source partition, or it was copied with changes"
    )]
    NoMatch {
        /// The target's last record.
        target_offset: i64,
        /// The source range searched.
        from: i64,
        /// Its end (exclusive).
        to: i64,
        /// Where the search started.
        hint: Hint,
    },
    /// Several source records match, and nothing tells them apart.
    #[error(
        "the target's last {compared} record(s) match the source at several offsets \
         ({offsets:?}) and no MM2 offset sync names one: the start cannot be proven"
    )]
    Ambiguous {
        /// Records compared.
        compared: usize,
        /// The source offsets of the matching last records.
        offsets: Vec<i64>,
    },
}

/// Whether two records are the same record: key, value, headers and timestamp.
pub fn same(a: &ConsumedRecord, b: &ConsumedRecord) -> bool {
    a.timestamp == b.timestamp && a.key == b.key && a.value == b.value && a.headers == b.headers
}

/// Rule 3: the source offset of the target's last record. `tail` holds the target's last
/// data records in offset order (non-empty); `source` the source records read around the
/// hint, in offset order. A source record matches when it equals the target's last record
/// and the target's earlier tail records appear, in order, among the source records
/// before it (a subsequence: the source may hold records the target lacks, such as
/// aborted ones MM2 did not copy). One match proves the start; several are told apart
/// only by an offset-sync hint naming one of them.
pub fn prove(
    tail: &[ConsumedRecord],
    source: &[ConsumedRecord],
    hint: Hint,
    searched: (i64, i64),
) -> Result<Start, Unproven> {
    let Some(last) = tail.last() else {
        return Err(Unproven::NothingToCompare { end: searched.1 });
    };
    let earlier = &tail[..tail.len() - 1];
    let matches: Vec<i64> = source
        .iter()
        .enumerate()
        .filter(|(_, r)| same(r, last))
        .filter(|(i, _)| in_order_before(earlier, &source[..*i]))
        .map(|(_, r)| r.offset)
        .collect();
    let chosen = match (matches.as_slice(), hint) {
        ([], _) => {
            return Err(Unproven::NoMatch {
                target_offset: last.offset,
                from: searched.0,
                to: searched.1,
                hint,
            });
        }
        ([one], _) => *one,
        (many, Hint::OffsetSync(at)) if many.contains(&at) => at,
        (many, _) => {
            return Err(Unproven::Ambiguous {
                compared: tail.len(),
                offsets: many.to_vec(),
            });
        }
    };
    Ok(Start {
        source_next: chosen + 1,
        proof: Proof::Content {
            target_offset: last.offset,
            source_offset: chosen,
            compared: tail.len(),
            hint,
        },
    })
}

/// Whether `wanted` appears in `within` in order (not necessarily adjacent).
fn in_order_before(wanted: &[ConsumedRecord], within: &[ConsumedRecord]) -> bool {
    let mut it = within.iter();
    wanted.iter().all(|w| it.any(|r| same(r, w)))
}

/// Rule 1: whether the target's end stayed put while watched (`before`: `None` when the
/// partition was not watched, as one that appeared after the watch).
pub fn quiet(before: Option<i64>, after: i64) -> Result<(), Unproven> {
    match before {
        Some(b) if b == after => Ok(()),
        Some(before) => Err(Unproven::StillWritten { before, after }),
        None => Err(Unproven::Unwatched { after }),
    }
}

#[cfg(test)]
mod tests;
