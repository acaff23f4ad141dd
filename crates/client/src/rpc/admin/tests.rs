use super::*;

#[test]
fn grown_partitions_are_placed_by_the_controller_with_null_assignments() {
    let t = grow_topic("orders", 4);
    assert_eq!(t.count, 4);
    assert_eq!(t.name.0.as_str(), "orders");
    assert!(
        t.assignments.is_none(),
        "an empty array is refused by Kafka"
    );
}
