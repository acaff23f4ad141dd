//! Which target topic ACLs Strait deletes (pure): `sync.delete_topic_acls`.
//!
//! Inputs: the *desired* bindings (the source's topic ACLs mapped by [`super::map`]), the
//! target's topic ACLs, and the bindings recorded as *created* by Strait in the flow's
//! state topic ([`crate::state::acls`]; recorded only after CreateAcls succeeded for a
//! binding the target lacked).
//!
//! Rules:
//! - **only what Strait created**: nothing outside the created set is ever deleted — an
//!   ACL Strait found already present on the target is never recorded, so never deleted;
//! - **only what the source no longer has**: a created binding still desired is kept;
//! - **only what is there**: a created binding the target no longer holds (deleted by
//!   hand, or by Strait before a crash could record it) is *forgotten*, never deleted: if
//!   someone creates it again, it is theirs. If it is still desired the sync creates it
//!   again and records it anew;
//! - **only exact filters**: a binding is deleted with a DeleteAcls filter naming every
//!   field; one holding a code a filter reads as a wildcard or that Strait never creates
//!   (a resource other than TOPIC, a pattern other than LITERAL/PREFIXED, ANY or UNKNOWN
//!   operation or permission) is kept and reported;
//! - **off by default**: with `sync.delete_topic_acls = false` stale bindings are kept and
//!   reported (and still recorded, so turning it on later deletes them);
//! - **an empty source deletes nothing**: a source that lists no topic ACL at all (an
//!   authorizer lost or replaced, or none, like Tansu) holds every deletion; the last
//!   source ACL's copy is deleted by hand.

use std::collections::BTreeSet;

use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};

/// Why a stale binding (created by Strait, no longer desired, on the target) is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// `sync.delete_topic_acls = false`.
    Disabled,
    /// The source lists no topic ACL at all.
    EmptySource,
    /// An exact DeleteAcls filter cannot name it.
    NotExact,
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Keep::Disabled => "sync.delete_topic_acls = false",
            Keep::EmptySource => {
                "the source lists no topic ACL at all: deletions are held (delete by hand)"
            }
            Keep::NotExact => "an exact DeleteAcls filter cannot name it",
        })
    }
}

/// What to do with the bindings Strait created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deletions {
    /// Bindings to delete from the target (then forget), sorted.
    pub delete: Vec<AclBinding>,
    /// Stale bindings kept, with the reason.
    pub kept: Vec<(AclBinding, Keep)>,
    /// Created bindings the target no longer holds: forgotten, not deleted.
    pub forget: Vec<AclBinding>,
}

/// Whether a DeleteAcls filter made of `b`'s fields matches `b` only.
pub fn exact(b: &AclBinding) -> bool {
    b.resource == AclResource::Topic
        && matches!(b.pattern, AclPattern::Literal | AclPattern::Prefixed)
        && matches!(b.operation, AclBindingOp::All | AclBindingOp::Op(_))
        && matches!(b.permission, AclPermission::Allow | AclPermission::Deny)
}

/// Decides the deletions (the rules in the module doc). `source_empty`: the source listed
/// no topic ACL at all; `enabled`: `sync.delete_topic_acls`.
pub fn decide(
    desired: &BTreeSet<AclBinding>,
    target: &[AclBinding],
    created: &BTreeSet<AclBinding>,
    source_empty: bool,
    enabled: bool,
) -> Deletions {
    let on_target: BTreeSet<&AclBinding> = target.iter().collect();
    let mut out = Deletions::default();
    for b in created {
        if !on_target.contains(b) {
            out.forget.push(b.clone());
        } else if desired.contains(b) {
            continue;
        } else if !exact(b) {
            out.kept.push((b.clone(), Keep::NotExact));
        } else if !enabled {
            out.kept.push((b.clone(), Keep::Disabled));
        } else if source_empty {
            out.kept.push((b.clone(), Keep::EmptySource));
        } else {
            out.delete.push(b.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests;
