//! NetNs: a namespace with a veth pair, a Tansu broker inside, a tbf rate limit, cleanup
//! on drop (also on panic). Needs root and iproute2: without them the test fails with the
//! reason (never a silent pass).

use std::process::Command;
use std::time::Duration;

use strait_testkit::netns::{Side, Tbf};
use strait_testkit::probe::api_versions;
use strait_testkit::{BrokerOptions, NetNs, TansuBroker};

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn links() -> String {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_broker_in_a_namespace_is_reachable_shaped_and_cleaned_up() {
    NetNs::check_available().unwrap_or_else(|e| panic!("{e}"));
    let ns = NetNs::create().unwrap();
    let name = ns.name().to_owned();
    let host_if = ns.host_interface().to_owned();
    assert!(namespaces().contains(&name));
    assert!(links().contains(&host_if));
    {
        let broker = TansuBroker::start_with(BrokerOptions {
            netns: Some(ns.place()),
            ..BrokerOptions::default()
        })
        .unwrap();
        assert_eq!(broker.addr().ip(), ns.ns_ip());
        api_versions(broker.addr(), Duration::from_secs(2)).unwrap();
        ns.limit_rate(Side::Host, &Tbf::one_mib_per_second())
            .unwrap();
        ns.limit_rate(Side::Namespace, &Tbf::one_mib_per_second())
            .unwrap();
        api_versions(broker.addr(), Duration::from_secs(2)).unwrap();
        ns.unlimit(Side::Namespace).unwrap();
        // Link down: no answer (a partition, not a reset); up again: answers.
        ns.set_link(false).unwrap();
        assert!(api_versions(broker.addr(), Duration::from_millis(500)).is_err());
        ns.set_link(true).unwrap();
        let mut up = false;
        for _ in 0..50 {
            if api_versions(broker.addr(), Duration::from_secs(1)).is_ok() {
                up = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(up, "the broker answers again once the link is up");
    }
    drop(ns);
    assert!(!namespaces().contains(&name), "namespace deleted");
    assert!(!links().contains(&host_if), "veth pair deleted");
}

#[test]
fn a_panicking_test_still_deletes_its_namespace() {
    NetNs::check_available().unwrap_or_else(|e| panic!("{e}"));
    let name = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let n = std::sync::Arc::clone(&name);
    let r = std::thread::spawn(move || {
        let ns = NetNs::create().unwrap();
        *n.lock().unwrap() = ns.name().to_owned();
        panic!("a failing test");
    })
    .join();
    assert!(r.is_err());
    let name = name.lock().unwrap().clone();
    assert!(!name.is_empty());
    assert!(
        !namespaces().contains(&name),
        "namespace {name} deleted on panic"
    );
}
