//! Group membership (`strait_client::group`) against a real Tansu broker: members of one
//! group with protocol type `strait`, the leader's assignment reaching every member,
//! rebalances on leave, static membership across a restart (the restarted member gets its
//! partitions back in the same generation), and the self-fence of a member cut off from the
//! coordinator. Tansu's coordinator answers a JoinGroup only after about half the session
//! timeout, so these tests use a short (6 s) session; what Tansu does differently from
//! Kafka is recorded in docs/compatibility.md.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::group::{
    Assignment, GroupMember, GroupView, JoinedMember, MembershipConfig, Phase, Protocol,
};
use strait_client::{Client, ClientConfig};
use strait_testkit::BrokerOptions;
use strait_testkit::TansuBroker;

const PARTITIONS: u32 = 12;
const SESSION: Duration = Duration::from_secs(6);
/// Long enough for Tansu's slow rebalances (a join takes about half the session timeout).
const WAIT: Duration = Duration::from_secs(60);

/// A test protocol: metadata is the member's name; the leader deals partitions
/// `0..PARTITIONS` round-robin over the members sorted by member id, and encodes each
/// member's share as comma-separated numbers.
struct Deal {
    name: String,
    /// The protocol name it offers (`deal`; another one plays a member of another version).
    protocol: &'static str,
}

impl Protocol for Deal {
    fn protocols(&mut self) -> Result<Vec<(String, Bytes)>, String> {
        Ok(vec![(self.protocol.into(), Bytes::from(self.name.clone()))])
    }

    fn assign(
        &mut self,
        protocol: &str,
        _generation: i32,
        members: &[JoinedMember],
    ) -> Result<Vec<(String, Bytes)>, String> {
        if protocol != "deal" {
            return Err(format!("unknown protocol {protocol}"));
        }
        let mut ids: Vec<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
        ids.sort();
        let mut shares = vec![Vec::new(); ids.len()];
        for p in 0..PARTITIONS {
            shares[p as usize % ids.len()].push(p.to_string());
        }
        Ok(ids
            .iter()
            .zip(shares)
            .map(|(id, s)| (id.to_string(), Bytes::from(s.join(","))))
            .collect())
    }
}

fn partitions(a: &Assignment) -> BTreeSet<u32> {
    std::str::from_utf8(&a.data)
        .expect("utf-8")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a partition number"))
        .collect()
}

fn client_cfg(bootstrap: &str, name: &str) -> ClientConfig {
    ClientConfig::new([bootstrap.to_string()])
        .with_client_id(format!("member-{name}"))
        .with_request_timeout(Duration::from_secs(10))
        .with_retry_timeout(Duration::from_secs(5))
}

fn member_cfg(group: &str, instance: Option<&str>) -> MembershipConfig {
    let c = MembershipConfig::new(group, "strait")
        .with_session_timeout(SESSION)
        .with_rebalance_timeout(Duration::from_secs(10));
    match instance {
        Some(i) => c.with_instance_id(i),
        None => c,
    }
}

async fn start(bootstrap: &str, group: &str, name: &str, instance: Option<&str>) -> GroupMember {
    GroupMember::connect(
        client_cfg(bootstrap, name),
        member_cfg(group, instance),
        Deal {
            name: name.into(),
            protocol: "deal",
        },
    )
    .await
    .expect("member starts")
}

/// Waits until every member owns an assignment of one generation (later than `after`),
/// and returns it: (generation, each member's partitions).
async fn settled(members: &[&GroupMember], after: i32) -> (i32, Vec<BTreeSet<u32>>) {
    let deadline = Instant::now() + WAIT;
    loop {
        let views: Vec<GroupView> = members.iter().map(|m| m.current()).collect();
        let gens: BTreeSet<i32> = views
            .iter()
            .filter_map(|v| v.assignment.as_ref().map(|a| a.generation))
            .collect();
        if views.iter().all(|v| v.phase == Phase::Stable)
            && gens.len() == 1
            && gens.first().is_some_and(|g| *g > after)
        {
            let g = *gens.first().expect("one generation");
            let shares = views
                .iter()
                .map(|v| partitions(v.assignment.as_ref().expect("assigned")))
                .collect();
            return (g, shares);
        }
        for v in &views {
            assert!(
                !matches!(v.phase, Phase::Failed | Phase::Left),
                "a member stopped: {v:?}"
            );
        }
        assert!(
            Instant::now() < deadline,
            "the group did not settle within {WAIT:?}: {views:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every partition owned by exactly one member.
fn exactly_one_owner(shares: &[BTreeSet<u32>]) {
    let mut all = Vec::new();
    for s in shares {
        all.extend(s.iter().copied());
    }
    all.sort();
    assert_eq!(all, (0..PARTITIONS).collect::<Vec<_>>(), "{shares:?}");
}

fn broker() -> TansuBroker {
    common::broker()
}

#[tokio::test]
async fn members_share_one_strait_group_and_the_leaders_assignment_reaches_all() {
    let b = broker();
    let boot = b.bootstrap();
    let t0 = Instant::now();
    let a = start(&boot, "g-share", "a", None).await;
    let (g1, shares) = settled(&[&a], -1).await;
    eprintln!(
        "one member: generation {g1} after {:?}, {:?}",
        t0.elapsed(),
        a.current().stats
    );
    exactly_one_owner(&shares);
    assert!(a.current().assignment.expect("assigned").is_leader());
    // Tansu, like Kafka (KIP-394), hands a dynamic member its id with MEMBER_ID_REQUIRED.
    assert_eq!(a.current().stats.member_id_required, 1);

    let t1 = Instant::now();
    let bm = start(&boot, "g-share", "b", None).await;
    let (g2, shares) = settled(&[&a, &bm], g1).await;
    eprintln!(
        "two members: generation {g2} after {:?}; a {:?}; b {:?}",
        t1.elapsed(),
        a.current().stats,
        bm.current().stats
    );
    exactly_one_owner(&shares);
    assert!(shares.iter().all(|s| s.len() == 6), "{shares:?}");

    let t2 = Instant::now();
    let c = start(&boot, "g-share", "c", None).await;
    let (g3, shares) = settled(&[&a, &bm, &c], g2).await;
    eprintln!("three members: generation {g3} after {:?}", t2.elapsed());
    exactly_one_owner(&shares);
    assert!(shares.iter().all(|s| s.len() == 4), "{shares:?}");
    // Exactly one leader, and the coordinator reports the group as `strait`.
    let leaders = [&a, &bm, &c]
        .iter()
        .filter(|m| m.current().assignment.is_some_and(|x| x.is_leader()))
        .count();
    assert_eq!(leaders, 1);
    // Rebalancing kept every member's assignment until the new one came (rule 6): none
    // lost it, and none self-fenced while rejoining.
    for m in [&a, &bm, &c] {
        assert_eq!(m.current().stats.lost, 0, "{:?}", m.current());
    }
    let admin = Client::connect(client_cfg(&boot, "admin"))
        .await
        .expect("connect");
    let groups = admin.describe_groups(&["g-share"]).await.expect("describe");
    eprintln!(
        "describe: state {:?} protocol_type {:?} protocol {:?} members {}",
        groups[0].group_state.as_str(),
        groups[0].protocol_type.as_str(),
        groups[0].protocol_data.as_str(),
        groups[0].members.len()
    );
    for m in [a, bm, c] {
        m.leave().await;
    }
}

#[tokio::test]
async fn a_member_leaving_rebalances_the_rest() {
    let b = broker();
    let boot = b.bootstrap();
    let a = start(&boot, "g-leave", "a", None).await;
    let (g, _) = settled(&[&a], -1).await;
    let bm = start(&boot, "g-leave", "b", None).await;
    let (g, _) = settled(&[&a, &bm], g).await;
    let c = start(&boot, "g-leave", "c", None).await;
    let (g, _) = settled(&[&a, &bm, &c], g).await;

    let t = Instant::now();
    c.leave().await;
    let (g2, shares) = settled(&[&a, &bm], g).await;
    eprintln!("after a leave: generation {g} -> {g2} in {:?}", t.elapsed());
    exactly_one_owner(&shares);
    assert!(shares.iter().all(|s| s.len() == 6), "{shares:?}");
    for m in [a, bm] {
        m.leave().await;
    }
}

#[tokio::test]
async fn a_static_member_restarting_within_the_session_timeout() {
    let b = broker();
    let boot = b.bootstrap();
    let a = start(&boot, "g-static", "a", Some("host-a")).await;
    let (g, _) = settled(&[&a], -1).await;
    let bm = start(&boot, "g-static", "b", Some("host-b")).await;
    let (g, shares) = settled(&[&a, &bm], g).await;
    let before_a = a.current();
    let b_share = shares[1].clone();
    let b_id = bm.current().member_id;
    // a never lost its assignment when b joined: a static member's join waits about a
    // session timeout on Tansu, longer than a's fence window, and the keep-alives of
    // rule 15 carried a through.
    assert_eq!(before_a.stats.lost, 0, "{before_a:?}");
    assert!(before_a.stats.keepalives_confirmed > 0, "{before_a:?}");

    // b stops without a LeaveGroup, as a static member's restart does, and comes back with
    // the same instance id well within the session timeout: the same member, so the same
    // protocol metadata (its name; a member whose metadata changed asks for a rebalance).
    let t = Instant::now();
    bm.detach().await;
    let b2 = start(&boot, "g-static", "b", Some("host-b")).await;
    let got = b2.wait_for_assignment(None, Duration::from_secs(20)).await;
    let took = t.elapsed();
    let after_a = a.current();
    let after_b = b2.current();
    eprintln!(
        "static restart: b2 {got:?} after {took:?}, {:?}; member id {} (was {b_id}); a's \
         generation {:?} -> {:?}, assignments received {} -> {}, {:?}",
        after_b.stats,
        after_b.member_id,
        before_a.assignment.as_ref().map(|x| x.generation),
        after_a.assignment.as_ref().map(|x| x.generation),
        before_a.assignments_received,
        after_a.assignments_received,
        after_a.stats,
    );
    // The restarted member is assigned its partitions again, in the same generation (no
    // rebalance: KIP-345), without MEMBER_ID_REQUIRED. Tansu gives it its old member id
    // (Kafka a new one) and holds its JoinGroup and its SyncGroup about 3 s each, while
    // the session of that id runs from the last heartbeat of the process that stopped
    // (JoinGroup and SyncGroup do not renew it): the keep-alives sent while the SyncGroup
    // waits (rule 15), by b before it stopped and by b2, keep it alive. Without them the
    // old id was expelled meanwhile and b2 joined as a new member of a new generation.
    let got =
        got.unwrap_or_else(|e| panic!("the restarted member was not assigned: {e}; {after_b:?}"));
    assert_eq!(got.generation, g, "{after_b:?}");
    assert_eq!(partitions(&got), b_share, "{after_b:?}");
    assert_eq!(after_b.stats.member_id_required, 0);
    assert_eq!(after_b.stats.lost, 0, "{after_b:?}");
    assert!(after_b.stats.keepalives_confirmed > 0, "{after_b:?}");
    // The member that stayed keeps its generation and assignment throughout, and is not
    // even asked to rejoin.
    assert_eq!(after_a.stats.lost, 0, "{after_a:?}");
    assert_eq!(after_a.stats.joins, before_a.stats.joins, "{after_a:?}");
    assert_eq!(after_a.assignments_received, before_a.assignments_received);
    assert_eq!(
        after_a.assignment.map(|x| x.generation),
        before_a.assignment.map(|x| x.generation)
    );
    for m in [a, b2] {
        m.leave().await;
    }
}

#[tokio::test]
async fn a_member_cut_off_from_the_coordinator_self_fences_before_it_is_expelled() {
    let (b, proxy) = TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("tansu");
    let boot = proxy.bootstrap();
    // Only b's connections stall: a keeps heartbeating through the same proxy.
    proxy.exempt_client_id("member-a");
    let a = start(&boot, "g-fence", "a", None).await;
    let (g, _) = settled(&[&a], -1).await;
    let bm = start(&boot, "g-fence", "b", None).await;
    let (g, _) = settled(&[&a, &bm], g).await;
    let margin = member_cfg("g-fence", None).fence_margin;

    let t = Instant::now();
    proxy.stall();
    let mut bv = bm.view();
    let mut av = a.view();
    let fenced = tokio::time::timeout(WAIT, bv.wait_for(|v| v.assignment.is_none()))
        .await
        .expect("b gives its assignment up")
        .expect("b's task runs")
        .clone();
    let fenced_at = t.elapsed();
    assert!(
        matches!(
            fenced.error,
            Some(strait_client::group::GroupError::SelfFenced { .. })
        ),
        "{fenced:?}"
    );
    // The documented bound: ownership ends session − margin after the last answered
    // heartbeat was sent, which was before the stall (plus scheduling slack).
    assert!(
        fenced_at <= SESSION - margin + Duration::from_secs(1),
        "fenced after {fenced_at:?}"
    );
    // a gets b's partitions only in a later generation, after b gave them up.
    let moved = tokio::time::timeout(
        WAIT,
        av.wait_for(|v| {
            v.assignment
                .as_ref()
                .is_some_and(|x| x.generation > g && partitions(x).len() == PARTITIONS as usize)
        }),
    )
    .await
    .expect("the coordinator expels b and a gets everything")
    .expect("a's task runs")
    .clone();
    let moved_at = t.elapsed();
    eprintln!(
        "b self-fenced {fenced_at:?} after the stall; a owned everything in generation {} \
         {moved_at:?} after it",
        moved.assignment.map(|x| x.generation).unwrap_or(-1)
    );
    assert!(fenced_at < moved_at);
    proxy.restore();
    drop(bm);
    a.leave().await;
    drop(b);
}

#[tokio::test]
async fn a_second_process_with_the_same_instance_id_is_not_fenced_by_tansu() {
    let b = broker();
    let boot = b.bootstrap();
    let a = start(&boot, "g-twin", "a", Some("host-a")).await;
    let (g, shares) = settled(&[&a], -1).await;
    let a_id = a.current().member_id;
    // A second process with the same group.instance.id (a misconfiguration: two pods
    // with one name). Kafka (KIP-345) hands it the member's place and answers the first
    // process's next heartbeat with FENCED_INSTANCE_ID, which stops it (rule 9).
    let t = Instant::now();
    let twin = start(&boot, "g-twin", "twin", Some("host-a")).await;
    let got = twin
        .wait_for_assignment(None, WAIT)
        .await
        .expect("the twin is assigned");
    let twin_took = t.elapsed();
    assert_eq!(got.generation, g);
    assert_eq!(partitions(&got), shares[0]);
    // Tansu 0.6 gives the twin the first process's member id, and never fences the first
    // process: three session timeouts later it still heartbeats and owns the same
    // partitions, so both own them. docs/compatibility.md.
    assert_eq!(got.member_id, a_id);
    tokio::time::sleep(SESSION * 3).await;
    let first = a.current();
    eprintln!("twin assigned after {twin_took:?}; the first process then: {first:?}");
    assert_eq!(first.phase, Phase::Stable, "{first:?}");
    assert_eq!(first.assignment.map(|x| x.generation), Some(g));
    assert_eq!(first.stats.lost, 0);
    drop(twin);
    drop(a);
}

#[tokio::test]
async fn a_member_offering_no_protocol_of_the_group_is_refused() {
    // Members of two versions of a protocol (Strait's scale-out before and after
    // `strait-cooperative-v2`) must never share a group. The coordinator picks a protocol
    // every member offers; a joiner offering none of the group's is refused
    // (INCONSISTENT_GROUP_PROTOCOL), which stops it (rule 10), and the group goes on.
    let b = broker();
    let boot = b.bootstrap();
    let a = start(&boot, "g-versions", "a", None).await;
    let (g, _) = settled(&[&a], -1).await;
    let other = GroupMember::connect(
        client_cfg(&boot, "v2"),
        member_cfg("g-versions", None),
        Deal {
            name: "v2".into(),
            protocol: "deal-v2",
        },
    )
    .await
    .expect("member starts");
    let deadline = Instant::now() + WAIT;
    let view = loop {
        let v = other.current();
        if matches!(v.phase, Phase::Failed) || Instant::now() > deadline {
            break v;
        }
        assert!(
            v.assignment.is_none(),
            "the other version was assigned: {v:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("the other version's member: {view:?}");
    assert_eq!(view.phase, Phase::Failed, "{view:?}");
    let refused = view.error.as_ref().is_some_and(|e| match e {
        strait_client::group::GroupError::Refused(e) => {
            e.kafka_error()
                == Some(strait_client::protocol::ResponseError::InconsistentGroupProtocol)
        }
        _ => false,
    });
    assert!(refused, "{view:?}");
    let first = a.current();
    assert_eq!(first.phase, Phase::Stable, "{first:?}");
    assert_eq!(first.assignment.map(|x| x.generation), Some(g));
    drop(other);
    a.leave().await;
}
