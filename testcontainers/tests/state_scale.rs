//! What reading an exactly-once flow's state topic costs at 1,000 partitions, on Apache
//! Kafka (`scripts/soak state-start`; ignored in the suite, as it writes ~70 MB).
//!
//! The state topic is written as a flow writes it after an hour of exactly-once
//! replication with the default `transaction_interval` (250 ms, 14,400 transactions per
//! partition, each adding a run to the map and a delta record): per partition the
//! latest snapshot and the deltas after it (what compaction leaves), then one active
//! segment (16 MiB, `segment.bytes` of the state topic) of the deltas and snapshots the
//! flow goes on writing, which the cleaner never touches. The report gives the bytes
//! read, the time of a whole read (what a start does) and of a read on from the end (what
//! a scale-out takeover or a group-sync round does since `StateTail`), and the memory the
//! folded state takes.

use std::time::Instant;

use strait_client::{Client, ClientConfig};
use strait_kafka_scenarios::Kafka;
use strait_mirror::state::codec::{encode_key, encode_value};
use strait_mirror::state::delta::{SNAPSHOT_EVERY, encode_delta_key, encode_delta_value};
use strait_mirror::state::{self, PartitionState, StateTail, StateWriter};
use strait_offsets::OffsetMap;

const PARTITIONS: i32 = 1_000;
/// Transactions in an hour at 250 ms.
const COMMITS: u64 = 14_400;
/// Records per partition per transaction.
const PER_COMMIT: u64 = 40;
/// The state topic's `segment.bytes`: the active segment the cleaner leaves alone.
const ACTIVE_SEGMENT: usize = 16 << 20;

/// One transaction of a partition: a run of records, then our commit marker (a gap).
fn commit(map: &mut OffsetMap) {
    let (s, t) = (
        map.next(strait_offsets::Side::Source),
        map.next(strait_offsets::Side::Target),
    );
    map.append_dense(s, PER_COMMIT, t).expect("append");
    map.advance(s + PER_COMMIT, t + PER_COMMIT + 1)
        .expect("marker");
}

/// Encoded deltas with their sequence numbers.
type Deltas = Vec<(u64, Vec<u8>)>;

/// One partition's map after `commits` transactions, the snapshot taken before the last
/// `deltas` of them and the delta of each of those (with its sequence number).
fn partition(commits: u64, deltas: u64) -> (OffsetMap, Vec<u8>, Deltas) {
    let mut map = OffsetMap::new();
    let mut snapshot = Vec::new();
    let mut out = Vec::new();
    for c in 0..commits {
        if c + deltas == commits {
            snapshot = map.snapshot().bytes;
        }
        commit(&mut map);
        if c + deltas >= commits
            && let Some(d) = map.take_checkpoint()
        {
            out.push((d.seq, d.bytes));
        }
    }
    (map, snapshot, out)
}

/// Peak resident memory of this process so far, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore = "writes ~70 MB to Kafka; scripts/soak state-start runs it"]
fn reading_the_state_of_1000_exactly_once_partitions_after_an_hour() {
    let kafka = Kafka::start();
    let text = format!(
        "[clusters.src]\nbootstrap_servers = \"{b}\"\n[clusters.dst]\nbootstrap_servers = \"{b}\"\n\
         [[flows]]\nsource = \"src\"\ntarget = \"dst\"\n",
        b = kafka.bootstrap()
    );
    let config = strait_mirror::config::load_str(&text, "state-scale", &|_| None).expect("config");
    let flow = config.flows[0].clone();
    let rt = strait_kafka_scenarios::runtime();
    let client = rt.block_on(async {
        Client::connect(ClientConfig::new([kafka.bootstrap()]))
            .await
            .expect("connect")
    });
    rt.block_on(state::ensure_state_topic(&client, &flow))
        .expect("state topic");
    let mut writer = StateWriter::new(client.clone(), &flow);

    // What compaction leaves: per partition the latest snapshot and the deltas after it.
    let kept = SNAPSHOT_EVERY as u64 / 2;
    let (mut map, snapshot, deltas) = partition(COMMITS, kept);
    let state = |snapshot: &[u8]| PartitionState {
        topic_id: uuid::Uuid::nil(),
        target_topic: "src.orders".into(),
        snapshot: snapshot.to_vec(),
    };
    let size = |r: &[(Vec<u8>, Option<Vec<u8>>)]| {
        r.iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
            .sum::<usize>()
    };
    let mut written = 0usize;
    for p in 0..PARTITIONS {
        let mut records = vec![(
            encode_key("orders", p),
            Some(encode_value(&state(&snapshot))),
        )];
        for (seq, d) in &deltas {
            records.push((
                encode_delta_key("orders", p, *seq),
                Some(encode_delta_value(d)),
            ));
        }
        written += size(&records);
        rt.block_on(writer.write_raw(records)).expect("write");
    }
    let compacted = written;
    // The active segment: the flow going on, every partition a delta per transaction,
    // and every 64th delta a snapshot that tombstones the deltas it covers.
    let mut since: Vec<u64> = deltas.iter().map(|(seq, _)| *seq).collect();
    let mut rounds = 0;
    while written < compacted + ACTIVE_SEGMENT {
        commit(&mut map);
        let mut round = Vec::new();
        if since.len() + 1 >= SNAPSHOT_EVERY {
            let bytes = map.snapshot().bytes;
            for p in 0..PARTITIONS {
                round.push((encode_key("orders", p), Some(encode_value(&state(&bytes)))));
                for seq in &since {
                    round.push((encode_delta_key("orders", p, *seq), None));
                }
            }
            since.clear();
        } else {
            let d = map.take_checkpoint().expect("a delta");
            for p in 0..PARTITIONS {
                round.push((
                    encode_delta_key("orders", p, d.seq),
                    Some(encode_delta_value(&d.bytes)),
                ));
            }
            since.push(d.seq);
        }
        written += size(&round);
        rt.block_on(writer.write_raw(round)).expect("write");
        rounds += 1;
    }
    let before = peak_rss_kib();
    let started = Instant::now();
    let mut tail = StateTail::new(&flow);
    let (saved, seqs) = rt.block_on(tail.read(&client, &flow)).expect("whole read");
    let whole = started.elapsed();
    let after = peak_rss_kib();
    let whole_records = tail.records_read();
    // A read on from the end, after one more round of deltas (a group-sync tick).
    commit(&mut map);
    let d = map.take_checkpoint().expect("a delta");
    let round: Vec<_> = (0..PARTITIONS)
        .map(|p| {
            (
                encode_delta_key("orders", p, d.seq),
                Some(encode_delta_value(&d.bytes)),
            )
        })
        .collect();
    rt.block_on(writer.write_raw(round)).expect("write");
    let started = Instant::now();
    let (again, _) = rt.block_on(tail.read(&client, &flow)).expect("read on");
    let on = started.elapsed();
    println!(
        "state-start figures: {PARTITIONS} partitions, {COMMITS} transactions each: snapshot \
         {} KiB per partition; {:.1} MiB written ({:.1} MiB compacted + {:.1} MiB active \
         segment, {rounds} rounds), {} records read; whole read {:.2} s; read on after one round {:.3} s; \
         peak RSS {} -> {} MiB (+{} MiB)",
        snapshot.len() / 1024,
        written as f64 / 1048576.0,
        compacted as f64 / 1048576.0,
        (written - compacted) as f64 / 1048576.0,
        whole_records,
        whole.as_secs_f64(),
        on.as_secs_f64(),
        before / 1024,
        after / 1024,
        (after.saturating_sub(before)) / 1024,
    );
    assert_eq!(saved.len(), PARTITIONS as usize, "every partition's state");
    assert_eq!(again.len(), PARTITIONS as usize);
    let (fresh, _) = rt
        .block_on(state::read_state_and_deltas(&client, &flow))
        .expect("a whole read again");
    assert!(again == fresh, "reading on gives what a whole read gives");
    assert!(
        seqs.values().all(|s| !s.is_empty()),
        "deltas after each snapshot"
    );
    assert_eq!(
        tail.records_read() - whole_records,
        PARTITIONS as u64,
        "the read on took only the new round"
    );
}
