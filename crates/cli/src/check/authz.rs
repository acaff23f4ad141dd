//! The authorization verdicts of `strait check`: from the operations brokers report (KIP-430)
//! and the operations Strait needs, the `✓`/`✗`/`!` lines. Pure: no sockets, no clock.
//!
//! Rules for one kind of resource (source topics, target topics, state topics, groups):
//! - **nothing_to_check**: no resource of the kind, no line.
//! - **all_granted**: every reported resource allows every needed operation: one `✓` line
//!   naming the operations and how many resources.
//! - **denied_per_operation**: each needed operation that some reported resources deny gives
//!   one `✗` line: the operation, how many of how many, and the first names.
//! - **granted_rest**: beside `✗` lines, the operations every reported resource allows still
//!   get one `✓` line, so the output says what does work.
//! - **not_reported_is_a_limitation**: resources whose operations the broker did not report
//!   (INT32 MIN: no authorizer, or no KIP-430) are never `✗`; one `!` line counts them.
//!
//! Rules for the cluster resource (target clusters):
//! - **cluster_not_reported**: one `!` line, nothing else.
//! - **create_on_cluster**: topics missing on the target need Create: `✓` when the cluster
//!   grants it; otherwise `!`, since a topic ACL on their names may grant it and that cannot
//!   be verified without creating them. No missing topic: no line.
//! - **idempotent_write**: InitProducerId needs IdempotentWrite on the cluster (`✓`), or on
//!   Kafka ≥ 2.8 Write on any topic (`✓` naming a topic the broker reported as writable;
//!   `!` when no target topic was reported yet; `✗` when none of the reported ones is
//!   writable). Before 2.8 without IdempotentWrite: `✗`.

use strait_client::rpc::authz::{AclOperation, AuthorizedOps};

/// One output line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// `✓`
    Ok(String),
    /// `✗`
    Fail(String),
    /// `!`
    Warn(String),
}

/// How many names a line lists before "and N more".
const NAMES_SHOWN: usize = 5;

/// The `!` text for operations a broker does not report.
pub(crate) const NOT_REPORTED: &str = "not reported by the broker (no authorizer, or it does not implement KIP-430): authorization will show at first use";

fn op_list(ops: &[AclOperation]) -> String {
    ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(", ")
}

fn names(list: &[&str]) -> String {
    let mut s = list
        .iter()
        .take(NAMES_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > NAMES_SHOWN {
        s.push_str(&format!(" and {} more", list.len() - NAMES_SHOWN));
    }
    s
}

/// The verdicts for `needed` operations on resources of one kind (`what`, e.g. "source
/// topic"), each with the operations its broker reported.
pub(crate) fn resource_lines(
    what: &str,
    needed: &[AclOperation],
    resources: &[(String, Option<AuthorizedOps>)],
) -> Vec<Line> {
    let mut out = Vec::new();
    let reported: Vec<(&str, AuthorizedOps)> = resources
        .iter()
        .filter_map(|(n, ops)| ops.map(|o| (n.as_str(), o)))
        .collect();
    let unreported = resources.len() - reported.len();
    if !reported.is_empty() {
        let mut granted = Vec::new();
        let mut denied = Vec::new();
        for &op in needed {
            let refusing: Vec<&str> = reported
                .iter()
                .filter(|(_, o)| !o.allows(op))
                .map(|(n, _)| *n)
                .collect();
            if refusing.is_empty() {
                granted.push(op);
            } else {
                denied.push((op, refusing));
            }
        }
        if !granted.is_empty() {
            out.push(Line::Ok(format!(
                "authorized: {} on {} {what}(s)",
                op_list(&granted),
                reported.len()
            )));
        }
        for (op, refusing) in denied {
            out.push(Line::Fail(format!(
                "not authorized: {op} on {} of {} {what}(s): {}",
                refusing.len(),
                reported.len(),
                names(&refusing)
            )));
        }
    }
    if unreported > 0 {
        out.push(Line::Warn(format!(
            "authorization ({}) on {unreported} {what}(s): {NOT_REPORTED}",
            op_list(needed)
        )));
    }
    out
}

/// What the cluster-level verdicts of a target cluster depend on.
#[derive(Debug, Clone)]
pub(crate) struct ClusterFacts<'a> {
    /// The cluster resource's reported operations.
    pub ops: Option<AuthorizedOps>,
    /// The broker is Kafka ≥ 2.8 (it has DescribeCluster): Write on any topic allows
    /// InitProducerId.
    pub write_allows_idempotence: bool,
    /// Topics Strait would create (target and state topics not there yet).
    pub missing_topics: &'a [&'a str],
    /// Target topics whose operations the broker reported, with whether Write is allowed.
    pub topic_write: &'a [(&'a str, bool)],
}

/// The verdicts on the cluster resource (Create, IdempotentWrite).
pub(crate) fn cluster_lines(f: &ClusterFacts<'_>) -> Vec<Line> {
    let Some(ops) = f.ops else {
        return vec![Line::Warn(format!(
            "authorization (Create, IdempotentWrite) on the cluster: {NOT_REPORTED}"
        ))];
    };
    let mut out = Vec::new();
    if !f.missing_topics.is_empty() {
        let n = f.missing_topics.len();
        if ops.allows(AclOperation::Create) {
            out.push(Line::Ok(format!(
                "authorized: Create on the cluster ({n} topic(s) to create: {})",
                names(f.missing_topics)
            )));
        } else {
            out.push(Line::Warn(format!(
                "Create is not granted on the cluster: the {n} topic(s) to create ({}) need Create \
                 ACLs on their names, which cannot be verified without creating them",
                names(f.missing_topics)
            )));
        }
    }
    if ops.allows(AclOperation::IdempotentWrite) {
        out.push(Line::Ok(
            "authorized: IdempotentWrite on the cluster (InitProducerId)".into(),
        ));
    } else if !f.write_allows_idempotence {
        out.push(Line::Fail(
            "not authorized: IdempotentWrite on the cluster (InitProducerId needs it before Kafka 2.8)"
                .into(),
        ));
    } else if let Some((t, _)) = f.topic_write.iter().find(|(_, w)| *w) {
        out.push(Line::Ok(format!(
            "authorized: InitProducerId by Write on topic {t} (Kafka ≥ 2.8; IdempotentWrite on the cluster is not granted)"
        )));
    } else if f.topic_write.is_empty() {
        out.push(Line::Warn(
            "IdempotentWrite is not granted on the cluster: InitProducerId needs Write on some topic \
             (Kafka ≥ 2.8), not verifiable before a target topic exists"
                .into(),
        ));
    } else {
        out.push(Line::Fail(
            "not authorized: InitProducerId needs IdempotentWrite on the cluster or (Kafka ≥ 2.8) Write on any topic, and neither is granted"
                .into(),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
