use super::*;

fn eos(slots: u32, txn: &str) -> Topology {
    Topology {
        slots,
        transactional_id: txn.to_owned(),
    }
}

#[test]
fn the_protocol_name_round_trips_the_topology() {
    for t in [None, Some(eos(6, "strait-p")), Some(eos(1, "a;txn=b"))] {
        let name = Topology::protocol_name(t.as_ref());
        assert_eq!(Topology::parse(&name), Some(t), "{name}");
    }
    assert_eq!(Topology::protocol_name(None), PROTOCOL_NAME);
}

#[test]
fn members_that_agree_are_not_refused() {
    let t = eos(6, "p");
    let name = Topology::protocol_name(Some(&t));
    assert_eq!(Topology::disagreement(Some(&t), &name, &[]), None);
    assert_eq!(Topology::disagreement(None, PROTOCOL_NAME, &[]), None);
}

#[test]
fn another_slot_count_is_refused_by_name() {
    let theirs = Topology::protocol_name(Some(&eos(6, "p")));
    let why =
        Topology::disagreement(Some(&eos(4, "p")), &theirs, &["host-a".into()]).expect("refused");
    assert!(why.contains("6 slots") && why.contains("4 slots"), "{why}");
    assert!(why.contains("host-a"), "{why}");
}

#[test]
fn another_transactional_id_or_guarantee_is_refused() {
    let theirs = Topology::protocol_name(Some(&eos(6, "p")));
    assert!(Topology::disagreement(Some(&eos(6, "q")), &theirs, &[]).is_some());
    let why = Topology::disagreement(None, &theirs, &[]).expect("refused");
    assert!(why.contains("at-least-once"), "{why}");
}

#[test]
fn another_versions_protocol_is_not_guessed_at() {
    let why = Topology::disagreement(None, "strait-cooperative-v1", &[]).expect("refused");
    assert!(why.contains("another Strait version"), "{why}");
    assert_eq!(
        Topology::parse("strait-cooperative-v2;eos;slots=x;txn=p"),
        None
    );
}
