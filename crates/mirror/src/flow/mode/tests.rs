use super::*;

fn flow(scale_out: bool, exactly_once: bool) -> Flow {
    let mut text = String::from(
        r#"[clusters.a]
bootstrap_servers = ["a:9092"]
[clusters.b]
bootstrap_servers = ["b:9092"]
[[flows]]
name = "f"
source = "a"
target = "b"
"#,
    );
    if exactly_once {
        text.push_str("[flows.delivery]\nguarantee = \"exactly_once\"\n");
    }
    if scale_out {
        text.push_str("[flows.scale_out]\n");
    }
    crate::config::load_str(&text, "t.toml", &|_| None)
        .expect("config")
        .flows
        .remove(0)
}

#[test]
fn the_config_picks_the_mode() {
    let mode = |s, e| Mode::of(&flow(s, e), false).expect("mode");
    assert_eq!(mode(false, false), Mode::AtLeastOnce);
    assert_eq!(mode(false, true), Mode::ExactlyOnce);
    assert_eq!(mode(true, false), Mode::ScaleOut);
    assert_eq!(mode(true, true), Mode::ExactlyOnceSlots);
}

#[test]
fn one_process_modes_hold_the_guard() {
    let shared = |s, e| Mode::of(&flow(s, e), false).expect("mode").shared();
    assert!(!shared(false, false));
    assert!(!shared(false, true));
    assert!(shared(true, false));
    assert!(shared(true, true));
}

#[test]
fn once_is_one_process() {
    assert!(Mode::of(&flow(false, true), true).is_ok());
    for e in [false, true] {
        let err = Mode::of(&flow(true, e), true).expect_err("refused");
        assert!(err.to_string().contains("--once"), "{err}");
        assert!(err.stops_flow(), "a config error: {err}");
    }
}
