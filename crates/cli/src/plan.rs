//! `strait plan -c FILE`: a dry run of topic sync. For each enabled flow, what would be
//! created or changed on the target and why, and which source topics are skipped and why.
//! Also the topic ACLs `sync.topic_acls` would create, and those Strait created that
//! `sync.delete_topic_acls` would delete (or keeps, and why). With `start_position =
//! "takeover"`, where each partition would continue after MirrorMaker 2, and how that was
//! proven (or why it cannot be). Reads both clusters and the flow's state topic; writes
//! nothing. `--json` prints the same as one JSON document.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};
use strait_client::Client;
use strait_mirror::acls::{self, AclError, AclPlan};
use strait_mirror::config::model::StartPosition;
use strait_mirror::config::{Cluster, Config, Flow, load};
use strait_mirror::takeover::decide::{Hint, Proof};
use strait_mirror::takeover::{self, Planned};
use strait_mirror::topics::{TopicPlan, current_plan};

/// Runs `strait plan` (`json`: one JSON document instead of text).
pub fn plan_cmd(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
        let mut flows = Vec::new();
        for flow in config.enabled_flows() {
            let (source, target) = clients(&config, flow).await?;
            let (plan, _) = current_plan(flow, &source, &target, true).await?;
            let acls = acl_plan(flow, &source, &target).await?;
            let takeover = takeover_plan(flow, &source, &target, &plan).await?;
            if json {
                let mut v = plan_json(flow, &plan, &acls);
                if let Some(t) = &takeover {
                    v["takeover"] = takeover_json(t);
                }
                flows.push(v);
            } else {
                print!("{}", render(flow, &plan));
                print!("{}", render_acls(&acls));
                if let Some(t) = &takeover {
                    print!("{}", render_takeover(t));
                }
            }
        }
        if json {
            println!("{}", json!({ "flows": flows }));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// With `start_position = "takeover"`: where each partition of an existing target topic
/// would start (`strait_mirror::takeover`, read-only).
async fn takeover_plan(
    flow: &Flow,
    source: &Client,
    target: &Client,
    plan: &TopicPlan,
) -> anyhow::Result<Option<Vec<Planned>>> {
    if flow.start_position != StartPosition::Takeover {
        return Ok(None);
    }
    let existing: Vec<(String, String, i32)> = plan
        .replicate
        .iter()
        .filter_map(|r| {
            let n = r.target_partitions?.min(r.source_partitions);
            Some((r.source_topic.clone(), r.target_topic.clone(), n))
        })
        .collect();
    Ok(Some(takeover::plan(source, target, flow, &existing).await?))
}

fn render_takeover(planned: &[Planned]) -> String {
    let mut out = String::new();
    for p in planned {
        let at = format!("{}-{} -> {}", p.topic, p.partition, p.target_topic);
        let line = match (&p.outcome, p.resumes) {
            (_, true) => "resumes from its saved map (no takeover)".to_owned(),
            (None, false) => "! bounds not reported; run `strait check`".to_owned(),
            (Some(Ok(s)), _) => match &s.proof {
                Proof::EmptyTarget => format!(
                    "starts at source offset {} (the target partition was never written)",
                    s.source_next
                ),
                Proof::Content {
                    target_offset,
                    source_offset,
                    compared,
                    hint,
                } => format!(
                    "continues at source offset {}: target offset {target_offset} is source \
                     offset {source_offset}, {compared} record(s) compared, found from {}",
                    s.source_next,
                    hint_words(hint)
                ),
            },
            (Some(Err(why)), _) => format!("! refused: {why}"),
        };
        let _ = writeln!(out, "  takeover {at}: {line}");
    }
    out
}

fn hint_words(hint: &Hint) -> String {
    match hint {
        Hint::OffsetSync(o) => format!("MM2's offset sync (source offset {o})"),
        Hint::Timestamp(o) => format!("the record's timestamp (source offset {o})"),
    }
}

fn takeover_json(planned: &[Planned]) -> Value {
    let rows: Vec<Value> = planned
        .iter()
        .map(|p| {
            let outcome = match (&p.outcome, p.resumes) {
                (_, true) => json!({ "resumes": true }),
                (None, false) => json!({ "unknown": true }),
                (Some(Ok(s)), _) => match &s.proof {
                    Proof::EmptyTarget => {
                        json!({ "source_next": s.source_next, "proof": "empty_target" })
                    }
                    Proof::Content {
                        target_offset,
                        source_offset,
                        compared,
                        hint,
                    } => json!({
                        "source_next": s.source_next,
                        "proof": "content",
                        "target_offset": target_offset,
                        "source_offset": source_offset,
                        "compared": compared,
                        "hint": hint_words(hint),
                    }),
                },
                (Some(Err(why)), _) => json!({ "refused": why.to_string() }),
            };
            json!({
                "topic": p.topic,
                "target_topic": p.target_topic,
                "partition": p.partition,
                "outcome": outcome,
            })
        })
        .collect();
    Value::Array(rows)
}

/// The ACL part of a flow's plan.
enum Acls {
    /// `sync.topic_acls = false`.
    Off,
    /// A side does not support ACLs (why).
    Unsupported(String),
    /// What the sync would do.
    Plan(AclPlan),
}

/// What `sync.topic_acls` would create, skip and delete.
async fn acl_plan(flow: &Flow, source: &Client, target: &Client) -> anyhow::Result<Acls> {
    if !flow.sync.topic_acls {
        return Ok(Acls::Off);
    }
    match acls::plan_sync(source, target, flow).await {
        Err(AclError::Unsupported(why)) => Ok(Acls::Unsupported(why)),
        Err(AclError::Failed(e)) => Err(e.into()),
        Ok(plan) => Ok(Acls::Plan(plan)),
    }
}

fn render_acls(acls: &Acls) -> String {
    let mut out = String::new();
    match acls {
        Acls::Off => {
            let _ = writeln!(out, "  acls: sync.topic_acls = false");
        }
        Acls::Unsupported(why) => {
            let _ = writeln!(out, "  acls: ! {why}");
        }
        Acls::Plan(plan) => {
            for b in &plan.create {
                let _ = writeln!(out, "  acl     create {b}");
            }
            for (b, why) in &plan.skipped {
                let _ = writeln!(out, "  acl     skip   {b}: {why}");
            }
            let d = &plan.deletions;
            for b in &d.delete {
                let _ = writeln!(
                    out,
                    "  acl     delete {b}: created by Strait, its source ACL is gone"
                );
            }
            for (b, why) in &d.kept {
                let _ = writeln!(
                    out,
                    "  acl     keep   {b}: created by Strait, its source ACL is gone, kept: {why}"
                );
            }
            for b in &d.forget {
                let _ = writeln!(
                    out,
                    "  acl     forget {b}: created by Strait, no longer on the target"
                );
            }
            let _ = writeln!(
                out,
                "  acls: {} to create, {} present, {} not copied, {} to delete, {} kept, {} to forget",
                plan.create.len(),
                plan.present,
                plan.skipped.len(),
                d.delete.len(),
                d.kept.len(),
                d.forget.len()
            );
        }
    }
    out
}

/// A flow's plan as JSON: the same facts as the text, for automation.
fn plan_json(flow: &Flow, plan: &TopicPlan, acls: &Acls) -> Value {
    let create: Vec<Value> = plan
        .create
        .iter()
        .map(|c| {
            json!({
                "source_topic": c.source_topic, "target_topic": c.target_topic,
                "partitions": c.partitions, "replication_factor": c.replication_factor,
                "configs": c.configs,
            })
        })
        .collect();
    let alter: Vec<Value> = plan
        .alter_configs
        .iter()
        .map(|a| {
            json!({
                "source_topic": a.source_topic, "target_topic": a.target_topic,
                "set": a.set.iter().cloned().collect::<BTreeMap<_, _>>(), "delete": a.delete,
            })
        })
        .collect();
    let grow: Vec<Value> = plan
        .grow_partitions
        .iter()
        .map(|g| {
            json!({
                "source_topic": g.source_topic, "target_topic": g.target_topic,
                "from": g.from, "to": g.to,
            })
        })
        .collect();
    let replicate: Vec<Value> = plan
        .replicate
        .iter()
        .map(|r| {
            json!({
                "source_topic": r.source_topic, "target_topic": r.target_topic,
                "source_partitions": r.source_partitions,
                "target_partitions": r.target_partitions,
            })
        })
        .collect();
    let skipped: Vec<Value> = plan
        .skipped
        .iter()
        .map(|(t, why)| json!({ "topic": t, "reason": why.to_string() }))
        .collect();
    let acls = acls_json(acls);
    json!({
        "flow": flow.name, "source": flow.source, "target": flow.target,
        "create": create, "alter_configs": alter, "grow_partitions": grow,
        "replicate": replicate, "skipped": skipped, "acls": acls,
    })
}

/// The ACL part of a flow's plan as JSON.
fn acls_json(acls: &Acls) -> Value {
    match acls {
        Acls::Off => json!({ "enabled": false }),
        Acls::Unsupported(why) => json!({ "enabled": true, "unsupported": why }),
        Acls::Plan(p) => json!({
            "enabled": true,
            "create": p.create.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "present": p.present,
            "skipped": p
                .skipped
                .iter()
                .map(|(b, why)| json!({ "acl": b.to_string(), "reason": why.to_string() }))
                .collect::<Vec<_>>(),
            "delete": p.deletions.delete.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "kept": p
                .deletions
                .kept
                .iter()
                .map(|(b, why)| json!({ "acl": b.to_string(), "reason": why.to_string() }))
                .collect::<Vec<_>>(),
            "forget": p.deletions.forget.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
    }
}

/// A small current-thread runtime: these commands make a handful of calls.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Clients for a flow's source and target clusters.
pub(crate) async fn clients(config: &Config, flow: &Flow) -> anyhow::Result<(Client, Client)> {
    Ok((
        connect(config, &flow.source).await?,
        connect(config, &flow.target).await?,
    ))
}

/// A client for cluster `name` of `config`, with the cluster's timeouts.
pub(crate) async fn connect(config: &Config, name: &str) -> anyhow::Result<Client> {
    let c: &Cluster = config
        .cluster(name)
        .with_context(|| format!("cluster {name} is not defined"))?;
    let what = || {
        format!(
            "cannot connect to cluster {name} ({}, {})",
            c.bootstrap_servers.join(","),
            c.security.protocol_name()
        )
    };
    let security = c.security.to_client().with_context(what)?;
    let cfg = strait_mirror::connect::client_config(c)
        .with_retry_timeout(c.request_timeout.max(Duration::from_secs(1)))
        .with_security(security);
    Client::connect(cfg).await.with_context(what)
}

/// The plan as text: one line per topic, grouped by action.
pub(crate) fn render(flow: &Flow, plan: &TopicPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flow {} ({} -> {})",
        flow.name, flow.source, flow.target
    );
    render_changes(&mut out, plan);
    let changed = |t: &str| {
        plan.create.iter().any(|c| c.target_topic == t)
            || plan.alter_configs.iter().any(|a| a.target_topic == t)
            || plan.grow_partitions.iter().any(|g| g.target_topic == t)
    };
    for r in plan.replicate.iter().filter(|r| !changed(&r.target_topic)) {
        let _ = writeln!(
            out,
            "  ok      {} (from {}): up to date",
            r.target_topic, r.source_topic
        );
    }
    for (topic, reason) in &plan.skipped {
        let _ = writeln!(out, "  skip    {topic}: {reason}");
    }
    let _ = writeln!(
        out,
        "  {} to create, {} to alter, {} to grow, {} replicated, {} skipped",
        plan.create.len(),
        plan.alter_configs.len(),
        plan.grow_partitions.len(),
        plan.replicate.len(),
        plan.skipped.len()
    );
    out
}

/// The plan's changes to the target, one line each: topics to create, configs to alter,
/// partitions to grow.
fn render_changes(out: &mut String, plan: &TopicPlan) {
    for c in &plan.create {
        let rf = match c.replication_factor {
            -1 => "broker default".to_owned(),
            n => n.to_string(),
        };
        let configs: Vec<String> = c.configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            out,
            "  create  {} (from {}): missing on the target; {} partitions, replication factor {rf}, configs: {}",
            c.target_topic,
            c.source_topic,
            c.partitions,
            if configs.is_empty() {
                "none".to_owned()
            } else {
                configs.join(", ")
            }
        );
    }
    for a in &plan.alter_configs {
        let mut changes: Vec<String> = a.set.iter().map(|(k, v)| format!("set {k}={v}")).collect();
        changes.extend(
            a.delete
                .iter()
                .map(|k| format!("delete {k} (not set on the source)")),
        );
        let _ = writeln!(
            out,
            "  alter   {} (from {}): configs differ: {}",
            a.target_topic,
            a.source_topic,
            changes.join(", ")
        );
    }
    for g in &plan.grow_partitions {
        let _ = writeln!(
            out,
            "  grow    {} (from {}): {} -> {} partitions (the source has more)",
            g.target_topic, g.source_topic, g.from, g.to
        );
    }
}

#[cfg(test)]
mod tests;
