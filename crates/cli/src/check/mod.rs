//! `strait check -c FILE`: validates the config, then reaches every cluster and checks what
//! Strait needs from it, one line per check (`✓`, `✗`, or `!` for a limitation Strait copes
//! with). Exits 1 if any check failed. Every network step has a deadline, so an unreachable
//! or stalled broker gives a `✗` line, never a hang. Writes nothing, except that a broker
//! which ignores CreateTopics' `validate_only` gets a probe topic that is deleted at once
//! (and the output says so).
//!
//! Per cluster, in order ([`cluster`]): the security protocol; a TLS handshake with every
//! bootstrap address ([`security`]; a failure skips the rest of the cluster); connecting,
//! which authenticates with SASL; Metadata; API versions; DescribeConfigs; CreateTopics
//! (`validate_only`); the state topics; then authorization ([`access`] asks the brokers,
//! [`authz`] decides).

mod access;
mod authz;
mod cluster;
mod security;

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use strait_mirror::config::{Config, load};

use crate::exit::Exit;
use crate::plan::runtime;

/// The outcome of the checks so far, and their lines not printed yet (clusters are checked
/// at once; each one's lines are printed together, in the config's order).
#[derive(Default)]
pub(crate) struct Report {
    failed: usize,
    warned: usize,
    lines: Vec<String>,
    /// `--json`: lines are kept for the document instead of printed.
    json: bool,
    /// The lines "printed" so far in `--json` mode.
    kept: Vec<String>,
}

impl Report {
    fn line(&mut self, text: impl Display) {
        self.lines.push(text.to_string());
    }

    fn ok(&mut self, what: impl Display) {
        self.line(format!("  ✓ {what}"));
    }

    fn fail(&mut self, what: impl Display) {
        self.failed += 1;
        self.line(format!("  ✗ {what}"));
    }

    fn warn(&mut self, what: impl Display) {
        self.warned += 1;
        self.line(format!("  ! {what}"));
    }

    /// Prints the lines gathered so far.
    fn print(&mut self) {
        if self.json {
            self.kept.append(&mut self.lines);
            return;
        }
        for l in self.lines.drain(..) {
            println!("{l}");
        }
    }

    /// The lines as JSON: each with its status (`ok`, `failed`, `limitation`, or `info`
    /// for a heading), the text without its mark.
    fn json_lines(&self) -> Vec<serde_json::Value> {
        self.kept
            .iter()
            .chain(&self.lines)
            .map(|l| {
                let t = l.trim_start();
                let (status, text) = [("✓ ", "ok"), ("✗ ", "failed"), ("! ", "limitation")]
                    .iter()
                    .find_map(|(mark, s)| t.strip_prefix(mark).map(|rest| (*s, rest)))
                    .unwrap_or(("info", t));
                serde_json::json!({ "status": status, "text": text })
            })
            .collect()
    }

    /// Takes `other`'s counts and lines after this one's.
    fn absorb(&mut self, mut other: Report) {
        self.failed += other.failed;
        self.warned += other.warned;
        self.lines.append(&mut other.lines);
    }
}

/// Runs `strait check` (`json`: one JSON document instead of text).
pub fn check_cmd(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let config = match load(path) {
        Ok(c) => c,
        Err(e) => {
            if json {
                let doc = serde_json::json!({
                    "config": path.display().to_string(), "valid": false,
                    "error": e.to_string(), "checks": [],
                });
                println!("{doc}");
            } else {
                println!("✗ config {}: invalid", path.display());
            }
            eprintln!("{e}");
            return Ok(Exit::Usage.into());
        }
    };
    if !json {
        println!(
            "✓ config {}: valid ({} clusters, {} enabled flows)",
            path.display(),
            config.clusters.len(),
            config.enabled_flows().count()
        );
    }
    let mut report = Report {
        json,
        ..Report::default()
    };
    let started = std::time::Instant::now();
    runtime()?.block_on(check_all(&config, &mut report));
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let doc = serde_json::json!({
            "config": path.display().to_string(), "valid": true,
            "checks": report.json_lines(), "failed": report.failed,
            "limitations": report.warned, "seconds": seconds,
        });
        println!("{doc}");
    } else {
        report.print();
        println!(
            "{} check(s) failed, {} limitation(s), in {seconds:.1} s",
            report.failed, report.warned,
        );
    }
    // Every check is of reaching a cluster: connecting, TLS, SASL, authorization.
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        Exit::Unreachable.into()
    })
}

/// What each cluster is used as.
#[derive(Default, Clone)]
struct Roles {
    source: bool,
    target: bool,
    state_topics: Vec<String>,
}

async fn check_all(config: &Config, report: &mut Report) {
    let mut roles: BTreeMap<&str, Roles> = BTreeMap::new();
    for flow in config.enabled_flows() {
        roles.entry(flow.source.as_str()).or_default().source = true;
        let t = roles.entry(flow.target.as_str()).or_default();
        t.target = true;
        t.state_topics.push(flow.state_topic.clone());
    }
    // Every cluster's connection and protocol checks at once: an unreachable cluster costs
    // its timeout once, not once per cluster before it.
    let shared = Arc::new(config.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (i, (name, role)) in roles.iter().enumerate() {
        let (config, name, role) = (Arc::clone(&shared), name.to_string(), role.clone());
        tasks.spawn(async move {
            let mut own = Report::default();
            let reached = cluster::check_cluster(&config, &name, &role, &mut own).await;
            (i, own, reached)
        });
    }
    let mut reached: Vec<_> = tasks.join_all().await;
    reached.sort_by_key(|(i, _, _)| *i);
    let reached = reached.into_iter().map(|(_, own, r)| (own, r));
    let mut cache = access::Cache::default();
    for ((name, role), (own, reached)) in roles.into_iter().zip(reached) {
        report.absorb(own);
        let Some((client, meta)) = reached else {
            report.print();
            cache.failed(name, "its checks failed above");
            continue;
        };
        cache.reached(name, access::Seen::new(client, meta));
        if role.source {
            access::check_source(config, name, &mut cache, report).await;
        }
        if role.target {
            access::check_target(config, name, &mut cache, report).await;
        }
        report.print();
    }
}

/// A deadline for one step: the cluster's request timeout plus slack for a reconnect.
fn deadline(config: &Config, name: &str) -> Duration {
    config
        .cluster(name)
        .map(|c| c.connect_timeout + c.request_timeout * 2)
        .unwrap_or(Duration::from_secs(10))
}

async fn timed<T, E: Display>(
    limit: Duration,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("no answer within {limit:?}")),
    }
}
