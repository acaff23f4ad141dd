//! Checks a parsed [`ConfigFile`] and resolves it into a [`Config`]: a pure function that
//! reports every problem it finds, not just the first.
//!
//! It only walks the file: each table's checks live with the table (`cluster::resolve`,
//! `flow::resolve`, …), each given the key path of its table and the one list every
//! problem goes to. A table with problems resolves to `None`; the walk goes on, so one
//! run reports them all.

use std::collections::BTreeMap;

use super::model::ConfigFile;
use super::problem::{KeyPath, Problem};
use super::resolved::{Cluster, Config, Flow};
use super::{cluster, delivery, engine, flow, logging, metrics};

/// Validates `file`, returning the resolved config or every problem found.
pub fn validate(file: &ConfigFile) -> Result<Config, Vec<Problem>> {
    let mut problems = Vec::new();
    let root = KeyPath::root();

    let clusters = resolve_clusters(file, &root, &mut problems);
    let flows = resolve_flows(file, &root, &mut problems);

    let engine = engine::resolve(&file.engine, &root.key("engine"), &mut problems);
    let metrics = if file.metrics.enabled {
        metrics::resolve(&file.metrics, &root.key("metrics"), &mut problems)
    } else {
        None
    };
    let metrics_listen = metrics.as_ref().map(|m| m.listen);
    let logging = logging::resolve(&file.logging, &root.key("logging"), &mut problems);

    if !problems.is_empty() {
        return Err(problems);
    }
    match (engine, logging) {
        (Some(engine), Some(logging)) => Ok(Config {
            clusters,
            flows,
            engine,
            metrics_listen,
            metrics,
            logging,
        }),
        _ => Err(problems),
    }
}

/// Every `[clusters.<name>]` table resolved; none at all is a problem.
fn resolve_clusters(
    file: &ConfigFile,
    root: &KeyPath,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Cluster> {
    if file.clusters.is_empty() {
        problems.push(
            Problem::new(root.key("clusters"), "no clusters are defined")
                .expected("at least two `[clusters.<name>]` tables"),
        );
    }
    file.clusters
        .iter()
        .filter_map(|(name, spec)| {
            let at = root.key("clusters").key(name);
            cluster::resolve(spec, name, &at, problems).map(|c| (name.clone(), c))
        })
        .collect()
}

/// Every `[[flows]]` table resolved (none at all is a problem), and the checks across flows:
/// unique names and transactional ids, no identity-naming cycle.
fn resolve_flows(file: &ConfigFile, root: &KeyPath, problems: &mut Vec<Problem>) -> Vec<Flow> {
    let flows_at = root.key("flows");
    if file.flows.is_empty() {
        problems.push(
            Problem::new(flows_at.clone(), "no flows are defined")
                .expected("at least one `[[flows]]` table"),
        );
    }
    let cluster_names: Vec<&str> = file.clusters.keys().map(String::as_str).collect();
    let flows: Vec<Flow> = file
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, spec)| flow::resolve(spec, &cluster_names, &flows_at.index(i), problems))
        .collect();
    flow::unique_names(&file.flows, &flows_at, problems);
    problems.extend(delivery::unique_transactional_ids(
        flows.iter().map(|f| (f.name.as_str(), &f.delivery)),
    ));
    flow::identity_cycles(&flows, &flows_at, problems);
    flows
}
