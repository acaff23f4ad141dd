//! The ACL sync's memory of what it created (pure): the bindings recorded as created, and
//! the changes to that record not yet written to the state topic.
//!
//! Rules:
//! - **recorded at once, written after**: a binding is in [`Ledger::created`] as soon as
//!   CreateAcls succeeded for it (or out once deleted or forgotten), and among the
//!   [`Ledger::unsaved`] changes until a state write takes them;
//! - **a failed write loses nothing**: the unsaved changes stay until
//!   [`Ledger::saved`] is called, and the next write carries them all;
//! - **the last change of a binding wins**: forgotten then created again in one round, a
//!   binding stays recorded (and the other way round).

use std::collections::BTreeSet;

use strait_client::AclBinding;

/// The created bindings and their unsaved changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    created: BTreeSet<AclBinding>,
    added: BTreeSet<AclBinding>,
    removed: BTreeSet<AclBinding>,
}

impl Ledger {
    /// The ledger of what the state topic records (`created`), nothing unsaved.
    pub fn new(created: BTreeSet<AclBinding>) -> Self {
        Ledger {
            created,
            ..Ledger::default()
        }
    }

    /// The bindings recorded as created, unsaved changes included.
    pub fn created(&self) -> &BTreeSet<AclBinding> {
        &self.created
    }

    /// Notes `add` as created and `remove` as no longer created (`remove` first).
    pub fn record(&mut self, add: &[AclBinding], remove: &[AclBinding]) {
        for b in remove {
            self.created.remove(b);
            self.added.remove(b);
            self.removed.insert(b.clone());
        }
        for b in add {
            self.created.insert(b.clone());
            self.removed.remove(b);
            self.added.insert(b.clone());
        }
    }

    /// The changes to write: (recorded, forgotten), each sorted, no binding in both.
    pub fn unsaved(&self) -> (Vec<AclBinding>, Vec<AclBinding>) {
        (
            self.added.iter().cloned().collect(),
            self.removed.iter().cloned().collect(),
        )
    }

    /// The unsaved changes were written.
    pub fn saved(&mut self) {
        self.added.clear();
        self.removed.clear();
    }
}

#[cfg(test)]
mod tests;
