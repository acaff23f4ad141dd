use std::collections::BTreeSet;

use super::*;

fn wanted(generation: i32, slots: &[u32], revoked: bool) -> Wanted {
    Wanted {
        generation,
        partitions: slots.iter().map(|n| PartitionId::slot(*n)).collect(),
        control: false,
        revoked,
    }
}

#[test]
fn held_when_the_new_generation_still_assigns_the_slot() {
    assert_eq!(
        slot_confirmed(3, Ok(wanted(7, &[1, 3], false))),
        Confirmed::Held
    );
}

#[test]
fn taken_when_the_new_generation_assigns_it_elsewhere() {
    let c = slot_confirmed(3, Ok(wanted(8, &[1, 2], false)));
    assert!(
        matches!(&c, Confirmed::Taken(why) if why.contains("slot 3") && why.contains("generation 8")),
        "{c:?}"
    );
}

#[test]
fn taken_when_the_member_owns_nothing_any_more() {
    let none = Wanted {
        partitions: BTreeSet::new(),
        ..Wanted::none()
    };
    assert!(matches!(slot_confirmed(0, Ok(none)), Confirmed::Taken(_)));
}

#[test]
fn held_though_the_generation_revokes_another_slot() {
    assert_eq!(
        slot_confirmed(3, Ok(wanted(9, &[3], true))),
        Confirmed::Held
    );
}

#[test]
fn unknown_without_an_answer() {
    let c = slot_confirmed(2, Err("no assignment within 70s".into()));
    assert!(
        matches!(&c, Confirmed::Unknown(why) if why.contains("slot 2") && why.contains("70s")),
        "{c:?}"
    );
}
