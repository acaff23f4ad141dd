//! The flow's task names the flow in the error it stops with and, once, in its `/health`
//! line, for errors raised below it without the flow's name.

use tokio::sync::watch;

use super::run_flow;
use crate::datapath::budget::Budget;
use crate::metrics::Metrics;

#[tokio::test]
async fn an_error_the_flow_stops_with_names_it() {
    // `--once` with [flows.scale_out] is refused before any cluster is reached.
    let config = crate::config::load_str(
        r#"[clusters.a]
bootstrap_servers = ["a:9092"]
[clusters.b]
bootstrap_servers = ["b:9092"]
[[flows]]
name = "f"
source = "a"
target = "b"
[flows.scale_out]
"#,
        "t.toml",
        &|_| None,
    )
    .expect("config");
    let flow = config.flows[0].clone();
    let metrics = Metrics::new();
    let (_stop_tx, stop) = watch::channel(false);
    let e = run_flow(
        flow,
        config,
        metrics.clone(),
        Budget::new(1 << 20),
        true,
        stop,
    )
    .await
    .expect_err("refused");
    let reason = "configuration: --once replicates a flow in one process: it cannot be \
                  combined with [flows.scale_out]";
    assert_eq!(e.to_string(), format!("flow f: {reason}"));
    assert_eq!(e.context().flow.as_deref(), Some("f"));
    // `/health` names the flow once, on its line.
    assert_eq!(
        metrics.health().expect_err("failed"),
        format!("flow f: failed: {reason}")
    );
}
