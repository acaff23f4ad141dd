//! Per-partition comparison of what the source holds with what the target holds, as the
//! fault tests prove it: nothing lost, source order kept, duplicates counted (and held to
//! a bound by the caller), nothing that is not the source's.
//!
//! Records are identified by value, so test data must give every record a unique value
//! (`"<partition>:<sequence>"`, say). [`read_partitions`] reads a topic with librdkafka
//! (the independent reader: it verifies every batch's CRC); [`check`] compares.
//!
//! ```
//! use std::collections::BTreeMap;
//! use bytes::Bytes;
//! use strait_testkit::verify::check;
//!
//! let v = |s: &str| Bytes::from(s.to_owned());
//! let source = BTreeMap::from([(0, vec![v("a"), v("b"), v("c")])]);
//! // "b" landed twice (a re-sent batch), nothing lost, order kept.
//! let target = BTreeMap::from([(0, vec![v("a"), v("b"), v("b"), v("c")])]);
//! let report = check(&source, &target);
//! assert_eq!(report.total().duplicates, 1);
//! assert!(report.problems(1).is_empty());
//! assert_eq!(report.problems(0).len(), 1);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use crate::error::Result;
use crate::rdkafka::{self, ConsumeOptions, Isolation};

/// What the comparison of one partition found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionCheck {
    /// Records in the source partition.
    pub source: usize,
    /// Records in the target partition.
    pub target: usize,
    /// Source records the target lacks.
    pub lost: usize,
    /// Target records beyond the first copy of a source record.
    pub duplicates: usize,
    /// Target records that are not in the source.
    pub foreign: usize,
    /// The first target record (by value) whose first copy comes before a record that
    /// precedes it in the source; `None` when the source order is kept.
    pub out_of_order: Option<String>,
}

impl PartitionCheck {
    /// Compares one partition (values in offset order).
    pub fn compare(source: &[Bytes], target: &[Bytes]) -> PartitionCheck {
        let index: HashMap<&Bytes, usize> =
            source.iter().enumerate().map(|(i, v)| (v, i)).collect();
        let mut seen: HashMap<&Bytes, usize> = HashMap::new();
        let mut out = PartitionCheck {
            source: source.len(),
            target: target.len(),
            ..PartitionCheck::default()
        };
        let mut last: Option<usize> = None;
        for v in target {
            let Some(&i) = index.get(v) else {
                out.foreign += 1;
                continue;
            };
            let n = seen.entry(v).or_default();
            *n += 1;
            if *n > 1 {
                out.duplicates += 1;
                continue;
            }
            if last.is_some_and(|l| i < l) && out.out_of_order.is_none() {
                out.out_of_order = Some(String::from_utf8_lossy(v).into_owned());
            }
            last = Some(i);
        }
        out.lost = source.iter().filter(|v| !seen.contains_key(v)).count();
        out
    }
}

/// The comparison of every partition of a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Per partition (every partition either side holds).
    pub partitions: BTreeMap<i32, PartitionCheck>,
}

/// Compares `source` with `target`, per partition (values in offset order).
pub fn check(source: &BTreeMap<i32, Vec<Bytes>>, target: &BTreeMap<i32, Vec<Bytes>>) -> Report {
    let empty = Vec::new();
    let partitions = source
        .keys()
        .chain(target.keys())
        .map(|p| {
            let s = source.get(p).unwrap_or(&empty);
            let t = target.get(p).unwrap_or(&empty);
            (*p, PartitionCheck::compare(s, t))
        })
        .collect();
    Report { partitions }
}

impl Report {
    /// The sums over all partitions (`out_of_order`: the first partition's, if any).
    pub fn total(&self) -> PartitionCheck {
        let mut t = PartitionCheck::default();
        for c in self.partitions.values() {
            t.source += c.source;
            t.target += c.target;
            t.lost += c.lost;
            t.duplicates += c.duplicates;
            t.foreign += c.foreign;
            if t.out_of_order.is_none() {
                t.out_of_order.clone_from(&c.out_of_order);
            }
        }
        t
    }

    /// Everything wrong, one line per problem: a lost record, a foreign one, order not
    /// kept, or more than `max_duplicates` duplicates in a partition. Empty = all good.
    pub fn problems(&self, max_duplicates: usize) -> Vec<String> {
        let mut out = Vec::new();
        for (p, c) in &self.partitions {
            if c.lost > 0 {
                out.push(format!("partition {p}: {} source records lost", c.lost));
            }
            if c.foreign > 0 {
                out.push(format!(
                    "partition {p}: {} records the source does not hold",
                    c.foreign
                ));
            }
            if let Some(v) = &c.out_of_order {
                out.push(format!("partition {p}: order not kept at {v:?}"));
            }
            if c.duplicates > max_duplicates {
                out.push(format!(
                    "partition {p}: {} duplicates, more than the bound {max_duplicates}",
                    c.duplicates
                ));
            }
        }
        out
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.total();
        write!(
            f,
            "{} source records, {} on the target, {} lost, {} duplicates, {} foreign (per \
             partition: ",
            t.source, t.target, t.lost, t.duplicates, t.foreign
        )?;
        for (i, (p, c)) in self.partitions.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}{p}: {}/{} dup {}",
                c.target, c.source, c.duplicates
            )?;
        }
        write!(f, ")")
    }
}

/// Reads every record of `topic` with librdkafka (read_uncommitted, from the beginning,
/// `check.crcs=true`: a damaged batch is an error, not data)
/// until `idle` passes without one, and returns the values per partition in offset order.
/// `expect`: stop as soon as that many records were read (a hint, not a limit; `None`:
/// idle only).
pub fn read_partitions(
    bootstrap: &str,
    topic: &str,
    expect: Option<usize>,
    idle: Duration,
) -> Result<BTreeMap<i32, Vec<Bytes>>> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadUncommitted,
        count: expect,
        idle,
        max_time: Duration::from_secs(120),
        // librdkafka checks every batch's CRC-32C (off by default).
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::default()
    };
    Ok(values_by_partition(rdkafka::consume(
        bootstrap, topic, &opts,
    )?))
}

/// Every record of `topic`, per partition in offset order: each partition read with
/// librdkafka (CRC-32C of every batch checked) up to its high watermark as Fetch reports it
/// (its last stable offset under `read_committed`), however many records that is. The
/// one target reader: a duplicate anywhere, also past the source's count, is read and
/// counted. A partition not read to its end within two minutes is an error, never
/// "nothing".
pub fn read_to_end(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
) -> Result<BTreeMap<i32, Vec<Bytes>>> {
    let opts = ConsumeOptions {
        isolation,
        to_end: true,
        max_time: Duration::from_secs(120),
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::default()
    };
    Ok(values_by_partition(rdkafka::consume(
        bootstrap, topic, &opts,
    )?))
}

/// Each partition's values in offset order.
fn values_by_partition(mut records: Vec<rdkafka::ConsumedRecord>) -> BTreeMap<i32, Vec<Bytes>> {
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<Bytes>> = BTreeMap::new();
    for r in records {
        out.entry(r.partition)
            .or_default()
            .push(r.value.unwrap_or_default());
    }
    out
}

/// [`read_to_end`] of a topic that may not exist yet (a target topic before the replicator
/// created it): a missing topic is an empty map; any other failure is an error.
pub fn read_to_end_if_exists(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
) -> Result<BTreeMap<i32, Vec<Bytes>>> {
    match read_to_end(bootstrap, topic, isolation) {
        Err(e) if e.to_string().contains("UNKNOWN_TOPIC_OR_PART") => Ok(BTreeMap::new()),
        other => other,
    }
}

#[cfg(test)]
mod tests;
