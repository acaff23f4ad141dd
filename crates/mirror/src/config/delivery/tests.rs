use super::*;

fn check(spec: &DeliverySpec) -> Result<Delivery, Vec<Problem>> {
    let mut problems = Vec::new();
    let at = KeyPath::root().key("flows").index(0).key("delivery");
    match resolve(spec, "a-to-b", &at, &mut problems) {
        Some(d) => Ok(d),
        None => Err(problems),
    }
}

#[test]
fn the_default_is_at_least_once_with_an_id_named_after_the_flow() {
    let d = check(&DeliverySpec::default()).unwrap();
    assert!(!d.exactly_once());
    assert_eq!(d.transactional_id, "strait.a-to-b");
    assert_eq!(d, Delivery::at_least_once("a-to-b"));
}

#[test]
fn an_interval_not_shorter_than_the_timeout_is_refused() {
    let spec = DeliverySpec {
        guarantee: Guarantee::ExactlyOnce,
        transaction_interval: HumanDuration::secs(60),
        transaction_timeout: HumanDuration::secs(30),
        transactional_id: None,
    };
    let e = check(&spec).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(
        e[0].to_string().contains("transaction_interval"),
        "{}",
        e[0]
    );
}

#[test]
fn out_of_range_durations_and_an_empty_id_are_each_reported() {
    let spec = DeliverySpec {
        guarantee: Guarantee::ExactlyOnce,
        transaction_interval: HumanDuration::millis(1),
        transaction_timeout: HumanDuration::secs(3600),
        transactional_id: Some(String::new()),
    };
    assert_eq!(check(&spec).unwrap_err().len(), 3);
}

#[test]
fn two_exactly_once_flows_with_one_transactional_id_are_refused() {
    let toml = r#"
[clusters.a]
bootstrap_servers = "a:9092"
[clusters.b]
bootstrap_servers = "b:9092"
[[flows]]
source = "a"
target = "b"
[flows.delivery]
guarantee = "exactly_once"
transactional_id = "shared"
[[flows]]
source = "b"
target = "a"
[flows.delivery]
guarantee = "exactly_once"
transactional_id = "shared"
"#;
    let e = crate::config::load_str(toml, "t.toml", &|_| None).unwrap_err();
    assert!(e.to_string().contains("would fence each other"), "{e}");
}
