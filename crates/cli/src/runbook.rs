//! `strait failover` and `strait failback`: move a consumer group between a flow's
//! clusters through its offset maps. A dry run by default (the plan, side by side with
//! the record each position points at); `--execute` commits, and only when every
//! partition of every flow translates under the rules of `strait_mirror::runbook::decide`.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde_json::{Value, json};
use strait_client::Client;
use strait_mirror::config::{Config, Flow, load};
use strait_mirror::runbook::{
    self, Clusters, Direction, GroupActivity, Options, Peek, Plan, Refusal, Row, Verdict,
};

use crate::cli::SwitchArgs;
use crate::exit::Exit;
use crate::plan::{clients, runtime};

/// Runs `strait failover` / `strait failback`.
pub fn switch_cmd(direction: Direction, args: &SwitchArgs) -> anyhow::Result<ExitCode> {
    let config = load(&args.config.path)?;
    let options = Options {
        allow_rounded: args.allow_rounded,
        allow_backwards: args.allow_backwards,
        allow_target_only: args.allow_target_only,
        force: args.force,
        accept_inexact: args.accept_inexact,
    };
    let flows: Vec<_> = config
        .enabled_flows()
        .filter(|f| args.flow.as_deref().is_none_or(|n| n == f.name))
        .collect();
    if flows.is_empty() {
        anyhow::bail!(
            "no enabled flow{}",
            args.flow
                .as_deref()
                .map(|n| format!(" named {n}"))
                .unwrap_or_default()
        );
    }
    // Failback has nothing to wait for: the target side is what the group read.
    let wait = match direction {
        Direction::Failover => args.wait,
        Direction::Failback => Duration::ZERO,
    };
    if args.source_unavailable && direction == Direction::Failback {
        anyhow::bail!("--source-unavailable is for failover (failback returns to the source)");
    }
    runtime()?.block_on(async {
        // Per flow: the client of the side the group moves to, the flow and its plan.
        let mut plans = Vec::new();
        for flow in &flows {
            let (to, plan) = prepare_flow(&config, flow, args, direction, options, wait).await?;
            plans.push((to, *flow, plan));
        }
        let ready = plans.iter().all(|(_, _, p)| p.executable());
        let mut committed = Vec::new();
        if args.execute && ready {
            for (to, flow, plan) in &plans {
                committed.push(runbook::execute_on(to, flow, plan).await?);
            }
        }
        let plans: Vec<&Plan> = plans.iter().map(|(_, _, p)| p).collect();
        if args.json {
            println!("{}", render_json(&plans, args.execute, ready, &committed));
        } else {
            print!("{}", render(&plans, args.execute, ready, &committed));
        }
        Ok(if ready {
            ExitCode::SUCCESS
        } else if plans.iter().any(|p| p.waiting_for_replication()) {
            Exit::NotYetReplicated.into()
        } else {
            Exit::Refused.into()
        })
    })
}

/// One flow's plan, and the client of the side the group moves to: with
/// `--source-unavailable` the target alone (an unplanned failover), else both sides,
/// waiting up to `wait` for replication.
async fn prepare_flow(
    config: &Config,
    flow: &Flow,
    args: &SwitchArgs,
    direction: Direction,
    options: Options,
    wait: Duration,
) -> anyhow::Result<(Client, Plan)> {
    if args.source_unavailable {
        let cluster = config
            .cluster(&flow.target)
            .with_context(|| format!("flow {}: no target cluster", flow.name))?;
        let target = strait_mirror::connect::connect(cluster)
            .await
            .map_err(|e| e.flow(&flow.name))?;
        let plan =
            runbook::unplanned::prepare(&target, flow, &args.group, args.topic.as_deref(), options)
                .await?;
        Ok((target, plan))
    } else {
        let (source, target) = clients(config, flow).await?;
        let clusters = Clusters { source, target };
        let plan = runbook::prepare_waiting(
            &clusters,
            flow,
            &args.group,
            args.topic.as_deref(),
            direction,
            options,
            wait,
        )
        .await?;
        let to = match direction {
            Direction::Failover => clusters.target,
            Direction::Failback => clusters.source,
        };
        Ok((to, plan))
    }
}

fn verb(direction: Direction) -> &'static str {
    match direction {
        Direction::Failover => "failover",
        Direction::Failback => "failback",
    }
}

fn render(plans: &[&Plan], execute: bool, ready: bool, committed: &[usize]) -> String {
    let mut out = String::new();
    for plan in plans {
        let _ = writeln!(
            out,
            "{} of group {} on flow {}: {} -> {}",
            verb(plan.direction),
            plan.group,
            plan.flow,
            plan.from_cluster,
            plan.to_cluster
        );
        let _ = writeln!(
            out,
            "  group on {}: {}; on {}: {}",
            plan.from_cluster,
            activity(&plan.leaving),
            plan.to_cluster,
            activity(&plan.arriving)
        );
        if let Some(b) = &plan.blocker {
            let _ = writeln!(out, "  blocked: {b}");
        }
        if plan.rows.is_empty() {
            let _ = writeln!(
                out,
                "  no committed offsets on {} for topics this flow replicates",
                plan.from_cluster
            );
        }
        for row in &plan.rows {
            render_row(&mut out, plan, row);
        }
    }
    let total: usize = committed.iter().sum();
    let _ = match (execute, ready) {
        (true, true) => writeln!(out, "committed {total} offsets"),
        (false, true) => writeln!(
            out,
            "dry run: nothing committed; --execute commits the plan"
        ),
        (_, false) => writeln!(
            out,
            "not executable: nothing committed (the reasons are above)"
        ),
    };
    out
}

fn render_row(out: &mut String, plan: &Plan, row: &Row) {
    let i = &row.input;
    let _ = writeln!(
        out,
        "  {}/{}  {} offset {}  {}",
        i.from_topic,
        i.partition,
        plan.from_cluster,
        i.from_offset,
        peek(&row.from_record)
    );
    if let Some(t) = row.synced_at {
        let age = Duration::from_millis(u64::try_from(now_ms().saturating_sub(t)).unwrap_or(0));
        let _ = writeln!(
            out,
            "    synced {} ago (at {}): the group's later progress on {} is read again",
            humantime::format_duration(Duration::from_secs(age.as_secs())),
            show_time(t),
            plan.from_cluster
        );
    }
    let now = i
        .to_offset
        .map_or_else(|| "none".to_owned(), |o| o.to_string());
    match &row.verdict {
        Verdict::Commit {
            offset,
            rounded_by,
            target_only,
            skips,
        } => {
            let note = commit_note(plan, *rounded_by, *target_only, *skips);
            let _ = writeln!(
                out,
                "    -> {}/{}  {} offset {offset}  {}  (commit, {note}; now {now})",
                i.to_topic,
                i.partition,
                plan.to_cluster,
                row.to_record.as_ref().map_or_else(String::new, peek),
            );
        }
        Verdict::AlreadyThere { offset } => {
            let _ = writeln!(
                out,
                "    -> {}/{}  {} offset {offset}  {}  (already there)",
                i.to_topic,
                i.partition,
                plan.to_cluster,
                row.to_record.as_ref().map_or_else(String::new, peek),
            );
        }
        Verdict::Refused { reason } => {
            let _ = writeln!(
                out,
                "    -> {}/{}  refused: {reason} (now {now})",
                i.to_topic, i.partition
            );
        }
    }
}

/// What a commit row says of its offset: exact, not exact (it skips records never
/// replicated), rounded down, or resuming after every replicated record.
fn commit_note(
    plan: &Plan,
    rounded_by: Option<u64>,
    target_only: Option<u64>,
    skips: Option<u64>,
) -> String {
    let mut note = String::from("exact");
    if let Some(n) = skips {
        note = format!(
            "NOT EXACT: before where replication started, skips {n} records never \
             replicated"
        );
    }
    if let Some(n) = rounded_by {
        note = format!("rounded down: re-reads at most {n}");
    }
    if let Some(n) = target_only {
        note = format!(
            "{n} records read on {} have no source offset: resumes after every replicated record",
            plan.from_cluster
        );
    }
    note
}

fn activity(a: &GroupActivity) -> String {
    match a {
        GroupActivity::Idle => "idle".to_owned(),
        GroupActivity::Active { detail } => format!("ACTIVE ({detail})"),
        GroupActivity::NotChecked => "not checked (--source-unavailable)".to_owned(),
    }
}

/// Now, in ms since the epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `key=... @ 2026-12-01T10:00:00.123Z` for a record, or what stands in its place.
fn peek(p: &Peek) -> String {
    match p {
        Peek::Record {
            offset,
            key,
            timestamp,
        } => format!(
            "record {offset}: key {} @ {}",
            key.as_deref().map_or_else(|| "null".to_owned(), show_key),
            show_time(*timestamp)
        ),
        Peek::End => "(end of log: the next record produced)".to_owned(),
        Peek::Unreadable(e) => format!("(record unreadable: {e})"),
        Peek::NotRead => "(not read: --source-unavailable)".to_owned(),
    }
}

/// A key for a terminal: UTF-8 text quoted and escaped, else hex; at most 40 characters.
fn show_key(key: &[u8]) -> String {
    const MAX: usize = 40;
    let shown = match std::str::from_utf8(key) {
        Ok(text) => format!("{:?}", text),
        Err(_) => key.iter().map(|b| format!("{b:02x}")).collect(),
    };
    if shown.chars().count() > MAX {
        let cut: String = shown.chars().take(MAX).collect();
        format!("{cut}...")
    } else {
        shown
    }
}

fn show_time(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(ms) => {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        Err(_) => format!("timestamp {ms}"),
    }
}

fn peek_json(p: &Peek) -> Value {
    match p {
        Peek::Record {
            offset,
            key,
            timestamp,
        } => json!({
            "offset": offset,
            "key": key.as_deref().map(|k| String::from_utf8_lossy(k).into_owned()),
            "timestamp_ms": timestamp,
        }),
        Peek::End => json!({ "end_of_log": true }),
        Peek::Unreadable(e) => json!({ "error": e }),
        Peek::NotRead => json!({ "not_read": true }),
    }
}

fn refusal_json(r: &Refusal) -> Value {
    let kind = match r {
        Refusal::NoMap => "no_map",
        Refusal::NoPosition => "no_position",
        Refusal::NotYetReplicated { .. } => "not_yet_replicated",
        Refusal::TargetOnly { .. } => "target_only",
        Refusal::Rounded { .. } => "rounded",
        Refusal::Truncated { .. } => "truncated",
        Refusal::BeforeReplication { .. } => "before_replication",
        Refusal::Backwards { .. } => "backwards",
    };
    json!({ "reason": kind, "message": r.to_string() })
}

fn render_json(plans: &[&Plan], execute: bool, ready: bool, committed: &[usize]) -> Value {
    let flows: Vec<Value> = plans
        .iter()
        .map(|plan| {
            let rows: Vec<Value> = plan
                .rows
                .iter()
                .map(|row| {
                    let i = &row.input;
                    let verdict = match &row.verdict {
                        Verdict::Commit {
                            offset,
                            rounded_by,
                            target_only,
                            skips,
                        } => json!({
                            "action": "commit", "offset": offset,
                            "rounded_by": rounded_by, "target_only_records": target_only,
                            "exact": rounded_by.is_none() && target_only.is_none() && skips.is_none(),
                            "skipped_records": skips,
                        }),
                        Verdict::AlreadyThere { offset } => {
                            json!({ "action": "already_there", "offset": offset })
                        }
                        Verdict::Refused { reason } => {
                            json!({ "action": "refused", "refusal": refusal_json(reason) })
                        }
                    };
                    json!({
                        "from_topic": i.from_topic, "to_topic": i.to_topic,
                        "partition": i.partition, "from_offset": i.from_offset,
                        "to_offset_now": i.to_offset,
                        "from_record": peek_json(&row.from_record),
                        "to_record": row.to_record.as_ref().map(peek_json),
                        "verdict": verdict,
                        "synced_at_ms": row.synced_at,
                        "synced_age_ms": row.synced_at.map(|t| now_ms().saturating_sub(t)),
                    })
                })
                .collect();
            let active = |a: &GroupActivity| match a {
                GroupActivity::Idle => json!({ "active": false }),
                GroupActivity::Active { detail } => json!({ "active": true, "detail": detail }),
                GroupActivity::NotChecked => json!({ "active": null, "checked": false }),
            };
            json!({
                "direction": verb(plan.direction), "flow": plan.flow, "group": plan.group,
                "from_cluster": plan.from_cluster, "to_cluster": plan.to_cluster,
                "group_on_from": active(&plan.leaving), "group_on_to": active(&plan.arriving),
                "blocker": plan.blocker, "partitions": rows,
            })
        })
        .collect();
    json!({
        "executable": ready,
        "executed": execute && ready,
        "committed": committed.iter().sum::<usize>(),
        "generated_at": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        "flows": flows,
    })
}
