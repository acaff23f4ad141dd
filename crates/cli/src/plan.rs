//! `strait plan -c FILE`: a dry run of topic sync. For each enabled flow, what would be
//! created or changed on the target and why, and which source topics are skipped and why.
//! Reads both clusters; writes nothing.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use strait_client::Client;
use strait_mirror::acls::{self, AclError};
use strait_mirror::config::{Cluster, Config, Flow, load};
use strait_mirror::topics::{TopicPlan, current_plan};

/// Runs `strait plan`.
pub fn plan_cmd(path: &Path) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
        for flow in config.enabled_flows() {
            let (source, target) = clients(&config, flow).await?;
            let (plan, _) = current_plan(flow, &source, &target, true).await?;
            print!("{}", render(flow, &plan));
            print!("{}", render_acls(flow, &source, &target).await?);
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The ACL part of the plan: what `sync.topic_acls` would create and what it skips.
async fn render_acls(flow: &Flow, source: &Client, target: &Client) -> anyhow::Result<String> {
    let mut out = String::new();
    if !flow.sync.topic_acls {
        let _ = writeln!(out, "  acls: sync.topic_acls = false");
        return Ok(out);
    }
    match acls::plan_sync(source, target, flow).await {
        Err(AclError::Unsupported(why)) => {
            let _ = writeln!(out, "  acls: ! {why}");
        }
        Err(AclError::Failed(e)) => return Err(e.into()),
        Ok((plan, _)) => {
            for b in &plan.create {
                let _ = writeln!(out, "  acl     create {b}");
            }
            for (b, why) in &plan.skipped {
                let _ = writeln!(out, "  acl     skip   {b}: {why}");
            }
            let _ = writeln!(
                out,
                "  acls: {} to create, {} present, {} not copied",
                plan.create.len(),
                plan.present,
                plan.skipped.len()
            );
        }
    }
    Ok(out)
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
