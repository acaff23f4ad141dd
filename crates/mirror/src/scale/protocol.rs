//! [`StraitProtocol`]: Strait's side of the group protocol, for
//! [`strait_client::group::GroupMember`]. The engine keeps a [`Worker`] handle up to date
//! (what this worker owns, the flow's partitions and their load); the protocol reads it
//! when joining (the metadata) and, on the leader, when assigning.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use strait_client::group::{JoinedMember, Protocol};

use super::assign::{Member, Plan, assign};
use super::codec::MemberMetadata;
use super::{PROTOCOL_NAME, PartitionId, PartitionLoad, Topology};

#[derive(Debug)]
struct State {
    meta: MemberMetadata,
    /// The protocol name this worker joins with ([`super::Topology::protocol_name`]).
    protocol: String,
    partitions: Vec<PartitionLoad>,
    last_plan: Option<(i32, Plan)>,
    /// Members whose metadata did not decode in the last assignment, with why.
    refused: Vec<(String, String)>,
    /// The loads the last plan balanced, with the members and partitions it had: while
    /// those stay the same, later generations reuse them, so the moves of one plan
    /// complete instead of being re-planned on every generation from fresh (noisy)
    /// measurements.
    frozen: Option<(BTreeSet<String>, Vec<PartitionLoad>)>,
}

/// The engine's handle on what the protocol reads. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Worker {
    state: Arc<Mutex<State>>,
}

impl Worker {
    /// A worker on `host` with relative `capacity` (≥ 1), owning nothing.
    pub fn new(host: impl Into<String>, capacity: u32) -> Self {
        Worker {
            state: Arc::new(Mutex::new(State {
                meta: MemberMetadata::new(host, capacity.max(1)),
                protocol: PROTOCOL_NAME.to_owned(),
                partitions: Vec::new(),
                last_plan: None,
                refused: Vec::new(),
                frozen: None,
            })),
        }
    }

    /// Joins with the protocol of `topology` (exactly-once slots) instead of the
    /// at-least-once one, so that the coordinator refuses members that disagree.
    pub fn with_topology(self, topology: Option<&Topology>) -> Self {
        self.lock().protocol = Topology::protocol_name(topology);
        self
    }

    /// The protocol name this worker joins with.
    pub fn protocol_name(&self) -> String {
        self.lock().protocol.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records what this worker still owns (call after releasing revoked partitions, and
    /// after taking an assignment), with the generation it owns them in.
    pub fn set_owned(&self, generation: i32, owned: Vec<PartitionId>) {
        let mut s = self.lock();
        s.meta.generation = if owned.is_empty() { -1 } else { generation };
        s.meta.owned = owned;
    }

    /// Records the load this worker measured on the partitions it replicates (sent to the
    /// leader in the next JoinGroup).
    pub fn set_loads(&self, loads: Vec<PartitionLoad>) {
        self.lock().meta.loads = loads;
    }

    /// The metadata this worker joins with now.
    pub fn metadata(&self) -> MemberMetadata {
        self.lock().meta.clone()
    }

    /// What this worker owns now, with the generation.
    pub fn owned(&self) -> (i32, Vec<PartitionId>) {
        let s = self.lock();
        (s.meta.generation, s.meta.owned.clone())
    }

    /// Records the flow's partitions and their load (read by the leader when assigning).
    pub fn set_partitions(&self, partitions: Vec<PartitionLoad>) {
        self.lock().partitions = partitions;
    }

    /// The last plan this worker computed as leader, with its generation.
    pub fn last_plan(&self) -> Option<(i32, Plan)> {
        self.lock().last_plan.clone()
    }

    /// Members left out of the last assignment because their metadata did not decode
    /// (another Strait version during a rolling upgrade), with the reason. While there are
    /// any, the leader assigns no partition that no readable member owns: the unreadable
    /// member might own it.
    pub fn refused_members(&self) -> Vec<(String, String)> {
        self.lock().refused.clone()
    }

    /// The protocol for [`strait_client::group::GroupMember::start`].
    pub fn protocol(&self) -> StraitProtocol {
        StraitProtocol {
            worker: self.clone(),
        }
    }
}

/// Strait's [`Protocol`]: metadata from the [`Worker`], assignments from [`assign`].
#[derive(Debug, Clone)]
pub struct StraitProtocol {
    worker: Worker,
}

impl Protocol for StraitProtocol {
    fn protocols(&mut self) -> Result<Vec<(String, Bytes)>, String> {
        let (meta, name) = {
            let s = self.worker.lock();
            (s.meta.clone(), s.protocol.clone())
        };
        let bytes = meta.encode().map_err(|e| format!("member metadata: {e}"))?;
        Ok(vec![(name, Bytes::from(bytes))])
    }

    fn assign(
        &mut self,
        protocol: &str,
        generation: i32,
        members: &[JoinedMember],
    ) -> Result<Vec<(String, Bytes)>, String> {
        let ours = self.worker.protocol_name();
        if protocol != ours {
            return Err(format!(
                "the coordinator chose protocol {protocol:?}; this worker speaks {ours:?}"
            ));
        }
        let (decoded, refused) = decode_members(members);
        let mut partitions = self.worker.loads_to_balance(&decoded);
        if !refused.is_empty() {
            // A member we cannot read may own anything: hand out nothing nobody readable
            // owns (keeping and revoking stay safe), so no partition gets a second writer.
            let claimed: BTreeSet<&PartitionId> =
                decoded.iter().flat_map(|m| m.meta.owned.iter()).collect();
            partitions.retain(|p| claimed.contains(&p.id));
        }
        let plan = assign(&decoded, &partitions);
        let mut out = Vec::new();
        for (id, a) in &plan.assignments {
            let bytes = a.encode().map_err(|e| format!("assignment of {id}: {e}"))?;
            out.push((id.clone(), Bytes::from(bytes)));
        }
        let mut s = self.worker.lock();
        s.last_plan = Some((generation, plan));
        s.refused = refused;
        Ok(out)
    }
}

/// Decodes each member's metadata. Returns the members that decode, and the others with
/// why (logged: they get no partitions).
fn decode_members(members: &[JoinedMember]) -> (Vec<Member>, Vec<(String, String)>) {
    let mut decoded = Vec::new();
    let mut refused = Vec::new();
    for m in members {
        match MemberMetadata::decode(&m.metadata) {
            Ok(meta) => decoded.push(Member {
                id: m.member_id.clone(),
                meta,
            }),
            Err(e) => {
                tracing::warn!(member = %m.member_id, error = %e,
                    "a member's metadata does not decode; it gets no partitions");
                refused.push((m.member_id.clone(), e.to_string()));
            }
        }
    }
    (decoded, refused)
}

impl Worker {
    /// The flow's partitions with the loads to balance: the frozen ones while the members
    /// and partitions stay the same, else fresh measurements (then frozen).
    fn loads_to_balance(&self, decoded: &[Member]) -> Vec<PartitionLoad> {
        let mut partitions = self.lock().partitions.clone();
        let ids: BTreeSet<String> = decoded.iter().map(|m| m.id.clone()).collect();
        let same = |loads: &[PartitionLoad]| {
            loads.len() == partitions.len()
                && loads.iter().zip(&partitions).all(|(a, b)| a.id == b.id)
        };
        let frozen = match &self.lock().frozen {
            Some((members, loads)) if *members == ids && same(loads) => Some(loads.clone()),
            _ => None,
        };
        match frozen {
            Some(loads) => partitions = loads,
            None => {
                self.measure(&mut partitions, decoded);
                quantize(&mut partitions);
                self.lock().frozen = Some((ids, partitions.clone()));
            }
        }
        partitions
    }

    /// Sets each partition's load from its owner's measurement, else its last known load,
    /// else the mean of the measured ones (control jobs left as they are).
    fn measure(&self, partitions: &mut [PartitionLoad], decoded: &[Member]) {
        // The owners' measurements replace the leader's idle guesses.
        let measured: std::collections::BTreeMap<&PartitionId, &PartitionLoad> = decoded
            .iter()
            .flat_map(|m| m.meta.loads.iter().map(|l| (&l.id, l)))
            .collect();
        // A partition nobody measured (its owner left) keeps its last known load.
        let known: std::collections::BTreeMap<PartitionId, PartitionLoad> = self
            .lock()
            .frozen
            .as_ref()
            .map(|(_, l)| l.iter().map(|l| (l.id.clone(), l.clone())).collect())
            .unwrap_or_default();
        // One nobody ever measured (new, or its owner left before reporting) weighs
        // what a measured partition weighs on average, not the idle minimum: an
        // orphan is not free to take on.
        let n = measured.len() as u64;
        let mean = (n > 0).then(|| {
            let lag: u64 = measured.values().map(|l| l.lag_bytes).sum();
            let bps: u64 = measured.values().map(|l| l.bytes_per_sec).sum();
            (lag / n, bps / n)
        });
        for p in partitions.iter_mut().filter(|p| !p.id.is_control()) {
            let was_measured = |l: &&PartitionLoad| l.lag_bytes > 0 || l.bytes_per_sec > 0;
            let found = measured
                .get(&p.id)
                .copied()
                .or(known.get(&p.id).filter(was_measured));
            match (found, mean) {
                (Some(l), _) => {
                    p.lag_bytes = l.lag_bytes;
                    p.bytes_per_sec = l.bytes_per_sec;
                }
                (None, Some((lag, bps))) => {
                    p.lag_bytes = lag;
                    p.bytes_per_sec = bps;
                }
                (None, None) => {}
            }
        }
    }
}

/// Buckets of weight relative to the flow's median partition weight, as powers of two
/// from `2^-3` to `2^2` of it.
const BUCKETS: (i32, i32) = (-3, 2);

/// Rounds every partition's weight to a power of two of its ratio to the median (control
/// jobs left idle), within [`BUCKETS`]: measurement noise within ±40 % gives equal
/// weights, so the assignor balances by count and stays sticky; a partition twice the
/// median or more weighs more, but at most four times: a partition catching up after a
/// hand-over (its lag, transient) must not end up alone on a member with every other
/// partition on the next one, as it did with raw weights.
fn quantize(partitions: &mut [PartitionLoad]) {
    let mut weights: Vec<u64> = partitions
        .iter()
        .filter(|p| !p.id.is_control())
        .map(PartitionLoad::weight)
        .collect();
    if weights.is_empty() {
        return;
    }
    weights.sort_unstable();
    let median = weights[weights.len() / 2].max(1) as f64;
    for p in partitions.iter_mut().filter(|p| !p.id.is_control()) {
        let ratio = p.weight() as f64 / median;
        let bucket = (ratio.log2().round() as i32).clamp(BUCKETS.0, BUCKETS.1);
        p.lag_bytes = 1u64 << (bucket - BUCKETS.0);
        p.bytes_per_sec = 0;
    }
}
