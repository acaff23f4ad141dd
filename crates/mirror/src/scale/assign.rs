//! The leader's assignor: which worker replicates which source partition. Pure.
//!
//! Input: the members with their [`MemberMetadata`] (capacity, and what each still owns),
//! and the flow's partitions with their load. Output: a [`Plan`] with each member's
//! [`MemberAssignment`] for this generation and the moves still in progress. The rules:
//!
//! 1. **exactly one owner**: every partition has exactly one *target* owner, and at most one
//!    member owns it in this generation.
//! 2. **balanced by weight**: a partition weighs its [`PartitionLoad::weight`] (lag bytes
//!    plus a minute of throughput, at least 1); with loads normalised by capacity, the
//!    targets end with `max − min ≤ heaviest partition / smallest capacity`: partitions move
//!    from the most to the least loaded member while a move strictly lowers the larger of
//!    the two.
//! 3. **sticky**: a partition stays with the live member that owns it unless rule 2 needs it
//!    elsewhere; an assignment that is already balanced moves nothing.
//! 4. **cooperative, two phases** (the KIP-429 idea): a partition whose owner is alive and
//!    must change is only *revoked* in this generation (its old owner releases it and
//!    rejoins); it is assigned to its new owner in a later generation, when no member claims
//!    it any more. Only partitions nobody owns (new partitions, or a departed member's) are
//!    assigned at once.
//! 5. **contested claims**: if two members claim one partition, the claim of the higher
//!    generation wins; on a tie neither keeps it (both release it, and it is assigned in a
//!    later generation).
//!
//! Everything is deterministic (ties break by member id, then partition), so any member
//! elected leader computes the same plan from the same input.

use std::collections::{BTreeMap, BTreeSet};

use super::codec::{MemberAssignment, MemberMetadata};
use super::{PartitionId, PartitionLoad};

/// Seconds of throughput a partition's weight counts (rule 2).
pub const THROUGHPUT_WINDOW_SECS: u64 = 60;

/// A member as the leader sees it in the JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Member id.
    pub id: String,
    /// Its decoded metadata.
    pub meta: MemberMetadata,
}

impl PartitionLoad {
    /// Lag plus [`THROUGHPUT_WINDOW_SECS`] of throughput, at least 1 (so idle partitions
    /// are spread by count).
    pub fn weight(&self) -> u64 {
        self.lag_bytes
            .saturating_add(self.bytes_per_sec.saturating_mul(THROUGHPUT_WINDOW_SECS))
            .max(1)
    }
}

/// A partition on its way from one member to another (rule 4).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Move {
    /// The partition.
    pub partition: PartitionId,
    /// The member releasing it in this generation.
    pub from: String,
    /// The member meant to get it once released.
    pub to: String,
}

/// The leader's answer for one generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Each member's assignment for this generation (every member is present).
    pub assignments: BTreeMap<String, MemberAssignment>,
    /// Partitions being revoked for another member (assigned in a later generation).
    pub moves: Vec<Move>,
    /// Partitions claimed by two members with the same generation (rule 5): revoked from
    /// both, assigned later.
    pub contested: Vec<PartitionId>,
    /// Where each partition is meant to end up (the balanced target of rule 2).
    pub target: BTreeMap<PartitionId, String>,
}

/// Who owns what, from the members' claims (rule 5). Returns the owner of every claimed
/// partition and the partitions contested by a tie.
pub fn claimed_owners<'a>(
    members: impl IntoIterator<Item = &'a Member>,
) -> (BTreeMap<PartitionId, String>, BTreeSet<PartitionId>) {
    let mut best: BTreeMap<PartitionId, (i32, Option<String>)> = BTreeMap::new();
    for m in members {
        for p in &m.meta.owned {
            let g = m.meta.generation;
            match best.get_mut(p) {
                None => {
                    best.insert(p.clone(), (g, Some(m.id.clone())));
                }
                Some((bg, owner)) => {
                    if g > *bg {
                        *bg = g;
                        *owner = Some(m.id.clone());
                    } else if g == *bg && owner.as_deref() != Some(m.id.as_str()) {
                        *owner = None;
                    }
                }
            }
        }
    }
    let mut owners = BTreeMap::new();
    let mut contested = BTreeSet::new();
    for (p, (_, owner)) in best {
        match owner {
            Some(o) => {
                owners.insert(p, o);
            }
            None => {
                contested.insert(p);
            }
        }
    }
    (owners, contested)
}

struct Load {
    id: String,
    capacity: u128,
    weight: u128,
    /// Target partitions with their weights.
    parts: BTreeSet<(u64, PartitionId)>,
}

impl Load {
    /// True when `self`'s normalised load is below `other`'s (ties: fewer partitions, then
    /// member id).
    fn lighter(&self, other: &Load) -> bool {
        let a = self.weight * other.capacity;
        let b = other.weight * self.capacity;
        (a, self.parts.len(), &self.id) < (b, other.parts.len(), &other.id)
    }
}

/// Computes the plan (rules 1–5). `partitions` are the flow's partitions now (duplicates
/// are ignored); a claimed partition that is no longer listed is revoked. With no members
/// the plan is empty.
pub fn assign(members: &[Member], partitions: &[PartitionLoad]) -> Plan {
    let mut members: Vec<&Member> = members.iter().collect();
    members.sort_by(|a, b| a.id.cmp(&b.id));
    members.dedup_by(|a, b| a.id == b.id);
    if members.is_empty() {
        return Plan::default();
    }
    let (owners, contested) = claimed_owners(members.iter().copied());
    let mut loads: Vec<Load> = members
        .iter()
        .map(|m| Load {
            id: m.id.clone(),
            capacity: u128::from(m.meta.capacity.max(1)),
            weight: 0,
            parts: BTreeSet::new(),
        })
        .collect();
    let index: BTreeMap<&str, usize> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id.as_str(), i))
        .collect();
    let (orphans, held) = keep_claims(&mut loads, partitions, &owners, &contested, &index);
    let fresh = place_orphans(&mut loads, orphans);
    balance(&mut loads, partitions.len());
    let mut plan = Plan {
        contested: held,
        ..Plan::default()
    };
    plan_targets(&mut plan, &loads, &members, &owners, &index, &fresh);
    record_revoked(&mut plan, &members);
    plan
}

/// Gives each live owner its claimed partitions (rule 3). Returns the partitions nobody
/// live owns (with their weights) and the contested ones held back (rule 5).
fn keep_claims(
    loads: &mut [Load],
    partitions: &[PartitionLoad],
    owners: &BTreeMap<PartitionId, String>,
    contested: &BTreeSet<PartitionId>,
    index: &BTreeMap<&str, usize>,
) -> (Vec<(u64, PartitionId)>, Vec<PartitionId>) {
    let mut seen = BTreeSet::new();
    let mut orphans = Vec::new();
    let mut held = Vec::new();
    for p in partitions {
        if !seen.insert(p.id.clone()) {
            continue;
        }
        let w = p.weight();
        if contested.contains(&p.id) {
            held.push(p.id.clone());
        } else if let Some(&i) = owners.get(&p.id).and_then(|o| index.get(o.as_str())) {
            loads[i].weight += u128::from(w);
            loads[i].parts.insert((w, p.id.clone()));
        } else {
            orphans.push((w, p.id.clone()));
        }
    }
    (orphans, held)
}

/// Places orphans, heaviest first, each on the member it leaves lightest. Returns them.
fn place_orphans(
    loads: &mut [Load],
    mut orphans: Vec<(u64, PartitionId)>,
) -> BTreeSet<PartitionId> {
    orphans.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut fresh: BTreeSet<PartitionId> = BTreeSet::new();
    for (w, p) in orphans {
        let i = lightest_after(loads, w);
        loads[i].weight += u128::from(w);
        loads[i].parts.insert((w, p.clone()));
        fresh.insert(p);
    }
    fresh
}

/// Rule 2: moves partitions from the heaviest to the lightest member while a move strictly
/// helps. `partitions` (the count listed) bounds the number of moves.
fn balance(loads: &mut [Load], partitions: usize) {
    // Each move lowers the sorted vector of normalised loads, so this ends; the cap is a
    // guard.
    let cap = partitions.saturating_mul(loads.len()).saturating_add(1);
    for _ in 0..cap {
        let (hi, lo) = extremes(loads);
        if hi == lo {
            break;
        }
        let (lw, lc, hw, hc) = (
            loads[lo].weight,
            loads[lo].capacity,
            loads[hi].weight,
            loads[hi].capacity,
        );
        // The heaviest partition p of `hi` with (lw + w) / lc < hw / hc.
        let pick = loads[hi]
            .parts
            .iter()
            .rev()
            .find(|(w, _)| (lw + u128::from(*w)) * hc < hw * lc)
            .cloned();
        let Some((w, p)) = pick else {
            break;
        };
        loads[hi].parts.remove(&(w, p.clone()));
        loads[hi].weight -= u128::from(w);
        loads[lo].parts.insert((w, p));
        loads[lo].weight += u128::from(w);
    }
}

/// Fills the plan's targets, and per target assigns it now (kept, or nobody's: rule 4) or
/// records a move from its live owner.
fn plan_targets(
    plan: &mut Plan,
    loads: &[Load],
    members: &[&Member],
    owners: &BTreeMap<PartitionId, String>,
    index: &BTreeMap<&str, usize>,
    fresh: &BTreeSet<PartitionId>,
) {
    for l in loads {
        for (_, p) in &l.parts {
            plan.target.insert(p.clone(), l.id.clone());
        }
    }
    for m in members {
        plan.assignments
            .insert(m.id.clone(), MemberAssignment::default());
    }
    for (p, to) in &plan.target {
        let owner = owners.get(p).filter(|o| index.contains_key(o.as_str()));
        match owner {
            Some(from) if from != to => plan.moves.push(Move {
                partition: p.clone(),
                from: from.clone(),
                to: to.clone(),
            }),
            // Kept, or nobody's (rule 4: assigned at once).
            _ => {
                debug_assert!(owner.is_some() || fresh.contains(p));
                if let Some(a) = plan.assignments.get_mut(to) {
                    a.partitions.push(p.clone());
                }
            }
        }
    }
}

/// Revokes from each member whatever it claims and does not get now.
fn record_revoked(plan: &mut Plan, members: &[&Member]) {
    for m in members {
        let Some(a) = plan.assignments.get_mut(&m.id) else {
            continue;
        };
        let now: BTreeSet<&PartitionId> = a.partitions.iter().collect();
        let mut revoked: Vec<PartitionId> = m
            .meta
            .owned
            .iter()
            .filter(|p| !now.contains(p))
            .cloned()
            .collect();
        revoked.sort();
        revoked.dedup();
        a.revoked = revoked;
    }
}

/// The member whose normalised load stays lowest after adding `w`.
fn lightest_after(loads: &[Load], w: u64) -> usize {
    let w = u128::from(w);
    let mut best = 0;
    for i in 1..loads.len() {
        let (a, b) = (&loads[i], &loads[best]);
        let x = (a.weight + w) * b.capacity;
        let y = (b.weight + w) * a.capacity;
        if (x, a.parts.len(), &a.id) < (y, b.parts.len(), &b.id) {
            best = i;
        }
    }
    best
}

/// The heaviest and the lightest member (by normalised load).
fn extremes(loads: &[Load]) -> (usize, usize) {
    let (mut hi, mut lo) = (0, 0);
    for i in 1..loads.len() {
        if loads[hi].lighter(&loads[i]) {
            hi = i;
        }
        if loads[i].lighter(&loads[lo]) {
            lo = i;
        }
    }
    (hi, lo)
}
