use super::*;

#[test]
fn passes_cost_at_most_twice_the_registrations() {
    let mut list = Pruned::default();
    let mut checks = 0usize;
    for i in 0..10_000u32 {
        list.push(i, |_| {
            checks += 1;
            true
        });
    }
    assert_eq!(list.len(), 10_000);
    assert!(checks <= 2 * 10_000, "{checks} liveness checks");
}

#[test]
fn a_partition_restarting_over_and_over_keeps_the_list_short() {
    // Every registration replaces the one before (a partition restarting).
    let mut list = Pruned::default();
    let mut newest = 0u32;
    for i in 0..5_000u32 {
        newest = i;
        list.push(i, |e| *e + 1 >= newest);
        let live = list.iter().filter(|e| **e + 1 >= newest).count();
        assert!(
            list.len() <= 2 * live.max(1) + MIN_PRUNE,
            "{} held",
            list.len()
        );
    }
    assert!(list.iter().any(|e| *e == newest), "the newest is kept");
}

#[test]
fn live_entries_are_kept_in_order() {
    let mut list = Pruned::default();
    for i in 0..100u32 {
        list.push(i, |e| e % 3 == 0);
    }
    let kept: Vec<u32> = list.iter().copied().filter(|e| e % 3 == 0).collect();
    assert_eq!(kept, (0..100).filter(|e| e % 3 == 0).collect::<Vec<_>>());
}
