//! [`StraitProtocol`](super::protocol::StraitProtocol) through strait-client's
//! `GroupMember` against a real Tansu coordinator: the cooperative two-phase hand-over seen
//! from the members. Each member runs what the engine will run: take an assignment, release
//! what it revokes, record what it still owns, rejoin. A shared ledger of who owns what
//! proves no partition ever has two owners.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strait_client::ClientConfig;
use strait_client::group::{GroupMember, MembershipConfig};
use strait_testkit::TansuBroker;

use super::codec::MemberAssignment;
use super::protocol::Worker;
use super::{PartitionId, PartitionLoad};

/// How long a member takes to flush a revoked partition before releasing it.
const FLUSH: Duration = Duration::from_millis(500);

type Ledger = Arc<Mutex<(BTreeMap<PartitionId, String>, Vec<String>)>>;

fn lock(l: &Ledger) -> std::sync::MutexGuard<'_, (BTreeMap<PartitionId, String>, Vec<String>)> {
    l.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a member named `name` and the task that acts on its assignments.
async fn member(boot: &str, name: &str, parts: &[PartitionLoad], ledger: &Ledger) -> GroupMember {
    let worker = Worker::new(format!("host-{name}"), 1);
    worker.set_partitions(parts.to_vec());
    let cfg = MembershipConfig::new("flow-g", super::PROTOCOL_TYPE)
        .with_session_timeout(Duration::from_secs(6))
        .with_rebalance_timeout(Duration::from_secs(10));
    let client = ClientConfig::new([boot.to_string()])
        .with_client_id(format!("w-{name}"))
        .with_request_timeout(Duration::from_secs(10))
        .with_retry_timeout(Duration::from_secs(5));
    let m = GroupMember::connect(client, cfg, worker.protocol())
        .await
        .expect("member starts");
    let mut view = m.view();
    let handle = m.rejoiner();
    let (ledger, name) = (ledger.clone(), name.to_string());
    tokio::spawn(async move {
        let mut owned: Vec<PartitionId> = Vec::new();
        loop {
            let v = view.borrow_and_update().clone();
            let (generation, now) = match &v.assignment {
                Some(a) => match MemberAssignment::decode(&a.data) {
                    Ok(x) => (a.generation, Some(x)),
                    Err(e) => {
                        lock(&ledger)
                            .1
                            .push(format!("{name}: undecodable assignment: {e}"));
                        (a.generation, None)
                    }
                },
                None => (-1, None),
            };
            let want = now
                .as_ref()
                .map(|x| x.partitions.clone())
                .unwrap_or_default();
            // Take what is new at once; release what is no longer ours only after a flush
            // (as the engine will: drain in-flight batches, write the state), so a new owner
            // given a partition without waiting for us would be caught here.
            {
                let mut l = lock(&ledger);
                for p in &want {
                    match l.0.get(p) {
                        Some(o) if *o != name => {
                            let msg = format!("{p} taken by {name} while {o} owns it");
                            l.1.push(msg);
                        }
                        _ => {
                            l.0.insert(p.clone(), name.clone());
                        }
                    }
                }
            }
            let release: Vec<PartitionId> = owned
                .iter()
                .filter(|p| !want.contains(p))
                .cloned()
                .collect();
            if !release.is_empty() {
                tokio::time::sleep(FLUSH).await;
                let mut l = lock(&ledger);
                for p in &release {
                    if l.0.get(p) == Some(&name) {
                        l.0.remove(p);
                    }
                }
            }
            owned = want;
            worker.set_owned(generation, owned.clone());
            if now.as_ref().is_some_and(|x| !x.revoked.is_empty()) {
                handle.rejoin();
            }
            if view.changed().await.is_err() {
                return;
            }
        }
    });
    m
}

#[tokio::test]
async fn a_moved_partition_reaches_its_new_owner_only_after_the_old_one_released_it() {
    let b = TansuBroker::start().expect("tansu (scripts/install-brokers)");
    let boot = b.bootstrap();
    let parts: Vec<PartitionLoad> = (0..6)
        .map(|p| PartitionLoad::idle(PartitionId::new("orders", p)))
        .collect();
    let ledger: Ledger = Arc::default();
    let owners = |l: &Ledger| {
        let mut per: BTreeMap<String, usize> = BTreeMap::new();
        for o in lock(l).0.values() {
            *per.entry(o.clone()).or_default() += 1;
        }
        per
    };
    let settle = |want: Vec<usize>| {
        let ledger = ledger.clone();
        async move {
            for _ in 0..1200 {
                let mut got: Vec<usize> = owners(&ledger).into_values().collect();
                got.sort();
                if got == want {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("never settled to {want:?}: {:?}", owners(&ledger));
        }
    };

    let a = member(&boot, "a", &parts, &ledger).await;
    settle(vec![6]).await;
    let ga = a.current().assignment.map(|x| x.generation).unwrap_or(-1);
    let bm = member(&boot, "b", &parts, &ledger).await;
    settle(vec![3, 3]).await;
    let problems = lock(&ledger).1.clone();
    assert!(problems.is_empty(), "{problems:#?}");
    let va = a.current();
    let generation = va.assignment.as_ref().map(|x| x.generation).unwrap_or(-1);
    // Two generations: one revoking three from a, one assigning them to b.
    assert!(generation >= ga + 2, "generation {ga} -> {generation}");
    let cm = member(&boot, "c", &parts, &ledger).await;
    settle(vec![2, 2, 2]).await;
    let problems = lock(&ledger).1.clone();
    assert!(problems.is_empty(), "{problems:#?}");
    for m in [a, bm, cm] {
        m.leave().await;
    }
}
