//! Tests of the codec and of the assignor's rules (named after them), with property tests.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::assign::{Member, Plan, assign};
use super::codec::{CodecError, MemberAssignment, MemberMetadata, VERSION};
use super::{PartitionId, PartitionLoad};

fn pid(t: &str, p: i32) -> PartitionId {
    PartitionId::new(t, p)
}

fn member(id: &str, capacity: u32, generation: i32, owned: &[PartitionId]) -> Member {
    Member {
        id: id.into(),
        meta: MemberMetadata {
            worker_version: "0.1.0".into(),
            host: format!("host-{id}"),
            capacity,
            generation,
            owned: owned.to_vec(),
            loads: Vec::new(),
        },
    }
}

fn loads(n: i32) -> Vec<PartitionLoad> {
    (0..n).map(|p| PartitionLoad::idle(pid("t", p))).collect()
}

// ---- codec -------------------------------------------------------------------------------

#[test]
fn metadata_and_assignment_round_trip() {
    let m = MemberMetadata {
        worker_version: "0.1.0".into(),
        host: "node-7".into(),
        capacity: 3,
        generation: 12,
        owned: vec![pid("a", 0), pid("a", 2), pid("b", 1)],
        loads: vec![PartitionLoad {
            id: pid("a", 2),
            lag_bytes: 1 << 40,
            bytes_per_sec: 7,
        }],
    };
    assert_eq!(MemberMetadata::decode(&m.encode().unwrap()).unwrap(), m);
    let a = MemberAssignment {
        partitions: vec![pid("a", 1)],
        revoked: vec![pid("a", 0), pid("b", 4)],
    };
    assert_eq!(MemberAssignment::decode(&a.encode().unwrap()).unwrap(), a);
    // The coordinator's empty assignment for a member the leader left out.
    assert_eq!(
        MemberAssignment::decode(&[]).unwrap(),
        MemberAssignment::default()
    );
}

#[test]
fn unknown_versions_and_damage_are_refused() {
    let mut bytes = MemberMetadata::new("h", 1).encode().unwrap();
    // Flip a body byte: the checksum catches it.
    bytes[3] ^= 0xFF;
    assert!(matches!(
        MemberMetadata::decode(&bytes),
        Err(CodecError::Checksum { .. })
    ));
    // A later version, correctly checksummed, is refused by name.
    let mut v2 = MemberMetadata::new("h", 1).encode().unwrap();
    v2[0] = VERSION + 1;
    let n = v2.len() - 4;
    let crc = crc32c::crc32c(&v2[..n]);
    v2[n..].copy_from_slice(&crc.to_le_bytes());
    let e = MemberMetadata::decode(&v2).unwrap_err();
    assert_eq!(e, CodecError::UnknownVersion(VERSION + 1));
    assert!(e.to_string().contains("upgrade"), "{e}");
    // Metadata is not an assignment.
    let meta = MemberMetadata::new("h", 1).encode().unwrap();
    assert!(matches!(
        MemberAssignment::decode(&meta),
        Err(CodecError::WrongKind { .. })
    ));
    // Capacity 0 is refused both ways.
    assert!(MemberMetadata::new("h", 0).encode().is_err());
}

proptest! {
    #[test]
    fn decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = MemberMetadata::decode(&bytes);
        let _ = MemberAssignment::decode(&bytes);
    }

    #[test]
    fn assignments_round_trip(parts in proptest::collection::btree_set((0u8..4, 0i32..50), 0..40)) {
        let ps: Vec<PartitionId> = parts.iter().map(|(t, p)| pid(&format!("t{t}"), *p)).collect();
        let a = MemberAssignment { partitions: ps.clone(), revoked: ps };
        prop_assert_eq!(MemberAssignment::decode(&a.encode().unwrap()).unwrap(), a);
    }
}

// ---- assignor rules ------------------------------------------------------------------------

/// Every partition in exactly one target and at most one current assignment; the current
/// owners are the target minus the moves and the contested.
fn check_exactly_one_owner(plan: &Plan, partitions: &[PartitionLoad]) {
    let all: BTreeSet<&PartitionId> = partitions.iter().map(|p| &p.id).collect();
    let targeted: BTreeSet<&PartitionId> = plan.target.keys().collect();
    let contested: BTreeSet<&PartitionId> = plan.contested.iter().collect();
    assert_eq!(
        targeted.union(&contested).copied().collect::<BTreeSet<_>>(),
        all
    );
    assert!(targeted.is_disjoint(&contested));
    let mut owners: BTreeMap<&PartitionId, &str> = BTreeMap::new();
    for (m, a) in &plan.assignments {
        for p in &a.partitions {
            assert!(owners.insert(p, m).is_none(), "{p} owned twice");
            assert_eq!(plan.target.get(p).map(String::as_str), Some(m.as_str()));
        }
    }
    for mv in &plan.moves {
        assert!(
            !owners.contains_key(&mv.partition),
            "{} moving and owned",
            mv.partition
        );
        assert_eq!(plan.target.get(&mv.partition), Some(&mv.to));
    }
    assert_eq!(owners.len() + plan.moves.len(), plan.target.len());
}

/// Rule 2's bound on the targets: max − min of weight/capacity ≤ heaviest / smallest
/// capacity (cross-multiplied, exact).
fn check_balance(plan: &Plan, members: &[Member], partitions: &[PartitionLoad]) {
    if members.is_empty() {
        return;
    }
    let weight: BTreeMap<&PartitionId, u128> = partitions
        .iter()
        .map(|p| (&p.id, u128::from(p.weight())))
        .collect();
    let mut load: BTreeMap<&str, u128> = members.iter().map(|m| (m.id.as_str(), 0)).collect();
    for (p, m) in &plan.target {
        *load.get_mut(m.as_str()).unwrap() += weight[p];
    }
    let cap: BTreeMap<&str, u128> = members
        .iter()
        .map(|m| (m.id.as_str(), u128::from(m.meta.capacity)))
        .collect();
    let wmax = plan.target.keys().map(|p| weight[p]).max().unwrap_or(0);
    let cmin = cap.values().copied().min().unwrap();
    for (x, lx) in &load {
        for (y, ly) in &load {
            let (cx, cy) = (cap[x], cap[y]);
            // lx/cx − ly/cy ≤ wmax/cmin  ⇔  (lx·cy − ly·cx)·cmin ≤ wmax·cx·cy
            let lhs = (lx * cy).saturating_sub(ly * cx) * cmin;
            assert!(
                lhs <= wmax * cx * cy,
                "{x}={lx}/{cx} vs {y}={ly}/{cy}, wmax {wmax}"
            );
        }
    }
}

/// Rule 4: what a member gets now it already owned, or nobody alive owned.
fn check_cooperative(plan: &Plan, members: &[Member]) {
    let (owners, contested) = super::assign::claimed_owners(members);
    for (m, a) in &plan.assignments {
        for p in &a.partitions {
            assert!(!contested.contains(p));
            if let Some(o) = owners.get(p) {
                assert_eq!(o, m, "{p} handed from {o} to {m} in one generation");
            }
        }
    }
    for mv in &plan.moves {
        assert_eq!(owners.get(&mv.partition), Some(&mv.from));
        let revoked = &plan.assignments[&mv.from].revoked;
        assert!(
            revoked.contains(&mv.partition),
            "{} not revoked from {}",
            mv.partition,
            mv.from
        );
    }
}

/// The next generation's members: each claims what it got now, in `generation`.
fn released(members: &[Member], plan: &Plan, generation: i32) -> Vec<Member> {
    members
        .iter()
        .map(|m| {
            let owned = plan.assignments[&m.id].partitions.clone();
            member(
                &m.id,
                m.meta.capacity,
                if owned.is_empty() { -1 } else { generation },
                &owned,
            )
        })
        .collect()
}

#[test]
fn exactly_one_owner() {
    let parts = loads(10);
    let ms = [
        member("a", 1, -1, &[]),
        member("b", 1, -1, &[]),
        member("c", 1, -1, &[]),
    ];
    let plan = assign(&ms, &parts);
    check_exactly_one_owner(&plan, &parts);
    // Nobody owned anything: everything is assigned at once, 4/3/3.
    assert!(plan.moves.is_empty());
    let mut sizes: Vec<usize> = plan
        .assignments
        .values()
        .map(|a| a.partitions.len())
        .collect();
    sizes.sort();
    assert_eq!(sizes, [3, 3, 4]);
}

#[test]
fn balanced_by_weight() {
    // One hot partition (lag) and five idle ones: the hot one alone on one member.
    let mut parts = loads(6);
    parts[2].lag_bytes = 1_000_000;
    let ms = [member("a", 1, -1, &[]), member("b", 1, -1, &[])];
    let plan = assign(&ms, &parts);
    let hot_owner = &plan.target[&pid("t", 2)];
    let others: Vec<&PartitionId> = plan
        .target
        .iter()
        .filter(|(_, m)| *m == hot_owner)
        .map(|(p, _)| p)
        .collect();
    assert_eq!(others, [&pid("t", 2)]);
    // Capacity: a worker of capacity 2 gets twice the idle partitions.
    let ms = [member("a", 2, -1, &[]), member("b", 1, -1, &[])];
    let plan = assign(&ms, &loads(9));
    assert_eq!(plan.assignments["a"].partitions.len(), 6);
    assert_eq!(plan.assignments["b"].partitions.len(), 3);
    // Throughput counts a minute's worth.
    let p = PartitionLoad {
        id: pid("t", 0),
        lag_bytes: 10,
        bytes_per_sec: 2,
    };
    assert_eq!(p.weight(), 130);
}

#[test]
fn sticky() {
    let parts = loads(6);
    let a_owns: Vec<_> = (0..3).map(|p| pid("t", p)).collect();
    let b_owns: Vec<_> = (3..6).map(|p| pid("t", p)).collect();
    let ms = [member("a", 1, 4, &a_owns), member("b", 1, 4, &b_owns)];
    let plan = assign(&ms, &parts);
    assert!(plan.moves.is_empty());
    assert_eq!(plan.assignments["a"].partitions, a_owns);
    assert_eq!(plan.assignments["b"].partitions, b_owns);
    assert!(plan.assignments.values().all(|a| a.revoked.is_empty()));
}

#[test]
fn cooperative_two_phases() {
    // a owns all 6; b joins: 3 are revoked from a now and reach b only next generation.
    let parts = loads(6);
    let all: Vec<_> = (0..6).map(|p| pid("t", p)).collect();
    let ms = vec![member("a", 1, 4, &all), member("b", 1, -1, &[])];
    let plan = assign(&ms, &parts);
    check_cooperative(&plan, &ms);
    assert_eq!(plan.moves.len(), 3);
    assert!(plan.assignments["b"].partitions.is_empty());
    assert_eq!(plan.assignments["a"].partitions.len(), 3);
    assert_eq!(plan.assignments["a"].revoked.len(), 3);
    // a released them and rejoined: b gets them, nothing else moves.
    let next = released(&ms, &plan, 5);
    let plan2 = assign(&next, &parts);
    check_cooperative(&plan2, &next);
    assert!(plan2.moves.is_empty());
    assert_eq!(plan2.assignments["b"].partitions.len(), 3);
    assert_eq!(
        plan2.assignments["a"].partitions,
        plan.assignments["a"].partitions
    );
}

#[test]
fn a_departed_members_partitions_are_assigned_at_once() {
    let parts = loads(4);
    let ms = [member("a", 1, 4, &[pid("t", 0), pid("t", 1)])];
    // b (owning 2 and 3) left: nobody alive owns them.
    let plan = assign(&ms, &parts);
    assert!(plan.moves.is_empty());
    assert_eq!(plan.assignments["a"].partitions.len(), 4);
}

#[test]
fn contested_claims() {
    let parts = loads(2);
    // The higher generation wins; the stale claimant releases it.
    let ms = [
        member("a", 1, 5, &[pid("t", 0)]),
        member("b", 1, 4, &[pid("t", 0)]),
    ];
    let plan = assign(&ms, &parts);
    assert!(plan.assignments["a"].partitions.contains(&pid("t", 0)));
    assert_eq!(plan.assignments["b"].revoked, [pid("t", 0)]);
    // A tie: neither keeps it.
    let ms = [
        member("a", 1, 5, &[pid("t", 0)]),
        member("b", 1, 5, &[pid("t", 0)]),
    ];
    let plan = assign(&ms, &parts);
    assert_eq!(plan.contested, [pid("t", 0)]);
    assert!(
        plan.assignments
            .values()
            .all(|a| !a.partitions.contains(&pid("t", 0)))
    );
    assert!(
        plan.assignments
            .values()
            .all(|a| a.revoked == [pid("t", 0)])
    );
    check_exactly_one_owner(&plan, &parts);
}

#[test]
fn a_deleted_partition_is_revoked() {
    let ms = [member("a", 1, 3, &[pid("gone", 0), pid("t", 0)])];
    let plan = assign(&ms, &loads(1));
    assert_eq!(plan.assignments["a"].partitions, [pid("t", 0)]);
    assert_eq!(plan.assignments["a"].revoked, [pid("gone", 0)]);
}

#[test]
fn no_members_no_plan() {
    assert_eq!(assign(&[], &loads(3)), Plan::default());
}

// ---- properties ----------------------------------------------------------------------------

/// Members `m0..mN` with capacities, claims (a random previous owner or none per partition,
/// some with stale generations), and partitions with random weights.
fn scenario() -> impl Strategy<Value = (Vec<Member>, Vec<PartitionLoad>)> {
    (1usize..6, 0usize..40).prop_flat_map(|(n, parts)| {
        (
            proptest::collection::vec(1u32..4, n),
            proptest::collection::vec((0u64..5_000, 0u64..50), parts),
            proptest::collection::vec(proptest::option::of(0usize..n), parts),
            proptest::collection::vec(3i32..6, n),
            // Departed members' claims are simply absent; a few partitions claimed twice.
            proptest::collection::vec(proptest::option::of(0usize..n), parts),
        )
            .prop_map(move |(caps, weights, owner, gens, second)| {
                let partitions: Vec<PartitionLoad> = weights
                    .iter()
                    .enumerate()
                    .map(|(i, (lag, bps))| PartitionLoad {
                        id: pid(&format!("t{}", i % 3), i as i32),
                        lag_bytes: *lag,
                        bytes_per_sec: *bps,
                    })
                    .collect();
                let mut owned = vec![Vec::new(); n];
                for (i, o) in owner.iter().enumerate() {
                    if let Some(o) = o {
                        owned[*o].push(partitions[i].id.clone());
                    }
                    if let (Some(s), true) = (second[i], i % 7 == 0) {
                        owned[s].push(partitions[i].id.clone());
                    }
                }
                let members = (0..n)
                    .map(|i| member(&format!("m{i}"), caps[i], gens[i], &owned[i]))
                    .collect();
                (members, partitions)
            })
    })
}

proptest! {
    #[test]
    fn prop_exactly_one_owner_balance_and_cooperation((ms, parts) in scenario()) {
        let plan = assign(&ms, &parts);
        check_exactly_one_owner(&plan, &parts);
        check_balance(&plan, &ms, &parts);
        check_cooperative(&plan, &ms);
        prop_assert_eq!(plan.assignments.len(), ms.len());
    }

    #[test]
    fn prop_sticky_when_balanced((ms, parts) in scenario()) {
        // Run until the moves are done: the balanced result then moves nothing.
        let mut members = ms;
        let mut generation = 10;
        for _ in 0..6 {
            let plan = assign(&members, &parts);
            members = released(&members, &plan, generation);
            generation += 1;
        }
        let plan = assign(&members, &parts);
        prop_assert!(plan.moves.is_empty(), "still moving after 6 generations: {:?}", plan.moves);
        let again = assign(&released(&members, &plan, generation), &parts);
        prop_assert!(again.moves.is_empty());
        prop_assert_eq!(&again.assignments, &plan.assignments);
        for a in plan.assignments.values() {
            prop_assert!(a.revoked.is_empty());
        }
    }

    #[test]
    fn prop_two_phase_handover_never_overlaps((ms, parts) in scenario()) {
        // Across a generation change, a partition owned now by X is owned next only by X
        // or, if X released it, by its planned new owner.
        let plan = assign(&ms, &parts);
        let next_members = released(&ms, &plan, 20);
        let next = assign(&next_members, &parts);
        check_cooperative(&next, &next_members);
        let now: BTreeMap<&PartitionId, &String> = plan
            .assignments
            .iter()
            .flat_map(|(m, a)| a.partitions.iter().map(move |p| (p, m)))
            .collect();
        for (m, a) in &next.assignments {
            for p in &a.partitions {
                if let Some(prev) = now.get(p) {
                    prop_assert_eq!(*prev, m);
                }
            }
        }
    }
}

// ---- the protocol ------------------------------------------------------------------------

#[test]
fn the_protocol_writes_the_workers_metadata_and_leaves_out_undecodable_members() {
    use bytes::Bytes;
    use strait_client::group::{JoinedMember, Protocol};

    let worker = super::protocol::Worker::new("node-1", 2);
    worker.set_owned(7, vec![pid("t", 1)]);
    worker.set_partitions(loads(4));
    let mut proto = worker.protocol();
    let protocols = proto.protocols().unwrap();
    assert_eq!(protocols.len(), 1);
    assert_eq!(protocols[0].0, super::PROTOCOL_NAME);
    let meta = MemberMetadata::decode(&protocols[0].1).unwrap();
    assert_eq!(
        (meta.host.as_str(), meta.capacity, meta.generation),
        ("node-1", 2, 7)
    );
    assert_eq!(meta.owned, [pid("t", 1)]);

    let members = [
        JoinedMember {
            member_id: "a".into(),
            instance_id: None,
            metadata: protocols[0].1.clone(),
        },
        JoinedMember {
            member_id: "b".into(),
            instance_id: None,
            metadata: Bytes::from_static(b"v9?"),
        },
    ];
    let out = proto.assign(super::PROTOCOL_NAME, 8, &members).unwrap();
    // Only a gets an assignment, and only what it owns: b (unreadable) might own the
    // other three, so nobody gets them yet. b is reported.
    assert_eq!(out.len(), 1);
    let a = MemberAssignment::decode(&out[0].1).unwrap();
    assert_eq!(a.partitions, [pid("t", 1)]);
    assert!(a.revoked.is_empty());
    let refused = worker.refused_members();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, "b");
    assert_eq!(worker.last_plan().map(|(g, _)| g), Some(8));
    // Another protocol name is refused.
    assert!(proto.assign("range", 8, &members).is_err());
}

#[test]
fn the_protocol_assigns_everything_when_every_member_is_readable() {
    use strait_client::group::{JoinedMember, Protocol};

    let worker = super::protocol::Worker::new("node-1", 1);
    worker.set_partitions(loads(4));
    let mut proto = worker.protocol();
    let meta = proto.protocols().unwrap().remove(0).1;
    let members = [
        JoinedMember {
            member_id: "a".into(),
            instance_id: None,
            metadata: meta.clone(),
        },
        JoinedMember {
            member_id: "b".into(),
            instance_id: Some("host-b".into()),
            metadata: meta,
        },
    ];
    let out = proto.assign(super::PROTOCOL_NAME, 1, &members).unwrap();
    let sizes: Vec<usize> = out
        .iter()
        .map(|(_, b)| MemberAssignment::decode(b).unwrap().partitions.len())
        .collect();
    assert_eq!(sizes, [2, 2]);
    assert!(worker.refused_members().is_empty());
}

#[test]
fn control_jobs_are_assigned_like_partitions() {
    let mut parts = loads(4);
    parts.push(PartitionLoad::idle(PartitionId::control(0)));
    assert!(PartitionId::control(0).is_control());
    assert!(!pid("t", 0).is_control());
    // Owned by a; b joins: the job stays with a or moves in two phases, never to both.
    let all: Vec<_> = parts.iter().map(|p| p.id.clone()).collect();
    let ms = vec![member("a", 1, 2, &all), member("b", 1, -1, &[])];
    let plan = assign(&ms, &parts);
    check_exactly_one_owner(&plan, &parts);
    check_cooperative(&plan, &ms);
    // It round-trips through the assignment encoding.
    let a = &plan.assignments["a"];
    assert_eq!(&MemberAssignment::decode(&a.encode().unwrap()).unwrap(), a);
}

#[test]
fn slots_are_stable_and_spread_partitions() {
    // Pinned: every member (and every version) must map a partition to the same slot.
    assert_eq!(
        super::slot_of("orders", 0, 16),
        super::slot_of("orders", 0, 16)
    );
    let mut per = [0u32; 8];
    for p in 0..800 {
        per[super::slot_of("orders", p, 8) as usize] += 1;
    }
    assert!(per.iter().all(|n| *n == 100), "{per:?}");
    assert_eq!(super::slot_of("t", 3, 1), 0);
    assert_eq!(super::slot_of("t", 3, 0), 0, "no slots count as one");
    assert!(PartitionId::slot(3).is_slot() && !PartitionId::slot(3).is_control());
}

#[test]
fn a_topics_partitions_fill_every_slot_before_any_gets_a_second() {
    // v1's CRC-32C modulo a power of two left half of 16 slots empty for 16 and 32
    // partitions: the slots of a small topic are what a group of members shares.
    for topic in ["orders", "events", "eos", "x"] {
        for slots in 1..=40u32 {
            for n in 1..=100i32 {
                let mut per = vec![0i32; slots as usize];
                for p in 0..n {
                    let s = super::slot_of(topic, p, slots);
                    assert!(s < slots);
                    per[s as usize] += 1;
                }
                let (lo, hi) = (per.iter().min().copied(), per.iter().max().copied());
                assert!(
                    hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                    "{topic}: {n} partitions in {slots} slots: {per:?}"
                );
            }
        }
    }
    // Topics start at different slots: the remainders of several spread.
    let starts: BTreeSet<u32> = ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .map(|t| super::slot_of(t, 0, 16))
        .collect();
    assert!(starts.len() >= 4, "{starts:?}");
}

/// The JoinGroup members for a protocol test: `(id, metadata)`.
fn joined(ms: &[(&str, &MemberMetadata)]) -> Vec<strait_client::group::JoinedMember> {
    ms.iter()
        .map(|(id, m)| strait_client::group::JoinedMember {
            member_id: (*id).into(),
            instance_id: None,
            metadata: bytes::Bytes::from(m.encode().unwrap()),
        })
        .collect()
}

fn sizes_of(out: &[(String, bytes::Bytes)]) -> BTreeMap<String, usize> {
    out.iter()
        .map(|(id, b)| {
            (
                id.clone(),
                MemberAssignment::decode(b).unwrap().partitions.len(),
            )
        })
        .collect()
}

#[test]
fn the_leader_balances_by_the_loads_members_measured_and_keeps_them_while_nothing_changes() {
    use strait_client::group::Protocol;

    let worker = super::protocol::Worker::new("leader", 1);
    worker.set_partitions(loads(4));
    let mut proto = worker.protocol();
    // a owns t-0 (heavy) and t-1, t-2, t-3 (light), b owns nothing yet.
    let mut a = MemberMetadata::new("host-a", 1);
    a.generation = 1;
    a.owned = (0..4).map(|p| pid("t", p)).collect();
    a.loads = (0..4)
        .map(|p| PartitionLoad {
            id: pid("t", p),
            lag_bytes: if p == 0 { 1 << 30 } else { 0 },
            bytes_per_sec: 1,
        })
        .collect();
    let b = MemberMetadata::new("host-b", 1);
    let out = proto
        .assign(super::PROTOCOL_NAME, 2, &joined(&[("a", &a), ("b", &b)]))
        .unwrap();
    let plan = worker.last_plan().unwrap().1;
    // By weight, t-0 alone outweighs the rest: it moves to b (revoked from a first), the
    // three light ones stay with a. By count it would have been two and two.
    assert_eq!(plan.target[&pid("t", 0)], "b");
    for p in 1..4 {
        assert_eq!(plan.target[&pid("t", p)], "a", "t-{p}");
    }
    assert_eq!(sizes_of(&out)["a"], 3, "t-0 is revoked from a");
    assert_eq!(
        sizes_of(&out)["b"],
        0,
        "and assigned to b only once released"
    );
    // The next generation (same members, fresh figures saying the opposite) keeps the
    // plan's loads, so the move completes instead of being re-planned.
    a.owned = (1..4).map(|p| pid("t", p)).collect();
    a.generation = 2;
    for l in &mut a.loads {
        l.lag_bytes = if l.id == pid("t", 0) { 0 } else { 1 << 30 };
    }
    let out = proto
        .assign(super::PROTOCOL_NAME, 3, &joined(&[("a", &a), ("b", &b)]))
        .unwrap();
    let again = worker.last_plan().unwrap().1;
    assert_eq!(again.target, plan.target);
    assert_eq!(
        sizes_of(&out),
        BTreeMap::from([("a".into(), 3), ("b".into(), 1)])
    );
}

#[test]
fn a_partition_nobody_measured_weighs_the_mean_of_those_measured() {
    use strait_client::group::Protocol;

    let worker = super::protocol::Worker::new("leader", 1);
    worker.set_partitions(loads(4));
    let mut proto = worker.protocol();
    // a measured t-0 and t-1; t-2 and t-3 were a departed member's, never measured.
    let mut a = MemberMetadata::new("host-a", 1);
    a.generation = 1;
    a.owned = vec![pid("t", 0), pid("t", 1)];
    a.loads = (0..2)
        .map(|p| PartitionLoad {
            id: pid("t", p),
            lag_bytes: 0,
            bytes_per_sec: 1000,
        })
        .collect();
    let b = MemberMetadata::new("host-b", 1);
    let out = proto
        .assign(super::PROTOCOL_NAME, 2, &joined(&[("a", &a), ("b", &b)]))
        .unwrap();
    // Weighed as heavy as the measured ones, the orphans go to b, two and two; weighed as
    // idle they would all have been "free" for whoever has the least.
    assert_eq!(
        sizes_of(&out),
        BTreeMap::from([("a".into(), 2), ("b".into(), 2)])
    );
}

#[test]
fn measurement_noise_does_not_move_partitions_but_a_hot_partition_weighs_more() {
    use strait_client::group::Protocol;

    let worker = super::protocol::Worker::new("leader", 1);
    worker.set_partitions(loads(6));
    let mut proto = worker.protocol();
    // a owns 0..3, b owns 3..6; throughputs differ by up to 30 % (noise).
    let owner = |name: &str, ps: std::ops::Range<i32>| {
        let mut m = MemberMetadata::new(format!("host-{name}"), 1);
        m.generation = 4;
        m.owned = ps.clone().map(|p| pid("t", p)).collect();
        m.loads = ps
            .map(|p| PartitionLoad {
                id: pid("t", p),
                lag_bytes: 0,
                bytes_per_sec: 1000 + 100 * u64::try_from(p).unwrap(),
            })
            .collect();
        m
    };
    let (a, b) = (owner("a", 0..3), owner("b", 3..6));
    proto
        .assign(super::PROTOCOL_NAME, 5, &joined(&[("a", &a), ("b", &b)]))
        .unwrap();
    assert!(
        worker.last_plan().unwrap().1.moves.is_empty(),
        "noise moves nothing"
    );
    // Ten times the others: it weighs more, and ends alone with its owner's share.
    let worker = super::protocol::Worker::new("leader", 1);
    worker.set_partitions(loads(6));
    let mut proto = worker.protocol();
    let mut hot = owner("a", 0..3);
    hot.loads[0].bytes_per_sec = 30_000;
    proto
        .assign(super::PROTOCOL_NAME, 5, &joined(&[("a", &hot), ("b", &b)]))
        .unwrap();
    let plan = worker.last_plan().unwrap().1;
    assert!(!plan.moves.is_empty(), "a hot partition re-balances");
}

#[test]
fn one_partition_catching_up_does_not_leave_every_other_partition_on_one_member() {
    use strait_client::group::Protocol;

    let worker = super::protocol::Worker::new("leader", 1);
    worker.set_partitions(loads(24));
    let mut proto = worker.protocol();
    let mut a = MemberMetadata::new("host-a", 1);
    a.generation = 3;
    a.owned = (0..24).map(|p| pid("t", p)).collect();
    a.loads = (0..24)
        .map(|p| PartitionLoad {
            id: pid("t", p),
            lag_bytes: if p == 0 { 1 << 30 } else { 0 },
            bytes_per_sec: 1000,
        })
        .collect();
    let b = MemberMetadata::new("host-b", 1);
    proto
        .assign(super::PROTOCOL_NAME, 4, &joined(&[("a", &a), ("b", &b)]))
        .unwrap();
    let plan = worker.last_plan().unwrap().1;
    let to_b = plan.target.values().filter(|m| *m == "b").count();
    // The hot one counts four times the others, not a billion times: 23 + 4 units shared
    // about evenly (b gets the hot one and nine others, or thirteen others).
    assert!((10..=14).contains(&to_b), "b is meant to get {to_b} of 24");
}
