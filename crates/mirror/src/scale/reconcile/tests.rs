use super::*;

fn p(n: i32) -> PartitionId {
    PartitionId::new("t", n)
}

fn set(ns: &[i32]) -> BTreeSet<PartitionId> {
    ns.iter().map(|n| p(*n)).collect()
}

fn wanted(ns: &[i32], control: bool, revoked: bool) -> Wanted {
    Wanted {
        generation: 3,
        partitions: set(ns),
        control,
        revoked,
    }
}

#[test]
fn rule_1_what_is_no_longer_assigned_is_released_and_still_claimed() {
    let c = reconcile(&wanted(&[0], false, true), &set(&[0, 1]), &set(&[]), false);
    assert_eq!(c.release, vec![p(1)]);
    assert!(c.acquire.is_empty());
    assert_eq!(c.claims, vec![p(0), p(1)]);
    assert!(!c.rejoin, "rejoins only once released");
}

#[test]
fn rule_2_no_assignment_releases_everything_and_the_control_jobs() {
    let c = reconcile(&Wanted::none(), &set(&[0, 1]), &set(&[]), true);
    assert_eq!(c.release, vec![p(0), p(1)]);
    assert_eq!(c.lead, Some(false));
    assert!(!c.claims.contains(&control_job()));
}

#[test]
fn rule_3_a_partition_assigned_again_while_releasing_waits_for_the_release() {
    let c = reconcile(
        &wanted(&[0, 1], false, false),
        &set(&[0, 1]),
        &set(&[1]),
        false,
    );
    assert!(c.acquire.is_empty() && c.release.is_empty());
    let c = reconcile(&wanted(&[0, 1], false, false), &set(&[0]), &set(&[]), false);
    assert_eq!(c.acquire, vec![p(1)]);
    assert_eq!(c.claims, vec![p(0), p(1)]);
}

#[test]
fn rule_4_control_jobs_follow_the_assignment() {
    let gain = reconcile(&wanted(&[], true, false), &set(&[]), &set(&[]), false);
    assert_eq!(gain.lead, Some(true));
    assert_eq!(gain.claims, vec![control_job()]);
    let keep = reconcile(&wanted(&[], true, false), &set(&[]), &set(&[]), true);
    assert_eq!(keep.lead, None);
    let lose = reconcile(&wanted(&[], false, true), &set(&[]), &set(&[]), true);
    assert_eq!(lose.lead, Some(false));
    assert!(lose.rejoin, "nothing to release: rejoin at once");
}

#[test]
fn rule_5_rejoin_once_nothing_is_being_released() {
    let w = wanted(&[0], false, true);
    assert!(!reconcile(&w, &set(&[0, 1]), &set(&[1]), false).rejoin);
    assert!(reconcile(&w, &set(&[0]), &set(&[]), false).rejoin);
    let no_revoke = wanted(&[0], false, false);
    assert!(!reconcile(&no_revoke, &set(&[0]), &set(&[]), false).rejoin);
}

#[test]
fn rule_6_claims_cover_what_runs_what_starts_and_the_control_job() {
    let c = reconcile(
        &wanted(&[0, 2], true, false),
        &set(&[0, 1]),
        &set(&[1]),
        true,
    );
    assert_eq!(c.claims, vec![control_job(), p(0), p(1), p(2)]);
}

#[test]
fn an_assignment_decodes_with_the_control_job_apart() {
    let a = MemberAssignment {
        partitions: vec![p(1), control_job()],
        revoked: vec![p(2)],
    };
    let w = Wanted::decode(7, &a.encode().unwrap()).unwrap();
    assert_eq!(w, wanted(&[1], true, true).with_generation(7));
    assert!(Wanted::decode(7, b"\x09garbage").is_err());
}

impl Wanted {
    fn with_generation(mut self, g: i32) -> Self {
        self.generation = g;
        self
    }
}
