//! Tests of the membership machine, one per rule of [`super::membership`].

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::membership::*;
use super::types::GroupError;
use crate::error::Error;

fn cfg() -> MembershipConfig {
    MembershipConfig::new("g", "strait").with_session_timeout(Duration::from_secs(30))
}

fn code(c: i16) -> Error {
    Error::from_code(c).expect("an error code")
}

fn joined(me: &str, leader: &str, generation: i32, members: &[&str]) -> JoinAnswer {
    JoinAnswer::Joined(Joined {
        member_id: me.into(),
        generation,
        leader_id: leader.into(),
        protocol: "v1".into(),
        protocol_type: Some("strait".into()),
        members: members
            .iter()
            .map(|m| JoinedMember {
                member_id: (*m).into(),
                instance_id: None,
                metadata: Bytes::from(format!("meta-{m}")),
            })
            .collect(),
        skip_assignment: false,
    })
}

/// Drives a fresh member to Stable in generation 1 as `me` (a follower), at `t0`.
fn stable(t0: Instant) -> Membership {
    let mut m = Membership::new(cfg());
    assert!(matches!(m.next_step(t0), Step::Join(_)));
    m.on_join(t0, Ok(joined("me", "other", 1, &[])));
    assert!(matches!(m.next_step(t0), Step::Sync(_)));
    m.on_sync(t0, Ok(Bytes::from_static(b"mine")));
    assert_eq!(m.phase(), Phase::Stable);
    m
}

fn heartbeat_at(m: &mut Membership, t: Instant) -> HeartbeatCall {
    match m.next_step(t) {
        Step::Heartbeat(h) => h,
        other => panic!("expected a heartbeat at {t:?}, got {other:?}"),
    }
}

#[test]
fn join_carries_identity() {
    let mut m = Membership::new(cfg().with_instance_id("host-a"));
    let t = Instant::now();
    assert_eq!(
        m.next_step(t),
        Step::Join(JoinCall {
            member_id: String::new(),
            instance_id: Some("host-a".into()),
        })
    );
    assert_eq!(m.phase(), Phase::Joining);
    // One call at a time.
    assert_eq!(m.next_step(t), Step::AwaitAnswer);
}

#[test]
fn member_id_required() {
    let mut m = Membership::new(cfg());
    let t = Instant::now();
    m.next_step(t);
    m.on_join(t, Ok(JoinAnswer::MemberIdRequired("strait-1-abc".into())));
    assert_eq!(m.member_id(), "strait-1-abc");
    assert_eq!(m.stats().member_id_required, 1);
    // At once, no backoff, with the id.
    assert_eq!(
        m.next_step(t),
        Step::Join(JoinCall {
            member_id: "strait-1-abc".into(),
            instance_id: None,
        })
    );
    // An empty id is a protocol violation.
    m.on_join(t, Ok(JoinAnswer::MemberIdRequired(String::new())));
    assert_eq!(m.phase(), Phase::Failed);
    assert!(matches!(m.last_error(), Some(GroupError::Protocol(_))));
}

#[test]
fn the_leader_assigns() {
    let t = Instant::now();
    let mut leader = Membership::new(cfg());
    leader.next_step(t);
    leader.on_join(t, Ok(joined("a", "a", 3, &["a", "b"])));
    match leader.next_step(t) {
        Step::Sync(s) => {
            assert_eq!(s.generation, 3);
            let members = s.leader_of.expect("the leader sees the members");
            assert_eq!(members.len(), 2);
            assert_eq!(members[1].metadata, Bytes::from("meta-b"));
        }
        other => panic!("{other:?}"),
    }
    // KIP-814: a static leader rejoining a stable group does not assign again.
    let mut rejoined = Membership::new(cfg().with_instance_id("host-a"));
    rejoined.next_step(t);
    let mut j = joined("a", "a", 3, &["a", "b"]);
    if let JoinAnswer::Joined(x) = &mut j {
        x.skip_assignment = true;
    }
    rejoined.on_join(t, Ok(j));
    assert!(matches!(rejoined.next_step(t), Step::Sync(s) if s.leader_of.is_none()));
    let mut follower = Membership::new(cfg());
    follower.next_step(t);
    follower.on_join(t, Ok(joined("b", "a", 3, &[])));
    match follower.next_step(t) {
        Step::Sync(s) => assert_eq!(s.leader_of, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sync_makes_stable() {
    let t = Instant::now();
    let m = stable(t);
    let a = m.assignment().expect("assigned");
    assert_eq!(a.generation, 1);
    assert_eq!(a.data, Bytes::from_static(b"mine"));
    assert!(!a.is_leader());
    assert_eq!(m.fence_deadline(), Some(t + Duration::from_secs(20)));
}

#[test]
fn heartbeat_on_interval() {
    let t = Instant::now();
    let mut m = stable(t);
    let interval = m.config().heartbeat_interval;
    assert_eq!(m.next_step(t), Step::Wait(t + interval));
    let h = heartbeat_at(&mut m, t + interval);
    assert_eq!((h.generation, h.member_id.as_str()), (1, "me"));
    m.on_heartbeat(t + interval, Ok(()));
    // The next one is an interval after this one was sent; ownership extends from its send time.
    assert_eq!(m.next_step(t + interval), Step::Wait(t + interval * 2));
    assert_eq!(
        m.fence_deadline(),
        Some(t + interval + Duration::from_secs(20))
    );
}

#[test]
fn rebalance_keeps_the_assignment() {
    let t = Instant::now();
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(27)));
    assert_eq!(m.phase(), Phase::Rebalancing);
    assert_eq!(m.assignment().map(|a| a.generation), Some(1));
    // The answer confirmed membership: ownership extends from t1.
    assert_eq!(m.fence_deadline(), Some(t1 + Duration::from_secs(20)));
    assert!(matches!(m.next_step(t1), Step::Join(j) if j.member_id == "me"));
    m.on_join(t1, Ok(joined("me", "other", 2, &[])));
    assert!(matches!(m.next_step(t1), Step::Sync(s) if s.generation == 2));
    // Still the old generation's assignment until the sync answers.
    assert_eq!(m.assignment().map(|a| a.generation), Some(1));
    m.on_sync(t1, Ok(Bytes::from_static(b"new")));
    assert_eq!(m.assignment().map(|a| a.generation), Some(2));
    assert_eq!(m.phase(), Phase::Stable);
}

#[test]
fn illegal_generation_loses_the_assignment() {
    let t = Instant::now();
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(22)));
    assert!(m.assignment().is_none());
    assert_eq!(m.stats().lost, 1);
    assert!(matches!(
        m.last_error(),
        Some(GroupError::IllegalGeneration)
    ));
    assert!(matches!(m.next_step(t1), Step::Join(j) if j.member_id == "me"));
}

#[test]
fn unknown_member_loses_the_assignment_and_the_id() {
    let t = Instant::now();
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(25)));
    assert!(m.assignment().is_none());
    assert!(
        matches!(m.last_error(), Some(GroupError::UnknownMember { member_id }) if member_id == "me")
    );
    assert!(matches!(m.next_step(t1), Step::Join(j) if j.member_id.is_empty()));
    // The same in a sync answer.
    m.on_join(t1, Ok(joined("me2", "other", 5, &[])));
    m.next_step(t1);
    m.on_sync(t1, Err(code(25)));
    assert_eq!(m.member_id(), "");
    assert_eq!(m.phase(), Phase::Joining);
}

#[test]
fn fenced_instance_is_fatal() {
    let t = Instant::now();
    let mut m = Membership::new(cfg().with_instance_id("host-a"));
    m.next_step(t);
    m.on_join(t, Ok(joined("me", "other", 1, &[])));
    m.next_step(t);
    m.on_sync(t, Ok(Bytes::new()));
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(82)));
    assert_eq!(m.phase(), Phase::Failed);
    assert!(m.assignment().is_none());
    let e = m.last_error().expect("error");
    assert!(e.is_fatal());
    assert!(e.to_string().contains("host-a"), "{e}");
    assert_eq!(m.next_step(t1), Step::Done);
}

#[test]
fn refusals_are_fatal() {
    for c in [23, 26, 30, 81] {
        let t = Instant::now();
        let mut m = Membership::new(cfg());
        m.next_step(t);
        m.on_join(t, Err(code(c)));
        assert_eq!(m.phase(), Phase::Failed, "code {c}");
        assert!(
            matches!(m.last_error(), Some(GroupError::Refused(e)) if e.kafka_code() == Some(c))
        );
    }
    // A coordinator speaking another protocol type.
    let t = Instant::now();
    let mut m = Membership::new(cfg());
    m.next_step(t);
    let mut j = joined("me", "me", 1, &["me"]);
    if let JoinAnswer::Joined(x) = &mut j {
        x.protocol_type = Some("consumer".into());
    }
    m.on_join(t, Ok(j));
    assert!(matches!(m.last_error(), Some(GroupError::Protocol(_))));
    // The leader's assignor failing.
    let mut m = Membership::new(cfg());
    m.next_step(t);
    m.on_join(t, Ok(joined("me", "me", 1, &["me"])));
    m.next_step(t);
    m.on_protocol_failed("no partitions".into());
    assert_eq!(m.phase(), Phase::Failed);
    assert!(matches!(m.last_error(), Some(GroupError::Assignor(_))));
}

#[test]
fn retriable_errors_back_off() {
    let t = Instant::now();
    let mut m = Membership::new(cfg());
    m.next_step(t);
    m.on_join(t, Err(Error::new(crate::error::ErrorKind::Timeout)));
    assert_eq!(m.phase(), Phase::Joining);
    let Step::Wait(at) = m.next_step(t) else {
        panic!("expected a backoff");
    };
    assert!(at > t && at <= t + m.config().backoff.initial);
    assert!(matches!(m.next_step(at), Step::Join(_)));
    // COORDINATOR_LOAD_IN_PROGRESS on a stable member's heartbeat: retried, still owning.
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(14)));
    assert_eq!(m.phase(), Phase::Stable);
    assert!(m.assignment().is_some());
    assert!(matches!(m.next_step(t1), Step::Wait(_)));
    // REBALANCE_IN_PROGRESS answering a sync: rejoin, but after the backoff, growing while
    // it repeats, so an instant answer cannot make us spin.
    let mut m = Membership::new(cfg());
    let mut now = t;
    let mut waits = Vec::new();
    for _ in 0..4 {
        assert!(matches!(m.next_step(now), Step::Join(_)));
        m.on_join(now, Ok(joined("me", "other", 1, &[])));
        assert!(matches!(m.next_step(now), Step::Sync(_)));
        m.on_sync(now, Err(code(27)));
        let Step::Wait(at) = m.next_step(now) else {
            panic!("expected a backoff after REBALANCE_IN_PROGRESS on a sync");
        };
        waits.push(at - now);
        now = at;
    }
    assert!(waits[3] > m.config().backoff.initial, "{waits:?}");
}

#[test]
fn self_fence_before_expulsion() {
    let t = Instant::now();
    let mut m = stable(t);
    let deadline = m.fence_deadline().expect("owning");
    assert_eq!(
        deadline,
        t + Duration::from_secs(30) - Duration::from_secs(10)
    );
    // Heartbeats keep failing (network) and one hangs: the wait never passes the deadline.
    let mut now = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, now);
    m.on_heartbeat(
        now,
        Err(Error::new(crate::error::ErrorKind::ConnectionClosed)),
    );
    assert!(matches!(m.next_step(now), Step::Wait(w) if w <= deadline));
    now += Duration::from_secs(5);
    heartbeat_at(&mut m, now);
    assert_eq!(
        m.next_step(deadline - Duration::from_millis(1)),
        Step::AwaitAnswer
    );
    assert!(m.assignment().is_some());
    // At the deadline the assignment goes, even with the heartbeat still in flight.
    assert!(m.tick(deadline));
    assert!(m.assignment().is_none());
    assert!(matches!(
        m.last_error(),
        Some(GroupError::SelfFenced { silent_for }) if *silent_for == Duration::from_secs(20)
    ));
    // A late answer does not bring it back; the member rejoins with its id.
    m.on_heartbeat(deadline, Ok(()));
    assert!(m.assignment().is_none());
    assert!(matches!(m.next_step(deadline), Step::Join(j) if j.member_id == "me"));
}

#[test]
fn leave_drops_first() {
    let t = Instant::now();
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.leave();
    assert!(m.assignment().is_none());
    assert_eq!(m.phase(), Phase::Leaving);
    // The abandoned heartbeat's answer is ignored.
    m.on_heartbeat(t1, Err(code(27)));
    assert_eq!(m.phase(), Phase::Leaving);
    assert_eq!(
        m.next_step(t1),
        Step::Leave(LeaveCall {
            member_id: "me".into(),
            instance_id: None,
        })
    );
    m.on_leave(t1, Err(Error::new(crate::error::ErrorKind::Timeout)));
    assert_eq!(m.phase(), Phase::Left);
    assert_eq!(m.next_step(t1), Step::Done);
    // Never joined: no call.
    let mut m = Membership::new(cfg());
    m.leave();
    assert_eq!(m.next_step(t), Step::Done);
    assert_eq!(m.phase(), Phase::Left);
}

#[test]
fn rejoin_on_request() {
    let t = Instant::now();
    let mut m = stable(t);
    m.request_rejoin();
    assert_eq!(m.phase(), Phase::Rebalancing);
    assert!(m.assignment().is_some());
    assert!(matches!(m.next_step(t), Step::Join(_)));
    // Requested while a heartbeat is in flight: the join follows its answer.
    let mut m = stable(t);
    let t1 = t + m.config().heartbeat_interval;
    heartbeat_at(&mut m, t1);
    m.request_rejoin();
    assert_eq!(m.next_step(t1), Step::AwaitAnswer);
    m.on_heartbeat(t1, Ok(()));
    assert!(matches!(m.next_step(t1), Step::Join(_)));
}

#[test]
fn config_validation_names_the_problem() {
    assert!(cfg().validate().is_ok());
    let mut c = cfg();
    c.fence_margin = c.session_timeout;
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("fence margin")
    );
    let mut c = cfg();
    c.heartbeat_interval = c.session_timeout;
    assert!(c.validate().unwrap_err().to_string().contains("heartbeat"));
    assert!(MembershipConfig::new("", "strait").validate().is_err());
    assert!(cfg().with_instance_id("").validate().is_err());
}

#[test]
fn keepalive_while_rejoining() {
    let t = Instant::now();
    let mut m = stable(t);
    let interval = m.config().heartbeat_interval;
    // Stable: no keep-alive (the ordinary heartbeat does the job).
    assert_eq!(m.keepalive_at(), None);
    let t1 = t + interval;
    heartbeat_at(&mut m, t1);
    m.on_heartbeat(t1, Err(code(27)));
    assert!(matches!(m.next_step(t1), Step::Join(_)));
    // The join waits; a keep-alive with the old generation is due an interval later.
    assert_eq!(m.keepalive_at(), Some(t1 + interval));
    assert_eq!(m.keepalive(t1), None);
    let t2 = t1 + interval;
    let k = m.keepalive(t2).expect("due");
    assert_eq!((k.generation, k.member_id.as_str()), (1, "me"));
    assert_eq!(m.keepalive_at(), None, "one keep-alive at a time");
    // REBALANCE_IN_PROGRESS confirms: ownership extends from t2.
    m.on_keepalive(t2, Err(code(27)));
    assert_eq!(m.fence_deadline(), Some(t2 + Duration::from_secs(20)));
    assert_eq!(m.stats().keepalives_confirmed, 1);
    // ILLEGAL_GENERATION (the join completed meanwhile) and network errors are ignored.
    let t3 = t2 + interval;
    m.keepalive(t3).expect("due");
    m.on_keepalive(t3, Err(code(22)));
    assert!(m.assignment().is_some());
    assert_eq!(m.fence_deadline(), Some(t2 + Duration::from_secs(20)));
    // The join's answer abandons a keep-alive still out.
    let t4 = t3 + interval;
    m.keepalive(t4).expect("due");
    m.on_join(t4, Ok(joined("me", "other", 2, &[])));
    assert!(matches!(m.next_step(t4), Step::Sync(_)));
    assert_eq!(m.keepalive_at(), Some(t4 + interval));
    // While the SyncGroup waits, the keep-alive carries the generation joined.
    let t5 = t4 + interval;
    let k = m.keepalive(t5).expect("due");
    assert_eq!((k.generation, k.member_id.as_str()), (2, "me"));
    // UNKNOWN_MEMBER_ID drops the assignment, and no keep-alive follows until the sync
    // answers.
    m.on_keepalive(t5, Err(code(25)));
    assert!(m.assignment().is_none());
    assert_eq!(m.keepalive_at(), None);
    // A member that owns nothing sends none while its JoinGroup waits (it has no session
    // yet, or gave it up)...
    let mut fresh = Membership::new(cfg().with_instance_id("host-a"));
    assert!(matches!(fresh.next_step(t), Step::Join(_)));
    assert_eq!(fresh.keepalive_at(), None);
    // ...and does once joined, while its SyncGroup waits: a restarted static member's
    // session counts from the last heartbeat of the process before it.
    fresh.on_join(t, Ok(joined("host-a-1", "other", 7, &[])));
    assert!(matches!(fresh.next_step(t), Step::Sync(_)));
    assert_eq!(fresh.keepalive_at(), Some(t + interval));
    let k = fresh.keepalive(t + interval).expect("due");
    assert_eq!(
        (k.generation, k.member_id.as_str(), k.instance_id.as_deref()),
        (7, "host-a-1", Some("host-a"))
    );
    fresh.on_keepalive(t + interval, Ok(()));
    assert_eq!(fresh.stats().keepalives_confirmed, 1);
    assert_eq!(fresh.keepalive_at(), Some(t + interval * 2));
    fresh.on_sync(t + interval * 2, Ok(Bytes::from_static(b"mine")));
    assert_eq!(fresh.phase(), Phase::Stable);
    assert_eq!(fresh.keepalive_at(), None, "stable: the ordinary heartbeat");
}
