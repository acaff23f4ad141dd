//! What a batch handed on carries: [`Pipeline::last_sent_pin`] (the driver reads the time
//! its data was fetched from it). One test per rule, without sockets.

use super::tests::{record_set, settings};
use super::*;

/// Plans a record set of `batches` fetched with `pin`.
fn fetch(p: &mut Pipeline<u32>, batches: &[(i64, i64)], pin: u32) {
    p.fetched(Fetched {
        generation: p.generation(),
        position: batches[0].0,
        records: record_set(batches),
        aborted: &[],
        stable: None,
        pin,
    })
    .expect("plan");
}

/// Runs the pipeline until it waits, with `repin` (recording into a map as the driver
/// does); the pins of the batches handed on.
fn sent_pins(p: &mut Pipeline<u32>, repin: impl Fn(&u32) -> Option<u32>) -> Vec<u32> {
    let mut map = OffsetMap::new();
    map.advance(0, 0).expect("advance");
    let mut pins = Vec::new();
    while let Some(a) = p.next_action(|_, like| repin(like)) {
        match a {
            Action::Produce { .. } => {
                pins.push(*p.last_sent_pin().expect("a batch was just handed on"));
            }
            Action::Record => {
                p.record(&mut map).expect("record");
            }
            _ => {}
        }
    }
    pins
}

fn pipeline() -> Pipeline<u32> {
    let mut map = OffsetMap::new();
    map.advance(0, 0).expect("advance");
    Pipeline::new(
        settings(
            0,
            None,
            Policies::all(crate::config::model::IncidentPolicy::Fail),
        ),
        &map,
        Recovery::none(),
    )
}

#[test]
fn a_batch_handed_on_carries_the_pin_of_its_record_set() {
    let mut p = pipeline();
    assert_eq!(p.last_sent_pin(), None, "nothing handed on yet");
    fetch(&mut p, &[(0, 2), (2, 2)], 1);
    fetch(&mut p, &[(4, 2)], 2);
    assert_eq!(sent_pins(&mut p, |_| None), vec![1, 1, 2]);
}

#[test]
fn a_merged_batch_carries_the_pin_repin_made_from_its_oldest_input() {
    let mut p = pipeline();
    // Five batches fill the window; the next ones queue and are merged when it opens.
    fetch(&mut p, &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)], 1);
    assert_eq!(sent_pins(&mut p, |_| None), vec![1; 5]);
    fetch(&mut p, &[(5, 1), (6, 1)], 2);
    fetch(&mut p, &[(7, 1)], 3);
    assert!(sent_pins(&mut p, |_| None).is_empty(), "the window is full");
    p.acked(0).expect("ack");
    assert_eq!(sent_pins(&mut p, |like| Some(like + 100)), vec![102]);
}

#[test]
fn a_merged_batch_without_a_pin_of_its_own_carries_its_oldest_inputs() {
    let mut p = pipeline();
    fetch(&mut p, &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)], 1);
    sent_pins(&mut p, |_| None);
    fetch(&mut p, &[(5, 1)], 2);
    fetch(&mut p, &[(6, 1), (7, 1)], 3);
    p.acked(0).expect("ack");
    assert_eq!(sent_pins(&mut p, |_| None), vec![2]);
}
