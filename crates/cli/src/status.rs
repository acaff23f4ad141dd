//! `strait status -c FILE [--json]`: per flow, topic and partition, the source end (the
//! Fetch high watermark: ListOffsets LATEST is wrong on some brokers, Tansu among them),
//! the replicated position (the offset map's next source offset, from the flow's state
//! topic), the lag in records and the translation coverage (exact from which source offset,
//! how many runs). With `[flows.scale_out]`, also the flow's group: its members, their
//! hosts, generation, and which partitions each owns with its lag (`status_group`).
//! `--watch` refreshes it until interrupted, with how much of the sources is copied and
//! how fast (a topic's initial copy, say). Reads both clusters; writes nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use strait_client::metadata::ClusterMetadata;
use strait_client::{Client, FetchOptions, FetchPosition, IsolationLevel};
use strait_mirror::config::{Config, Flow, TopicDecision, load};
use strait_mirror::state::load_maps;
use strait_offsets::Registry;

use crate::plan::{clients, runtime};

/// One partition's status.
#[derive(Serialize, Debug)]
struct PartitionStatus {
    topic: String,
    partition: i32,
    target_topic: String,
    /// The source's high watermark.
    source_end: i64,
    /// The next source offset to replicate; `None` when replication has not started.
    replicated: Option<u64>,
    /// `source_end - replicated` (the whole partition when not started).
    lag: i64,
    /// Source positions at or above this translate exactly.
    exact_from: Option<u64>,
    /// Runs in the offset map.
    runs: Option<usize>,
    /// Scale-out: the member that owns the partition now.
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
}

/// One flow's status.
#[derive(Serialize, Debug)]
struct FlowStatus {
    flow: String,
    source: String,
    target: String,
    state_topic: String,
    partitions: Vec<PartitionStatus>,
    topics: usize,
    source_records: i64,
    lag: i64,
    /// Scale-out: the flow's group.
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<crate::status_group::GroupStatus>,
}

/// Runs `strait status`, once or (`watch`) every interval until interrupted.
pub fn status_cmd(path: &Path, json: bool, watch: Option<Duration>) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
        let mut before: Option<(Instant, i64)> = None;
        loop {
            let all = statuses(&config).await?;
            let Some(every) = watch else {
                if json {
                    println!("{}", serde_json::to_string_pretty(&all)?);
                } else {
                    for s in &all {
                        print!("{}", render(s));
                    }
                }
                return Ok(ExitCode::SUCCESS);
            };
            let copied: i64 = all.iter().map(|s| s.source_records - s.lag).sum();
            let now = Instant::now();
            let rate = before.map(|(t, c)| (copied - c) as f64 / (now - t).as_secs_f64());
            before = Some((now, copied));
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "flows": all, "copied": copied, "records_per_sec": rate })
                );
            } else {
                let mut out = String::new();
                if std::io::stdout().is_terminal() {
                    // Redraw in place on a terminal; a pipe gets one report after another.
                    out.push_str("\x1b[2J\x1b[H");
                }
                for s in &all {
                    out.push_str(&render(s));
                }
                out.push_str(&watched(&all, copied, rate, every));
                print!("{out}");
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            }
        }
    })
}

/// Every enabled flow's status.
async fn statuses(config: &Config) -> anyhow::Result<Vec<FlowStatus>> {
    let mut all = Vec::new();
    for flow in config.enabled_flows() {
        let (source, target) = clients(config, flow).await?;
        let limit = config
            .cluster(&flow.source)
            .map(|c| c.request_timeout * 3)
            .unwrap_or(Duration::from_secs(30));
        let status = tokio::time::timeout(limit, flow_status(flow, &source, &target))
            .await
            .with_context(|| format!("flow {}: no answer within {limit:?}", flow.name))??;
        all.push(status);
    }
    Ok(all)
}

/// The watch's summary line: how much of the sources is copied, and how fast since the
/// last refresh.
fn watched(all: &[FlowStatus], copied: i64, rate: Option<f64>, every: Duration) -> String {
    let total: i64 = all.iter().map(|s| s.source_records).sum();
    let pct = if total > 0 {
        format!(" ({}%)", copied.saturating_mul(100) / total)
    } else {
        String::new()
    };
    let rate = rate.map_or_else(String::new, |r| format!(", {r:.0} records/s"));
    format!(
        "copied {copied} of {total} source records{pct}{rate}; refreshing every {every:?} \
         (Ctrl-C stops)\n"
    )
}

async fn flow_status(flow: &Flow, source: &Client, target: &Client) -> anyhow::Result<FlowStatus> {
    let maps = load_maps(target, flow)
        .await
        .with_context(|| format!("reading state topic {}", flow.state_topic))?;
    let meta = source
        .metadata(None)
        .await
        .with_context(|| format!("listing topics on {}", flow.source))?;
    let (mut rows, by_leader) = replicated_rows(flow, &maps, &meta);
    let ends = high_watermarks(source, by_leader).await?;
    for r in &mut rows {
        r.source_end = ends
            .get(&(r.topic.clone(), r.partition))
            .copied()
            .unwrap_or(-1);
        let done = r
            .replicated
            .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
        r.lag = (r.source_end - done).max(0);
    }
    rows.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let group = crate::status_group::group_status(flow, target).await?;
    if let Some(g) = &group {
        let owners = g.owners();
        let slots = flow.scale_out.as_ref().and_then(|s| s.slots);
        for r in &mut rows {
            r.owner =
                crate::status_group::GroupStatus::owner_of(&owners, &r.topic, r.partition, slots);
        }
    }
    let mut topics: Vec<&str> = rows.iter().map(|r| r.topic.as_str()).collect();
    topics.dedup();
    Ok(FlowStatus {
        flow: flow.name.clone(),
        source: flow.source.clone(),
        target: flow.target.clone(),
        state_topic: flow.state_topic.clone(),
        topics: topics.len(),
        source_records: rows.iter().map(|r| r.source_end.max(0)).sum(),
        lag: rows.iter().map(|r| r.lag).sum(),
        partitions: rows,
        group,
    })
}

/// A row for each partition the flow replicates (its source end still unknown), and the
/// positions to fetch each one's high watermark from, by leader.
fn replicated_rows(
    flow: &Flow,
    maps: &Registry,
    meta: &ClusterMetadata,
) -> (Vec<PartitionStatus>, BTreeMap<i32, Vec<FetchPosition>>) {
    let mut rows = Vec::new();
    let mut by_leader: BTreeMap<i32, Vec<FetchPosition>> = BTreeMap::new();
    for t in meta.topics.values() {
        let TopicDecision::Replicate { target_topic } = flow.topic_decision(&t.name) else {
            continue;
        };
        if t.is_internal {
            continue;
        }
        for p in t.partitions.values() {
            let stats = maps.reader(&t.name, p.partition).map(|r| r.stats());
            let next = stats.map(|s| s.source_next).unwrap_or(0);
            by_leader
                .entry(p.leader)
                .or_default()
                .push(FetchPosition::new(
                    t.name.clone(),
                    p.partition,
                    i64::try_from(next).unwrap_or(i64::MAX),
                ));
            rows.push(PartitionStatus {
                topic: t.name.clone(),
                partition: p.partition,
                target_topic: target_topic.clone(),
                source_end: -1,
                replicated: stats.map(|s| s.source_next),
                lag: 0,
                exact_from: stats.map(|s| s.exact_from_source),
                runs: stats.map(|s| s.runs),
                owner: None,
            });
        }
    }
    (rows, by_leader)
}

/// Each partition's high watermark, from one Fetch per leader.
async fn high_watermarks(
    source: &Client,
    by_leader: BTreeMap<i32, Vec<FetchPosition>>,
) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    // The high watermark comes back with any Fetch; ask for as little data as possible
    // (max_wait ≥ 5 ms: Tansu answers nothing at all for 0).
    let opts = FetchOptions {
        max_wait: Duration::from_millis(20),
        min_bytes: 1,
        max_bytes: 1,
        isolation: IsolationLevel::ReadUncommitted,
    };
    let mut ends = BTreeMap::new();
    for (leader, positions) in by_leader {
        let result = source
            .fetch(leader, &positions, &opts)
            .await
            .with_context(|| format!("fetching high watermarks from broker {leader}"))?;
        for p in result.partitions {
            if let Some(e) = p.error() {
                anyhow::bail!("{}/{}: {e}", p.topic, p.partition);
            }
            ends.insert((p.topic, p.partition), p.high_watermark);
        }
    }
    Ok(ends)
}

fn render(s: &FlowStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flow {} ({} -> {}), state topic {}",
        s.flow, s.source, s.target, s.state_topic
    );
    if s.partitions.is_empty() {
        let _ = writeln!(out, "  no source topic is selected by this flow");
    } else {
        let _ = writeln!(
            out,
            "  {:<24} {:>9} {:>12} {:>12} {:>10}  {:<28} COVERAGE",
            "TOPIC", "PARTITION", "SOURCE END", "REPLICATED", "LAG", "TARGET TOPIC"
        );
    }
    for r in &s.partitions {
        render_row(&mut out, r);
    }
    let replicated = s
        .partitions
        .iter()
        .filter(|r| r.replicated.is_some())
        .count();
    let _ = writeln!(
        out,
        "  total: {} topic(s), {} partition(s) ({} started), lag {} record(s); source ends sum to {}",
        s.topics,
        s.partitions.len(),
        replicated,
        s.lag,
        s.source_records
    );
    if let Some(g) = &s.group {
        let mut by_owner: BTreeMap<String, (usize, i64)> = BTreeMap::new();
        for r in &s.partitions {
            if let Some(o) = &r.owner {
                let e = by_owner.entry(o.clone()).or_default();
                e.0 += 1;
                e.1 += r.lag;
            }
        }
        out.push_str(&crate::status_group::render(g, &by_owner));
    }
    out
}

/// One partition's line: its ends, lag, target and how much of it is covered exactly.
fn render_row(out: &mut String, r: &PartitionStatus) {
    let coverage = match (r.exact_from, r.runs) {
        (Some(0), Some(runs)) => format!("exact, {runs} run(s)"),
        (Some(from), Some(runs)) => {
            format!("exact from source offset {from} (rounded down below), {runs} run(s)")
        }
        _ => "not started".to_owned(),
    };
    let owner = r
        .owner
        .as_ref()
        .map(|o| format!(", owned by {o}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  {:<24} {:>9} {:>12} {:>12} {:>10}  {:<28} {}{}",
        r.topic,
        r.partition,
        r.source_end,
        r.replicated
            .map_or_else(|| "-".to_owned(), |n| n.to_string()),
        r.lag,
        r.target_topic,
        coverage,
        owner
    );
}
