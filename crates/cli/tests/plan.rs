//! `strait plan --json` against two Tansu brokers: the topic plan and the ACL plan as one
//! JSON document (Tansu has no authorizer: its DescribeAcls lists nothing).

use std::process::Command;

use strait_testkit::TansuCluster;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka;

#[test]
fn plan_json_lists_what_would_be_created_and_the_acl_plan() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "orders", 3, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = two_cluster_flow(&src, &dst, "5s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"orders\"]\n[flows.naming.rename]\norders = \"orders-v2\"\n{SYNC_OFF}"
    ));
    let path = dir.path().join("strait.toml");
    std::fs::write(&path, cfg).expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["plan", "--json", "-c", path.to_str().expect("utf-8")])
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let flow = &plan["flows"][0];
    assert_eq!(flow["create"][0]["source_topic"], "orders", "{plan}");
    assert_eq!(flow["create"][0]["target_topic"], "src.orders-v2", "{plan}");
    assert_eq!(flow["create"][0]["partitions"], 3, "{plan}");
    // SYNC_OFF leaves topic ACL sync on (its default): Tansu has nothing to copy.
    assert_eq!(flow["acls"]["enabled"], true, "{plan}");
    assert_eq!(flow["acls"]["create"], serde_json::json!([]), "{plan}");
}
