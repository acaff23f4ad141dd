use crate::config::load_str;

fn load(sync: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
    load_str(
        &format!(
            "[clusters.a]\nbootstrap_servers = \"a:9092\"\n[clusters.b]\n\
                 bootstrap_servers = \"b:9092\"\n[[flows]]\nsource = \"a\"\ntarget = \"b\"\n\
                 [flows.sync]\n{sync}\n"
        ),
        "test.toml",
        &|_| None,
    )
}

#[test]
fn deleting_is_off_by_default_and_needs_topic_acls() {
    let cfg = load("").expect("defaults");
    assert!(cfg.flows[0].sync.topic_acls && !cfg.flows[0].sync.delete_topic_acls);
    let cfg = load("delete_topic_acls = true").expect("with topic_acls on");
    assert!(cfg.flows[0].sync.delete_topic_acls);
    let e = load("topic_acls = false\ndelete_topic_acls = true").expect_err("does nothing");
    let text = e.to_string();
    assert!(text.contains("flows[0].sync.delete_topic_acls"), "{text}");
    assert!(text.contains("topic_acls = false"), "{text}");
}
