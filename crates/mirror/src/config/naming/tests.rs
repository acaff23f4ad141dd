use super::*;
use proptest::prelude::*;

fn prefix(src: &str) -> ReplicationPolicy {
    ReplicationPolicy::new(NamingPolicy::Prefix, ".", src)
}

#[test]
fn prefix_naming_like_mm2() {
    let p = prefix("us");
    assert_eq!(p.remote_topic("orders"), "us.orders");
    assert_eq!(p.upstream_cluster("us.orders"), Some("us"));
    assert_eq!(p.upstream_topic("us.orders"), Some("orders"));
    assert_eq!(p.upstream_cluster("orders"), None);
    assert_eq!(p.upstream_cluster(".orders"), None);
}

#[test]
fn cycles_are_detected_through_chains() {
    let p = prefix("us");
    assert!(p.is_cycle("eu.orders", "eu"), "came from the target");
    assert!(
        p.is_cycle("ap.eu.orders", "eu"),
        "came from the target via ap"
    );
    assert!(!p.is_cycle("ap.orders", "eu"));
    assert!(!p.is_cycle("orders", "eu"));
}

#[test]
fn custom_separator() {
    let p = ReplicationPolicy::new(NamingPolicy::Prefix, "__", "us");
    assert_eq!(p.remote_topic("a.b"), "us__a.b");
    assert_eq!(p.upstream_cluster("us__a.b"), Some("us"));
    assert!(p.is_cycle("eu__x", "eu"));
    assert!(p.is_heartbeats_topic("eu__heartbeats"));
    assert!(!p.is_heartbeats_topic("eu.heartbeats"));
}

#[test]
fn identity_keeps_names_but_prefixes_heartbeats() {
    let p = ReplicationPolicy::new(NamingPolicy::Identity, ".", "us");
    assert_eq!(p.remote_topic("orders"), "orders");
    assert_eq!(p.remote_topic("heartbeats"), "us.heartbeats");
    assert_eq!(p.upstream_cluster("eu.orders"), None);
    assert!(
        !p.is_cycle("eu.orders", "eu"),
        "identity names carry no origin"
    );
    assert!(p.is_cycle("eu.heartbeats", "eu"));
}

#[test]
fn renames_apply_before_the_policy_and_cycles_still_hold() {
    let renames = BTreeMap::from([("orders".to_owned(), "orders-v2".to_owned())]);
    let p = prefix("us").with_renames(renames.clone());
    assert_eq!(p.remote_topic("orders"), "us.orders-v2");
    assert_eq!(p.remote_topic("payments"), "us.payments");
    // What this flow wrote is still recognised as coming from the source.
    assert!(p.is_cycle("us.orders-v2", "us"));
    let i = ReplicationPolicy::new(NamingPolicy::Identity, ".", "us").with_renames(renames);
    assert_eq!(i.remote_topic("orders"), "orders-v2");
    assert_eq!(i.remote_topic("heartbeats"), "us.heartbeats");
}

#[test]
fn an_alias_other_than_the_cluster_key_names_the_replicas() {
    let spec = NamingSpec {
        alias: Some("dc1".to_owned()),
        ..NamingSpec::default()
    };
    let mut problems = Vec::new();
    let p = resolve(&spec, "us-east", &KeyPath::root(), &mut problems);
    assert!(problems.is_empty());
    let p = p.unwrap();
    assert_eq!(p.remote_topic("orders"), "dc1.orders");
    let bad = NamingSpec {
        alias: Some(String::new()),
        ..NamingSpec::default()
    };
    assert!(resolve(&bad, "us-east", &KeyPath::root(), &mut problems).is_none());
    assert!(problems[0].to_string().contains("alias"), "{}", problems[0]);
}

#[test]
fn heartbeats_topics() {
    let p = prefix("us");
    assert!(p.is_heartbeats_topic("heartbeats"));
    assert!(p.is_heartbeats_topic("eu.heartbeats"));
    assert!(p.is_heartbeats_topic("ap.eu.heartbeats"));
    assert!(!p.is_heartbeats_topic("myheartbeats"));
}

proptest! {
    /// A topic this flow wrote is recognised as coming from the source, and replicating
    /// it back to the source is a cycle.
    #[test]
    fn remote_topics_round_trip(src in "[a-z]{1,6}", topic in "[a-z0-9_.-]{1,20}") {
        let p = prefix(&src);
        let remote = p.remote_topic(&topic);
        prop_assert_eq!(p.upstream_cluster(&remote), Some(src.as_str()));
        prop_assert_eq!(p.upstream_topic(&remote), Some(topic.as_str()));
        prop_assert!(p.is_cycle(&remote, &src));
    }
}
