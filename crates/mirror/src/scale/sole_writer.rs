//! The sole-writer guard: a flow without `[flows.scale_out]` is written by one process,
//! and a second `strait run` of it is refused at start instead of writing beside the
//! first. It joins the flow's group (the one scale-out would use) on the target with a
//! protocol of its own, [`SOLE_WRITER_PROTOCOL`], and one unit, [`PartitionId::writer`],
//! that the leader gives to exactly one member.
//!
//! Rules ([`holder`]):
//! - **The holder keeps it.** A member that claims the unit (it held it in an earlier
//!   generation) keeps it; of several claimants, the one of the latest generation.
//! - **Otherwise one member is chosen**, the smallest member id: deterministic, so two
//!   processes that start together are told apart by the coordinator, not by a race
//!   between their first writes.
//! - **Everyone else gets nothing**, and stops with an error naming the holder's host
//!   (from its metadata).
//! - **A scale-out member and a sole writer never share a group**: their protocol names
//!   differ, so the coordinator refuses the later one (INCONSISTENT_GROUP_PROTOCOL).
//!
//! - **A restart does not wait for its dead self** ([`dead_predecessors`]): a member that
//!   names this host and a process that no longer runs here (or this very pid, reused
//!   after a container restart) is removed from the group before joining, so a process
//!   restarted after `kill -9` does not wait out its predecessor's session.
//!
//! The guard refuses at start and at every rebalance. It is not a fence: a holder cut off
//! from the coordinator for longer than its session keeps writing, as a consumer that
//! lost its group does (scale-out's members fence themselves; docs/operations.md).

use bytes::Bytes;
use strait_client::group::{JoinedMember, Protocol};

use super::{MemberAssignment, MemberMetadata, PartitionId};

/// The protocol name of the sole-writer guard (protocol type [`super::PROTOCOL_TYPE`]).
pub const SOLE_WRITER_PROTOCOL: &str = "strait-sole-writer-v1";

/// The pseudo-topic of the sole writer's unit: `<` and `>` cannot appear in a topic name.
pub const WRITER_TOPIC: &str = "<writer>";

impl PartitionId {
    /// The sole writer's unit: whoever holds it writes the flow.
    pub fn writer() -> Self {
        PartitionId::new(WRITER_TOPIC, 0)
    }
}

/// The member that holds the unit among `members` (id, metadata), by the module's rules;
/// `None` for no member.
pub fn holder(members: &[(String, MemberMetadata)]) -> Option<&str> {
    let unit = PartitionId::writer();
    let claimant = members
        .iter()
        .filter(|(_, m)| m.owned.contains(&unit))
        .max_by_key(|(id, m)| (m.generation, std::cmp::Reverse(id.as_str())));
    claimant
        .or_else(|| members.iter().min_by_key(|(id, _)| id.as_str()))
        .map(|(id, _)| id.as_str())
}

/// What a sole writer puts in its metadata's `host`: the host and its pid.
pub fn identity(host: &str, pid: u32) -> String {
    format!("{host} (pid {pid})")
}

/// The client id a sole writer on `host` with `pid` joins with. Coordinators name members
/// `<client id>-<uuid>` (Kafka and Tansu alike), so a member id tells the process it was
/// even where DescribeGroups returns no metadata (Tansu).
pub fn writer_client_id(client_id: &str, host: &str, pid: u32) -> String {
    format!("{client_id}.writer.{host}.pid{pid}")
}

/// The members (ids) that were earlier processes on this host (`host`, this process being
/// `pid`, joining with `client_id`) and are gone: their pid is not `alive`, or it is this
/// process's own pid (reused: a container restarted with the same host name).
pub fn dead_predecessors<'a>(
    member_ids: impl IntoIterator<Item = &'a str>,
    client_id: &str,
    host: &str,
    pid: u32,
    alive: impl Fn(u32) -> bool,
) -> Vec<String> {
    let prefix = format!("{client_id}.writer.{host}.pid");
    member_ids
        .into_iter()
        .filter(|id| {
            let Some(rest) = id.strip_prefix(&prefix) else {
                return false;
            };
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let follows_dash = rest[digits.len()..].starts_with('-');
            match digits.parse::<u32>() {
                Ok(p) if follows_dash => p == pid || !alive(p),
                _ => false,
            }
        })
        .map(str::to_owned)
        .collect()
}

/// The sole-writer guard's [`Protocol`]: this process's metadata, and on the leader the
/// unit given to [`holder`].
#[derive(Debug, Clone)]
pub struct SoleWriter {
    /// What this process joins with (its host; the unit once it holds it).
    pub meta: std::sync::Arc<std::sync::Mutex<MemberMetadata>>,
}

impl SoleWriter {
    /// A guard for a process on `host`, holding nothing yet.
    pub fn new(host: impl Into<String>) -> Self {
        SoleWriter {
            meta: std::sync::Arc::new(std::sync::Mutex::new(MemberMetadata::new(host, 1))),
        }
    }

    /// Records that this process holds the unit since `generation` (claimed at every
    /// later join, so a rebalance keeps it here).
    pub fn hold(&self, generation: i32) {
        let mut m = self.meta.lock().unwrap_or_else(|p| p.into_inner());
        m.generation = generation;
        m.owned = vec![PartitionId::writer()];
    }

    /// Whether the assignment bytes `data` give this process the unit.
    pub fn holds(data: &[u8]) -> bool {
        MemberAssignment::decode(data).is_ok_and(|a| a.partitions.contains(&PartitionId::writer()))
    }
}

impl Protocol for SoleWriter {
    fn protocols(&mut self) -> Result<Vec<(String, Bytes)>, String> {
        let meta = self.meta.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let bytes = meta.encode().map_err(|e| format!("member metadata: {e}"))?;
        Ok(vec![(SOLE_WRITER_PROTOCOL.to_owned(), Bytes::from(bytes))])
    }

    fn assign(
        &mut self,
        protocol: &str,
        _generation: i32,
        members: &[JoinedMember],
    ) -> Result<Vec<(String, Bytes)>, String> {
        if protocol != SOLE_WRITER_PROTOCOL {
            return Err(format!(
                "the coordinator chose protocol {protocol:?}; this process speaks \
                 {SOLE_WRITER_PROTOCOL:?}"
            ));
        }
        // A member whose metadata does not decode (another version) can still be given
        // nothing: it is refused, never the holder by accident.
        let decoded: Vec<(String, MemberMetadata)> = members
            .iter()
            .filter_map(|m| {
                MemberMetadata::decode(&m.metadata)
                    .ok()
                    .map(|meta| (m.member_id.clone(), meta))
            })
            .collect();
        let winner = holder(&decoded).map(str::to_owned);
        members
            .iter()
            .map(|m| {
                let mut a = MemberAssignment::default();
                if winner.as_deref() == Some(m.member_id.as_str()) {
                    a.partitions.push(PartitionId::writer());
                }
                let bytes = a.encode().map_err(|e| format!("assignment: {e}"))?;
                Ok((m.member_id.clone(), Bytes::from(bytes)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
