//! Reading an exactly-once target as a `read_committed` consumer does on Apache Kafka: a
//! record counts once its transaction's COMMIT marker is in the log. Tansu answers neither
//! part of that right (docs/compatibility.md): it sends no aborted list, so librdkafka's
//! `read_committed` also returns aborted batches; and its last stable offset can stay for
//! good below a transaction whose COMMIT marker is written (a commit it defers while
//! another `transactional.id`'s transaction on a shared partition — the state topic's — is
//! open, and that nothing later releases once the writes stop). So librdkafka reads every
//! record (`read_uncommitted`), and each target partition is also read with
//! strait-client's marker-resolving consumer: librdkafka's records are kept only at
//! offsets whose transaction committed by the markers. Against Apache Kafka that is what
//! `read_committed` returns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use strait_client::{Client, ClientConfig, FetchOptions, PartitionConsumer};
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation};

use super::read::runtime;

/// Per partition (`0..partitions`), the offsets of records whose transaction committed
/// (or that are not transactional), by the markers in the log.
pub fn committed_offsets(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, BTreeSet<i64>> {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let mut out = BTreeMap::new();
        for p in 0..partitions {
            let opts = FetchOptions {
                max_wait: Duration::from_millis(50),
                ..FetchOptions::default()
            };
            let mut c = PartitionConsumer::new(client.clone(), topic, p, 0)
                .with_options(opts)
                .resolving_markers();
            let mut offsets = BTreeSet::new();
            loop {
                for r in c.poll().await.expect("poll") {
                    offsets.insert(r.offset);
                }
                if c.high_watermark() >= 0 && c.position() >= c.high_watermark() {
                    break;
                }
            }
            out.insert(p, offsets);
        }
        out
    })
}

/// Values per partition in offset order, read by librdkafka (`isolation`), keeping only
/// the offsets in `keep` when given.
pub fn read(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
    keep: Option<&BTreeMap<i32, BTreeSet<i64>>>,
) -> BTreeMap<i32, Vec<String>> {
    let opts = ConsumeOptions {
        isolation,
        idle: Duration::from_secs(3),
        ..ConsumeOptions::until_idle(Duration::from_secs(3))
    };
    let mut records = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in records {
        if let Some(keep) = keep
            && !keep
                .get(&r.partition)
                .is_some_and(|k| k.contains(&r.offset))
        {
            continue;
        }
        let v = r.value.map(|v| String::from_utf8_lossy(&v).into_owned());
        out.entry(r.partition)
            .or_default()
            .push(v.unwrap_or_default());
    }
    out
}

/// The target topic read as a read_committed consumer of Apache Kafka sees it (see the
/// module doc).
pub fn target_committed(dst: &str, topic: &str, partitions: i32) -> BTreeMap<i32, Vec<String>> {
    let keep = committed_offsets(dst, topic, partitions);
    read(dst, topic, Isolation::ReadUncommitted, Some(&keep))
}

/// Every record of the source `topic` on the target `target_topic` exactly once, in order,
/// per partition.
pub fn assert_exactly_once(
    (src, topic): (&str, &str),
    (dst, target_topic): (&str, &str),
    partitions: i32,
    produced: u64,
    log: &str,
) {
    let source = read(src, topic, Isolation::ReadCommitted, None);
    let total: usize = source.values().map(Vec::len).sum();
    assert_eq!(total as u64, produced, "the source holds what was produced");
    let target = target_committed(dst, target_topic, partitions);
    for p in 0..partitions {
        let s = source.get(&p).cloned().unwrap_or_default();
        let t = target.get(&p).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        let dups: Vec<&String> = t.iter().filter(|v| !seen.insert(v.as_str())).collect();
        let lost = s.iter().filter(|v| !seen.contains(v.as_str())).count();
        assert!(
            dups.is_empty() && lost == 0 && t == s,
            "partition {p}: {} source records, {} on the target, {} duplicates (first {:?}), \
             {lost} lost\n{log}",
            s.len(),
            t.len(),
            dups.len(),
            dups.first()
        );
    }
}

/// Runs of batches [`describe_log`] shows per partition (the newest).
const MAX_RUNS_SHOWN: usize = 40;

/// For a failure message: per partition of `topic`, its high watermark, last stable
/// offset and log start, and its batches as runs (`o..o` the offsets, `pid/epoch`, `T` for
/// transactional, `C`/`A` for a COMMIT/ABORT marker), read raw and uncommitted.
pub fn describe_log(bootstrap: &str, topic: &str, partitions: i32) -> String {
    use std::fmt::Write as _;
    use strait_records::{ControlRecordType, Limits, split};
    runtime().block_on(async {
        let client = match Client::connect(ClientConfig::new([bootstrap])).await {
            Ok(c) => c,
            Err(e) => return format!("cannot connect to describe the log: {e}"),
        };
        let limits = Limits::default();
        let mut out = String::new();
        for p in 0..partitions {
            let (mut offset, mut lines, mut hw, mut lso, mut start) =
                (0i64, Vec::new(), -1, -1, -1);
            loop {
                let Ok((leader, _)) = client.leader_for(topic, p).await else {
                    break;
                };
                let opts = FetchOptions {
                    max_wait: Duration::from_millis(10),
                    ..FetchOptions::default()
                };
                let res = match client
                    .fetch(
                        leader,
                        &[strait_client::FetchPosition::new(topic, p, offset)],
                        &opts,
                    )
                    .await
                {
                    Ok(r) => r,
                    Err(e) => {
                        lines.push(format!("fetch at {offset}: {e}"));
                        break;
                    }
                };
                let Some(part) = res.partitions.into_iter().next() else {
                    break;
                };
                (hw, lso, start) = (
                    part.high_watermark,
                    part.last_stable_offset,
                    part.log_start_offset,
                );
                let Ok(batches) = split(part.records, &limits) else {
                    lines.push(format!("undecodable at {offset}"));
                    break;
                };
                let before = offset;
                for b in batches.batches {
                    let h = *b.header();
                    if h.next_offset() <= offset {
                        continue;
                    }
                    let kind = match b.control_type(&limits) {
                        Ok(Some(ControlRecordType::Commit)) => "C",
                        Ok(Some(ControlRecordType::Abort)) => "A",
                        Ok(Some(ControlRecordType::Other(_))) => "?",
                        _ if h.attributes.is_transactional() => "T",
                        _ => "-",
                    };
                    lines.push(format!(
                        "{}..{} {}/{} {kind}",
                        h.base_offset,
                        h.next_offset() - 1,
                        h.producer_id,
                        h.producer_epoch
                    ));
                    offset = h.next_offset();
                }
                if offset == before || offset >= hw {
                    break;
                }
            }
            // Runs of data batches of one producer are folded: the markers are what matter.
            let mut folded: Vec<String> = Vec::new();
            for l in lines {
                let same = folded.last().is_some_and(|last: &String| {
                    last.ends_with(" T") && l.ends_with(" T") && {
                        let who = |s: &str| s.split(' ').nth(1).map(str::to_owned);
                        who(last) == who(&l)
                    }
                });
                if same {
                    let last = folded.pop().unwrap_or_default();
                    let from = last.split("..").next().unwrap_or_default().to_owned();
                    let rest = l.split_once("..").map_or("", |(_, r)| r);
                    folded.push(format!("{from}..{rest}"));
                } else {
                    folded.push(l);
                }
            }
            // The newest runs are what a stuck drain is about.
            let shown = folded.len().saturating_sub(MAX_RUNS_SHOWN);
            let _ = writeln!(
                out,
                "partition {p}: log start {start}, LSO {lso}, HW {hw}: {}{}",
                if shown > 0 { "…, " } else { "" },
                folded[shown..].join(", ")
            );
        }
        out
    })
}
