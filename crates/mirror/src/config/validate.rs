//! Checks a parsed [`ConfigFile`] and resolves it into a [`Config`]: a pure function that
//! reports every problem it finds, not just the first.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::defaults;
use super::model::{ConfigFile, FlowSpec, NamingPolicy};
use super::naming::{MAX_TOPIC_LEN, is_topic_name};
use super::problem::{KeyPath, Problem};
use super::resolved::{Cluster, Config, Flow};
use super::suggest::did_you_mean;
use super::topics::Selection;

/// Validates `file`, returning the resolved config or every problem found.
pub fn validate(file: &ConfigFile) -> Result<Config, Vec<Problem>> {
    let mut v = Validator::default();
    let root = KeyPath::root();

    if file.clusters.is_empty() {
        v.push(
            Problem::new(root.key("clusters"), "no clusters are defined")
                .expected("at least two `[clusters.<name>]` tables"),
        );
    }
    let clusters: BTreeMap<String, Cluster> = file
        .clusters
        .iter()
        .filter_map(|(name, spec)| {
            let at = root.key("clusters").key(name);
            super::cluster::resolve(name, spec, &at, &mut v.problems).map(|c| (name.clone(), c))
        })
        .collect();

    if file.flows.is_empty() {
        v.push(
            Problem::new(root.key("flows"), "no flows are defined")
                .expected("at least one `[[flows]]` table"),
        );
    }
    let cluster_names: Vec<&str> = file.clusters.keys().map(String::as_str).collect();
    let flows: Vec<Flow> = file
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, spec)| v.flow(i, spec, &cluster_names))
        .collect();
    v.unique_flows(&file.flows);
    v.problems
        .extend(super::delivery::unique_transactional_ids(&flows));
    v.identity_cycles(&flows);

    let engine = super::engine::resolve(&file.engine, &root.key("engine"), &mut v.problems);
    let metrics = if file.metrics.enabled {
        super::metrics::resolve(&file.metrics, &root.key("metrics"), &mut v.problems)
    } else {
        None
    };
    let metrics_listen = metrics.as_ref().map(|m| m.listen);
    let logging = super::logging::resolve(&file.logging, &root.key("logging"), &mut v.problems);

    if !v.problems.is_empty() {
        return Err(v.problems);
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
        _ => Err(v.problems),
    }
}

#[derive(Default)]
struct Validator {
    problems: Vec<Problem>,
}

impl Validator {
    fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }

    fn flow(&mut self, i: usize, spec: &FlowSpec, clusters: &[&str]) -> Option<Flow> {
        let at = KeyPath::root().key("flows").index(i);
        let before = self.problems.len();
        for (key, name) in [("source", &spec.source), ("target", &spec.target)] {
            if !clusters.contains(&name.as_str()) {
                self.push(
                    Problem::new(at.key(key), format!("unknown cluster \"{name}\""))
                        .expected(format!(
                            "one of the `[clusters.<name>]` names: {}",
                            list(clusters)
                        ))
                        .suggest(did_you_mean(name, clusters.iter().copied()).map(str::to_owned)),
                );
            }
        }
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| defaults::flow_name(&spec.source, &spec.target));
        if !is_topic_name(&name) {
            self.push(
                Problem::new(at.key("name"), format!("invalid flow name \"{name}\""))
                    .expected("letters, digits, `.`, `_` and `-` (the name becomes part of the state topic's name)"),
            );
        }
        let state_topic = spec
            .state_topic
            .clone()
            .unwrap_or_else(|| defaults::state_topic(&name));
        if !is_topic_name(&state_topic) {
            self.push(
                Problem::new(
                    at.key("state_topic"),
                    format!("invalid topic name \"{state_topic}\""),
                )
                .expected(format!(
                    "at most {MAX_TOPIC_LEN} letters, digits, `.`, `_` and `-`"
                )),
            );
        }

        let naming = &spec.naming;
        let policy =
            super::naming::resolve(naming, &spec.source, &at.key("naming"), &mut self.problems);
        if spec.enabled && spec.source == spec.target && naming.policy == NamingPolicy::Identity {
            self.push(
                Problem::new(at.clone(), format!("flow from \"{0}\" to \"{0}\" with identity naming replicates every topic onto itself (a cycle)", spec.source))
                    .expected("a different target, or `naming.policy = \"prefix\"`"),
            );
        }

        let selection = super::topics::resolve(
            &spec.topics,
            &spec.groups,
            &spec.topic_configs,
            &at,
            &mut self.problems,
        );

        let intervals =
            super::intervals::resolve(&spec.intervals, &at.key("intervals"), &mut self.problems);

        super::sync::check(&spec.sync, &at.key("sync"), &mut self.problems);

        let delivery = super::delivery::resolve(
            &spec.delivery,
            &name,
            &at.key("delivery"),
            &mut self.problems,
        );

        let scale_out = match &spec.scale_out {
            Some(so) => super::scale_out::resolve(
                so,
                &name,
                delivery.as_ref().is_some_and(|d| d.exactly_once()),
                &at.key("scale_out"),
                &mut self.problems,
            )
            .map(Some),
            None => Some(None),
        };

        if self.problems.len() != before {
            return None;
        }
        let Selection {
            topics,
            groups,
            topic_configs,
            replication_factor,
        } = selection?;
        Some(Flow {
            name,
            source: spec.source.clone(),
            target: spec.target.clone(),
            enabled: spec.enabled,
            state_topic,
            topics,
            policy: policy?,
            groups,
            topic_configs,
            replication_factor,
            start_position: spec.topics.start_position,
            on_source_truncation: spec.topics.on_source_truncation,
            on_topic_recreation: spec.topics.on_topic_recreation,
            on_target_mismatch: spec.topics.on_target_mismatch,
            sync: spec.sync,
            intervals: intervals?,
            delivery: delivery?,
            scale_out: scale_out?,
        })
    }

    /// Flow names and state topics must be unique: both identify a flow's durable state.
    fn unique_flows(&mut self, specs: &[FlowSpec]) {
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut topics: HashMap<(&str, String), usize> = HashMap::new();
        for (i, spec) in specs.iter().enumerate() {
            let at = KeyPath::root().key("flows").index(i);
            let name = spec
                .name
                .clone()
                .unwrap_or_else(|| defaults::flow_name(&spec.source, &spec.target));
            let topic = spec
                .state_topic
                .clone()
                .unwrap_or_else(|| defaults::state_topic(&name));
            if let Some(first) = names.insert(name.clone(), i) {
                self.push(
                    Problem::new(at.key("name"), format!("flow name \"{name}\" is also used by flows[{first}]"))
                        .expected("a unique `name` per flow (two flows between the same clusters need explicit names)"),
                );
            } else if let Some(first) = topics.insert((spec.target.as_str(), topic.clone()), i) {
                self.push(
                    Problem::new(at.key("state_topic"), format!("state topic \"{topic}\" is also used by flows[{first}] on the same target"))
                        .expected("a unique state topic per flow"),
                );
            }
        }
    }

    /// Enabled identity flows that form a loop (a→b→a, a→b→c→a) copy the same topics
    /// around forever: identity names carry no origin, so per-topic cycle checks cannot help.
    fn identity_cycles(&mut self, flows: &[Flow]) {
        let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for f in flows.iter().filter(|f| {
            f.enabled && f.policy.kind() == NamingPolicy::Identity && f.source != f.target
        }) {
            edges
                .entry(f.source.as_str())
                .or_default()
                .insert(f.target.as_str());
        }
        if let Some(cycle) = find_cycle(&edges) {
            self.push(
                Problem::new(
                    KeyPath::root().key("flows"),
                    format!("flows with identity naming form a cycle ({}): every topic would be replicated around it forever", cycle.join(" -> ")),
                )
                .expected("`naming.policy = \"prefix\"` on at least one flow of the cycle"),
            );
        }
    }
}

/// The first cycle found by depth-first search, as `[a, b, a]`.
fn find_cycle<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    fn dfs<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(pos) = stack.iter().position(|n| *n == node) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = dfs(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|start| dfs(start, edges, &mut Vec::new(), &mut done))
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        return "(none defined)".to_owned();
    }
    items
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
