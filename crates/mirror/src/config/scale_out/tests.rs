use super::*;

fn check(spec: &ScaleOutSpec, eos: bool) -> Result<ScaleOut, Vec<Problem>> {
    let mut problems = Vec::new();
    let at = KeyPath::root().key("flows").index(0).key("scale_out");
    match resolve(spec, "a-to-b", eos, &at, &mut problems) {
        Some(s) => Ok(s),
        None => Err(problems),
    }
}

#[test]
fn the_defaults_name_the_group_after_the_flow_and_use_the_host_name() {
    let s = check(&ScaleOutSpec::default(), false).unwrap();
    assert_eq!(s.group, "strait.a-to-b.workers");
    assert_eq!(s.instance_id, InstanceId::HostName);
    assert_eq!(s.session_timeout, Duration::from_secs(10));
    assert_eq!(s.capacity, 1);
}

#[test]
fn an_empty_instance_id_makes_a_dynamic_member() {
    let spec = ScaleOutSpec {
        instance_id: Some(String::new()),
        ..ScaleOutSpec::default()
    };
    assert_eq!(
        check(&spec, false).unwrap().instance_id,
        InstanceId::Dynamic
    );
}

#[test]
fn bad_values_are_each_reported() {
    let spec = ScaleOutSpec {
        group: Some(String::new()),
        instance_id: Some("a\nb".into()),
        session_timeout: HumanDuration::millis(10),
        rebalance_timeout: HumanDuration::secs(7200),
        capacity: 0,
        slots: 1,
    };
    assert_eq!(check(&spec, false).unwrap_err().len(), 5);
}

#[test]
fn exactly_once_flows_scale_out_by_slots() {
    assert_eq!(
        check(&ScaleOutSpec::default(), true).unwrap().slots,
        Some(16)
    );
    assert_eq!(check(&ScaleOutSpec::default(), false).unwrap().slots, None);
    let spec = ScaleOutSpec {
        slots: 0,
        ..ScaleOutSpec::default()
    };
    assert_eq!(check(&spec, true).unwrap_err().len(), 1);
}

#[test]
fn the_table_parses_from_a_config_file() {
    let toml = r#"
[clusters.a]
bootstrap_servers = "a:9092"
[clusters.b]
bootstrap_servers = "b:9092"
[[flows]]
source = "a"
target = "b"
[flows.scale_out]
instance_id = "pod-0"
session_timeout = "6s"
capacity = 2
"#;
    let c = crate::config::load_str(toml, "t.toml", &|_| None).unwrap();
    let s = c.flows[0].scale_out.clone().unwrap();
    assert_eq!(s.instance_id, InstanceId::Fixed("pod-0".into()));
    assert_eq!(s.session_timeout, Duration::from_secs(6));
    assert_eq!(s.capacity, 2);
    assert_eq!(s.group, "strait.a-to-b.workers");
}
