//! What every member of a flow's group must agree on, carried in the group protocol's
//! name so that the broker's group coordinator enforces it.
//!
//! Rules:
//! - **The protocol name carries the topology.** At-least-once members join with
//!   [`PROTOCOL_NAME`]; exactly-once members with `PROTOCOL_NAME;eos;slots=<n>;txn=<id>`
//!   ([`Topology::protocol_name`]). A coordinator accepts a member only if it shares a
//!   protocol with the group, so a member with another slot count, another
//!   transactional-id prefix or another guarantee is refused (INCONSISTENT_GROUP_PROTOCOL)
//!   before it owns anything: two members can never write one partition under two
//!   transactional ids.
//! - **The refusal names the difference.** A member reads the protocol its group runs
//!   (DescribeGroups) before it joins; [`Topology::disagreement`] turns the two names into
//!   a message that says what differs and on which hosts the other members run.
//! - **Protocols of other Strait versions are not guessed at**: a name that does not
//!   start with [`PROTOCOL_NAME`] is "another Strait version", whatever follows.

use super::PROTOCOL_NAME;

/// The topology of an exactly-once flow shared by several processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// `scale_out.slots`.
    pub slots: u32,
    /// `delivery.transactional_id` (each slot appends `.slot-<n>`).
    pub transactional_id: String,
}

impl Topology {
    /// The protocol name members of `topology` join with (`None`: at-least-once).
    pub fn protocol_name(topology: Option<&Topology>) -> String {
        match topology {
            None => PROTOCOL_NAME.to_owned(),
            Some(t) => format!(
                "{PROTOCOL_NAME};eos;slots={};txn={}",
                t.slots, t.transactional_id
            ),
        }
    }

    /// What `name` says: `Some(None)` an at-least-once member of this version,
    /// `Some(Some(t))` an exactly-once one, `None` a name this version does not speak.
    pub fn parse(name: &str) -> Option<Option<Topology>> {
        if name == PROTOCOL_NAME {
            return Some(None);
        }
        let rest = name
            .strip_prefix(PROTOCOL_NAME)?
            .strip_prefix(";eos;slots=")?;
        let (slots, txn) = rest.split_once(";txn=")?;
        Some(Some(Topology {
            slots: slots.parse().ok()?,
            transactional_id: txn.to_owned(),
        }))
    }

    /// What `topology` replicates, in words (`None`: at-least-once).
    pub fn describe(topology: Option<&Topology>) -> String {
        match topology {
            None => "at-least-once".to_owned(),
            Some(t) => format!(
                "exactly-once in {} slots under transactional id {:?}",
                t.slots, t.transactional_id
            ),
        }
    }

    /// Why a member joining with `ours` cannot share a group whose members run `theirs`
    /// (a protocol name) on `hosts`; `None` when they agree.
    pub fn disagreement(ours: Option<&Topology>, theirs: &str, hosts: &[String]) -> Option<String> {
        let on = if hosts.is_empty() {
            String::new()
        } else {
            format!(" (on {})", hosts.join(", "))
        };
        let what = Topology::describe;
        match Topology::parse(theirs) {
            Some(t) if t.as_ref() == ours => None,
            Some(t) => Some(format!(
                "the group's members{on} replicate {}; this process is configured for {}. \
                 Every member must agree (a slot written under two transactional ids is not \
                 exactly-once): stop every member, change the configuration of all, then \
                 start them again",
                what(t.as_ref()),
                what(ours)
            )),
            None => Some(format!(
                "the group's members{on} speak protocol {theirs:?}, another Strait version \
                 (this one speaks {:?}). Stop every member of the other version, then start \
                 this one",
                Topology::protocol_name(ours)
            )),
        }
    }
}

#[cfg(test)]
mod tests;
