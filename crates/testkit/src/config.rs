//! Text of Strait configs for tests: the two-cluster, one-flow shape most engine tests
//! share. Plain strings, so the kit stays free of Strait's crates.

/// `[clusters.src]` at `source` and `[clusters.dst]` at `target` (2 s connect timeout,
/// `request_timeout` for requests, e.g. `"3s"`) and one `[[flows]]` from `src` to `dst`.
/// Append the flow's subtables (`[flows.topics]`, [`SYNC_OFF`], …), `[engine]` and the rest.
pub fn two_cluster_flow(source: &str, target: &str, request_timeout: &str) -> String {
    format!(
        r#"
[clusters.src]
bootstrap_servers = "{source}"
connect_timeout = "2s"
request_timeout = "{request_timeout}"
[clusters.dst]
bootstrap_servers = "{target}"
connect_timeout = "2s"
request_timeout = "{request_timeout}"
[[flows]]
source = "src"
target = "dst"
"#
    )
}

/// `[flows.sync]` with group offsets, heartbeats and checkpoints off: data only.
pub const SYNC_OFF: &str = "[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
";
