use super::*;

fn m(p: i32) -> Member {
    ("t".to_owned(), p)
}

#[test]
fn a_sealed_generation_is_ready_only_once_every_member_is_quiet() {
    let mut b = Barrier::new();
    b.join(m(0));
    b.join(m(1));
    assert!(!b.ready(), "open is never ready");
    let g = b.seal();
    assert!(!b.ready());
    b.quiet(&m(0), g);
    assert!(!b.ready());
    assert_eq!(b.waiting(), vec![m(1)]);
    b.quiet(&m(1), g);
    assert!(b.ready());
}

#[test]
fn a_report_while_open_or_for_another_generation_is_ignored() {
    let mut b = Barrier::new();
    b.join(m(0));
    b.quiet(&m(0), 0);
    let g = b.seal();
    assert!(!b.ready(), "a report while open does not carry over");
    b.quiet(&m(0), g + 1);
    assert!(!b.ready());
    b.quiet(&m(0), g);
    assert!(b.ready());
}

#[test]
fn a_member_joining_while_sealed_counts_as_quiet_and_one_leaving_is_not_awaited() {
    let mut b = Barrier::new();
    b.join(m(0));
    b.join(m(1));
    let g = b.seal();
    b.join(m(2));
    b.quiet(&m(0), g);
    assert!(!b.ready());
    b.leave(&m(1));
    assert!(b.ready());
}

#[test]
fn reopening_moves_to_the_next_generation_and_forgets_the_reports() {
    let mut b = Barrier::new();
    b.join(m(0));
    let g = b.seal();
    b.quiet(&m(0), g);
    assert_eq!(b.open(), g + 1);
    assert_eq!(b.open(), g + 1, "opening an open barrier changes nothing");
    let g2 = b.seal();
    assert_eq!(g2, g + 1);
    assert!(
        !b.ready(),
        "quiet in the last generation is not quiet in this one"
    );
}

#[test]
fn a_failed_barrier_never_opens_again() {
    let mut b = Barrier::new();
    b.seal();
    b.fail();
    b.open();
    assert!(b.state().sealed && b.state().failed);
}

#[test]
fn a_driver_dropped_without_releasing_fails_the_gate() {
    let gate = Gate::new();
    let h = gate.join(m(0));
    gate.seal();
    drop(h);
    assert!(gate.failed());
}

#[test]
fn with_no_members_a_sealed_generation_is_ready_at_once() {
    let mut b = Barrier::new();
    b.seal();
    assert!(b.ready());
}

#[tokio::test]
async fn the_shared_gate_wakes_the_committer_when_the_last_driver_reports_or_leaves() {
    let gate = Gate::new();
    let mut a = gate.join(m(0));
    let b = gate.join(m(1));
    gate.seal();
    a.changed().await;
    assert!(a.sealed());
    a.quiet();
    let waiter = {
        let gate = Arc::clone(&gate);
        tokio::spawn(async move { gate.ready().await })
    };
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    b.release();
    assert!(waiter.await.unwrap());
    gate.open();
    a.changed().await;
    assert!(!a.sealed());
}
