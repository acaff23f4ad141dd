//! `[flows.sync]`: what a flow keeps in sync besides records — the file's form, which is
//! also the resolved form ([`Sync`]: seven switches need no resolving), and its check.

use serde::{Deserialize, Serialize};

use super::problem::{KeyPath, Problem};

/// What a flow keeps in sync besides records (`[flows.sync]`), as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyncSpec {
    /// Copy topic configs at creation and keep them in sync.
    pub topic_configs: bool,
    /// Commit translated offsets on the target for groups with no active members there.
    pub group_offsets: bool,
    /// Emit heartbeats and replicate heartbeats topics.
    pub heartbeats: bool,
    /// Emit MM2-compatible checkpoints (`<source>.checkpoints.internal`) on the target.
    pub checkpoints: bool,
    /// Copy topic ACLs to the target (MM2's `sync.topic.acls.enabled`: WRITE dropped,
    /// ALL downgraded to READ).
    pub topic_acls: bool,
    /// Delete the target topic ACLs Strait created whose source ACL is gone (needs
    /// `topic_acls`; MM2 never deletes).
    pub delete_topic_acls: bool,
    /// Commit the exact source positions of groups' target commits on the source (and
    /// write MM2 checkpoints there), so failback is ready at any moment.
    pub reverse_group_offsets: bool,
}

/// What a flow keeps in sync besides records, resolved: the table as written.
pub type Sync = SyncSpec;

impl Default for SyncSpec {
    fn default() -> Self {
        Self {
            topic_configs: true,
            group_offsets: true,
            heartbeats: true,
            checkpoints: true,
            topic_acls: true,
            delete_topic_acls: false,
            reverse_group_offsets: false,
        }
    }
}

/// Checks `spec` (at `at`, the `sync` table of a flow); the problem goes to `problems`:
/// `delete_topic_acls` without `topic_acls` would do nothing.
pub fn check(spec: &SyncSpec, at: &KeyPath, problems: &mut Vec<Problem>) {
    if spec.delete_topic_acls && !spec.topic_acls {
        problems.push(
            Problem::new(
                at.key("delete_topic_acls"),
                "delete_topic_acls = true does nothing with topic_acls = false",
            )
            .expected("topic_acls = true, or delete_topic_acls = false"),
        );
    }
}

#[cfg(test)]
mod tests;
