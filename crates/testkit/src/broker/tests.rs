use super::free_ports;
use std::collections::HashSet;

#[test]
fn free_ports_are_distinct_within_one_call() {
    let ports = free_ports(64).expect("64 loopback ports");
    let distinct: HashSet<_> = ports.iter().collect();
    assert_eq!(distinct.len(), 64, "{ports:?}");
}
