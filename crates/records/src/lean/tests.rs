use super::*;

#[test]
fn a_queue_that_holds_one_item_keeps_room_for_one() {
    let mut q: VecDeque<[u8; 112]> = VecDeque::new();
    for _ in 0..3 {
        push_lean(&mut q, [0; 112]);
        assert!(q.pop_front().is_some());
    }
    assert_eq!(q.capacity(), 1);
}

#[test]
fn a_queue_that_holds_two_items_keeps_room_for_two() {
    let mut q = VecDeque::new();
    for _ in 0..3 {
        push_lean(&mut q, [1u8; 112]);
        push_lean(&mut q, [2u8; 112]);
        assert_eq!(q.pop_front(), Some([1; 112]));
        assert_eq!(q.pop_front(), Some([2; 112]));
    }
    assert_eq!(q.capacity(), 2);
}

#[test]
fn a_queue_that_holds_more_grows_as_a_vecdeque_does_and_keeps_the_order() {
    let mut q = VecDeque::new();
    for i in 0..10 {
        push_lean(&mut q, i);
    }
    assert!(q.capacity() >= 10);
    assert_eq!(
        q.into_iter().collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
}
