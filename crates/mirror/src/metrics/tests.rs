//! Tests of the metrics registry, `/health` and the sample names Prometheus stores.

use super::*;

/// The metrics keyed by flow, topic and partition, one call per event: what the data path
/// does through a [`PartitionMetrics`] handle, spelled out for tests.
impl Metrics {
    /// `n` records acknowledged by the target.
    pub fn records_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).add_records(n);
    }

    /// `n` bytes acknowledged by the target.
    pub fn bytes_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).add_bytes(n);
    }

    /// Sets the partition's lag in offsets.
    pub fn lag_offsets(&self, flow: &str, topic: &str, partition: i32, lag: i64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).set_lag_offsets(lag);
    }

    /// Sets the partition's lag in seconds.
    pub fn lag_seconds(&self, flow: &str, topic: &str, partition: i32, secs: f64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).set_lag_seconds(secs);
    }

    /// One replication latency observation, in seconds.
    pub fn replication_latency(&self, flow: &str, topic: &str, secs: f64) {
        self.inner.f.latency.get(&[flow, topic]).observe(secs);
    }

    /// A fetch failed for the partition.
    pub fn fetch_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_errors, flow, topic, partition).inc_by(1);
    }

    /// The partition's fetch is retried (after an error or leader change).
    pub fn fetch_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_retries, flow, topic, partition).inc_by(1);
    }

    /// The producer gave up on a batch of the partition.
    pub fn produce_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_errors, flow, topic, partition).inc_by(1);
    }

    /// The partition's pipeline restarts after a produce error.
    pub fn produce_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_retries, flow, topic, partition).inc_by(1);
    }

    /// A source batch went through the slow path (`reason`: `gapped`, `empty`, `too_large`).
    pub fn slow_path_batch(&self, flow: &str, topic: &str, partition: i32, reason: &str) {
        let pp = p(partition);
        self.inner
            .f
            .slow_path
            .get(&[flow, topic, &pp, reason])
            .inc_by(1);
    }

    /// `inputs` batches of the partition were merged into one batch of `bytes` bytes.
    pub fn coalesced(&self, flow: &str, topic: &str, partition: i32, inputs: u64, bytes: u64) {
        let f = &self.inner.f;
        Self::ftp(&f.coalesce_inputs, flow, topic, partition).inc_by(inputs);
        Self::ftp(&f.coalesce_outputs, flow, topic, partition).inc_by(1);
        Self::ftp(&f.coalesce_bytes, flow, topic, partition).inc_by(bytes);
    }

    /// Sets the number of runs in the partition's offset map.
    pub fn offset_map_runs(&self, flow: &str, topic: &str, partition: i32, runs: usize) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition)
            .set_map_runs(i64::try_from(runs).unwrap_or(i64::MAX));
    }

    /// A source batch was dropped (`kind`: `control` or `aborted`).
    pub fn dropped_batch(&self, flow: &str, topic: &str, partition: i32, kind: &str) {
        let pp = p(partition);
        self.inner
            .f
            .dropped
            .get(&[flow, topic, &pp, kind])
            .inc_by(1);
    }
}

mod unit {
    use super::*;

    #[test]
    fn render_contains_every_family_with_help_and_type() {
        let m = Metrics::new();
        let text = m.render();
        for name in [
            "strait_records_replicated_total",
            "strait_lag_seconds",
            "strait_replication_latency_seconds",
            "strait_slow_path_batches_total",
            "strait_incidents_total",
            "strait_group_translation_staleness_seconds",
            "strait_checkpoint_records_written_total",
            "strait_flow_up",
        ] {
            // OpenMetrics: a counter family is named without its samples' `_total`.
            let family = name.strip_suffix("_total").unwrap_or(name);
            assert!(text.contains(&format!("# HELP {family} ")), "{name}");
            assert!(text.contains(&format!("# TYPE {family} ")), "{name}");
        }
    }

    #[test]
    fn plain_methods_and_partition_handles_share_series() {
        let m = Metrics::new();
        m.records_replicated("f", "t", 0, 5);
        let h = m.partition("f", "t", 0);
        h.acked(7, 100, 0.02);
        h.lag(3, 1.5);
        h.slow_path("gapped");
        h.dropped("control");
        h.incident(IncidentKind::SourceTruncation);
        m.group_translation_staleness("f", "g1", 4.0);
        let text = m.render();
        for line in [
            "strait_records_replicated_total{flow=\"f\",topic=\"t\",partition=\"0\"} 12",
            "strait_bytes_replicated_total{flow=\"f\",topic=\"t\",partition=\"0\"} 100",
            "strait_lag_offsets{flow=\"f\",topic=\"t\",partition=\"0\"} 3",
            "strait_lag_seconds{flow=\"f\",topic=\"t\",partition=\"0\"} 1.5",
            "strait_replication_latency_seconds_count{flow=\"f\",topic=\"t\"} 1",
            "strait_slow_path_batches_total{flow=\"f\",topic=\"t\",partition=\"0\",reason=\"gapped\"} 1",
            "strait_dropped_batches_total{flow=\"f\",topic=\"t\",partition=\"0\",kind=\"control\"} 1",
            "strait_incidents_total{flow=\"f\",topic=\"t\",partition=\"0\",kind=\"source_truncation\"} 1",
            "strait_group_translation_staleness_seconds{flow=\"f\",group=\"g1\"} 4.0",
        ] {
            assert!(
                text.contains(&format!("{line}\n")),
                "missing {line}\n{text}"
            );
        }
        m.remove_partition("f", "t", 0);
        assert!(!m.render().contains("partition=\"0\"}"));
    }

    #[test]
    fn labelled_partition_series_appear_when_they_first_count_and_are_kept_by_the_handle() {
        let m = Metrics::new();
        let h = m.partition("f", "t", 0);
        h.dropped_n("aborted", 0);
        let text = m.render();
        for family in [
            "strait_dropped_batches_total{",
            "strait_coalesced_input_batches_total{",
        ] {
            assert!(
                !text.contains(family),
                "{family} before anything counted\n{text}"
            );
        }
        h.dropped_n("aborted", 3);
        h.dropped("aborted");
        h.clone().dropped("control");
        // The plain method counts into the series the handle keeps.
        m.dropped_batch("f", "t", 0, "aborted");
        // A kind outside the handle's list is still counted.
        h.dropped("something_new");
        h.coalesced(2, 10);
        h.coalesced(3, 20);
        h.slow_path("too_large");
        h.slow_path("too_large");
        let text = m.render();
        let lbl = "flow=\"f\",topic=\"t\",partition=\"0\"";
        for line in [
            format!("strait_dropped_batches_total{{{lbl},kind=\"aborted\"}} 5"),
            format!("strait_dropped_batches_total{{{lbl},kind=\"control\"}} 1"),
            format!("strait_dropped_batches_total{{{lbl},kind=\"something_new\"}} 1"),
            format!("strait_coalesced_input_batches_total{{{lbl}}} 5"),
            format!("strait_coalesced_output_batches_total{{{lbl}}} 2"),
            format!("strait_coalesced_bytes_copied_total{{{lbl}}} 30"),
            format!("strait_slow_path_batches_total{{{lbl},reason=\"too_large\"}} 2"),
        ] {
            assert!(
                text.contains(&format!("{line}\n")),
                "missing {line}\n{text}"
            );
        }
    }

    #[test]
    fn the_handle_lists_every_slow_path_reason_the_planner_has() {
        use crate::datapath::plan::SlowReason;
        for r in [
            SlowReason::Gapped,
            SlowReason::Empty,
            SlowReason::TooLarge,
            SlowReason::Partial,
        ] {
            assert!(SLOW_REASONS.contains(&r.as_str()), "{}", r.as_str());
        }
    }

    #[test]
    fn an_engine_histogram_has_its_own_buckets_and_its_quantiles_stay_inside_them() {
        let h = EngineHistogram::default();
        assert_eq!(h.snapshot().quantile(0.5), None, "no observations");
        for v in [0.0004, 0.0005, 0.0011, 0.009, 0.2, 120.0] {
            h.observe(v);
        }
        let s = h.snapshot();
        assert_eq!(s.bounds, &ENGINE_BUCKETS[..]);
        assert_eq!(s.count, 6);
        // A value on a bound counts in that bucket; above the last bound only the count.
        assert_eq!((s.buckets[0], s.buckets[1], s.buckets[2]), (2, 0, 1));
        assert_eq!(s.buckets.iter().sum::<u64>(), 5);
        assert_eq!(s.max, 120.0);
        assert!((s.sum - 120.2110).abs() < 1e-9, "{}", s.sum);
        // Rank 3 of 6 is the 1–2 ms bucket's only observation: its upper bound.
        let median = s.quantile(0.5).expect("observations");
        assert!((median - 0.002).abs() < 1e-12, "{median}");
        // Past the last bound only the maximum is known.
        assert_eq!(s.quantile(1.0), Some(120.0));
        // Interpolated, never above the largest observation.
        let one = EngineHistogram::default();
        one.observe(0.0081);
        assert_eq!(one.snapshot().quantile(0.99), Some(0.0081));
        let m = Metrics::new();
        let now = std::time::Instant::now();
        m.partition("f", "t", 0).engine_acked(now, now);
        m.fetch_wait_handle("f").observe(0.012);
        assert_eq!(m.engine_latency("f").count, 1);
        assert_eq!(m.produce_ack("f").count, 1);
        assert_eq!(
            m.fetch_wait("f").buckets[ENGINE_BUCKETS.partition_point(|b| *b < 0.012)],
            1
        );
        assert_eq!(m.fetch_wait("other").count, 0);
    }

    #[test]
    fn histogram_is_cumulative_and_label_values_are_escaped() {
        let m = Metrics::new();
        for v in [0.003, 0.2, 1000.0, -1.0] {
            m.replication_latency("f", "q\"uo\\te\n", v);
        }
        let text = m.render();
        let labels = "flow=\"f\",topic=\"q\\\"uo\\\\te\\n\"";
        for (le, n) in [
            ("0.001", 1),
            ("0.005", 2),
            ("0.25", 3),
            ("300.0", 3),
            ("+Inf", 4),
        ] {
            let line =
                format!("strait_replication_latency_seconds_bucket{{le=\"{le}\",{labels}}} {n}\n");
            assert!(text.contains(&line), "{line}{text}");
        }
        assert!(
            text.contains(&format!(
                "strait_replication_latency_seconds_count{{{labels}}} 4\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "strait_replication_latency_seconds_sum{{{labels}}} 1000.203\n"
            )),
            "{text}"
        );
    }

    #[test]
    fn a_partition_behind_with_nothing_acknowledged_past_the_threshold_is_stalled() {
        let min: i64 = 60_000;
        assert_eq!(stall_line("f", "t", 3, 10, 0, min, 60_000), None, "not yet");
        assert_eq!(
            stall_line("f", "t", 3, 0, 0, 10 * min, 60_000),
            None,
            "caught up"
        );
        assert_eq!(
            stall_line("f", "t", 3, 10, 0, min + 1000, 60_000).as_deref(),
            Some(
                "flow f: partition t-3 stalled: 10 record(s) behind, nothing acknowledged for 61s"
            )
        );
        // Through the registry: a fresh partition that lags is not stalled at once, and one
        // that is gone is forgotten.
        let m = Metrics::new();
        m.set_flow_state("f", FlowState::Running);
        let p = m.partition("f", "t", 0);
        p.lag(5, 1.0);
        assert!(m.health().is_ok());
        m.set_stalled_after(std::time::Duration::ZERO);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let e = m.health().unwrap_err();
        assert!(
            e.contains("partition t-0 stalled: 5 record(s) behind"),
            "{e}"
        );
        p.acked(1, 1, 0.0);
        p.lag(0, 0.0);
        assert!(m.health().is_ok());
        p.lag(5, 1.0);
        drop(p);
        assert!(m.health().is_ok(), "a stopped partition is not reported");
    }

    #[test]
    fn health_requires_every_flow_running() {
        let m = Metrics::new();
        assert!(m.health().is_err(), "no flow yet");
        m.set_flow_state("a", FlowState::Running);
        m.set_flow_state("b", FlowState::Starting);
        assert_eq!(m.health().unwrap_err(), "flow b: starting");
        m.set_flow_state("b", FlowState::Running);
        assert_eq!(m.health().unwrap(), "ok: 2 flow(s) running");
        m.set_flow_state("a", FlowState::Failed("source truncation".into()));
        assert_eq!(m.health().unwrap_err(), "flow a: failed: source truncation");
        assert!(m.render().contains("strait_flow_up{flow=\"a\"} 0\n"));
        assert!(m.render().contains("strait_flow_up{flow=\"b\"} 1\n"));
    }

    #[test]
    fn held_bytes_over_the_limit_are_a_health_line_until_cleared() {
        let m = Metrics::new();
        m.set_flow_state("f", FlowState::Running);
        let p = m.partition("f", "t", 2);
        p.held(4096);
        assert!(
            m.render()
                .contains("strait_held_bytes{flow=\"f\",topic=\"t\",partition=\"2\"} 4096\n"),
            "{}",
            m.render()
        );
        p.held_alarm(Some("held: producer id 7 since source offset 10".into()));
        assert_eq!(
            m.health().unwrap_err(),
            "held: producer id 7 since source offset 10"
        );
        p.held_alarm(None);
        assert!(m.health().is_ok());
        m.remove_partition("f", "t", 2);
        assert!(!m.render().contains("strait_held_bytes{"));
    }

    #[test]
    fn a_removed_group_loses_its_series_and_the_others_keep_theirs() {
        let m = Metrics::new();
        m.group_offsets_committed("f", "gone", 3);
        m.group_translation_staleness("f", "gone", 1.0);
        m.group_offsets_committed("f", "kept", 1);
        m.group_translation_staleness("f", "kept", 2.0);
        m.remove_group("f", "gone");
        let text = m.render();
        assert!(!text.contains("group=\"gone\""), "{text}");
        assert!(text.contains("strait_group_offsets_committed_total{flow=\"f\",group=\"kept\"} 1"));
        assert!(
            text.contains(
                "strait_group_translation_staleness_seconds{flow=\"f\",group=\"kept\"} 2.0"
            )
        );
    }
}
mod names {
    /// Every sample name with its label names, as rendered by the hand-written registry
    /// before the move to prometheus-client: what Prometheus stores must not change.
    const BEFORE: &[&str] = &[
        "strait_bytes_replicated_total{flow,partition,topic}",
        "strait_checkpoint_records_written_total{flow}",
        "strait_coalesced_bytes_copied_total{flow,partition,topic}",
        "strait_coalesced_input_batches_total{flow,partition,topic}",
        "strait_coalesced_output_batches_total{flow,partition,topic}",
        "strait_dropped_batches_total{flow,kind,partition,topic}",
        "strait_fetch_errors_total{flow,partition,topic}",
        "strait_fetch_retries_total{flow,partition,topic}",
        "strait_flow_up{flow}",
        "strait_group_offsets_committed_total{flow,group}",
        "strait_group_sync_groups_translated_total{flow}",
        "strait_group_translation_staleness_seconds{flow,group}",
        "strait_heartbeats_emitted_total{flow}",
        "strait_held_bytes{flow,partition,topic}",
        "strait_in_flight_bytes{flow}",
        "strait_incidents_total{flow,kind,partition,topic}",
        "strait_lag_offsets{flow,partition,topic}",
        "strait_lag_seconds{flow,partition,topic}",
        "strait_offset_map_runs{flow,partition,topic}",
        "strait_produce_errors_total{flow,partition,topic}",
        "strait_produce_retries_total{flow,partition,topic}",
        "strait_records_replicated_total{flow,partition,topic}",
        "strait_replication_latency_seconds_bucket{flow,le,topic}",
        "strait_replication_latency_seconds_count{flow,topic}",
        "strait_replication_latency_seconds_sum{flow,topic}",
        "strait_slow_path_batches_total{flow,partition,reason,topic}",
        "strait_state_records_written_total{flow}",
        "strait_topic_config_updates_total{flow}",
        "strait_topic_sync_failures_total{flow}",
        "strait_topics_created_total{flow}",
    ];

    /// `# HELP` lines of the hand-written registry (family name, help text).
    const HELP_BEFORE: &[&str] = &[
        "# HELP strait_records_replicated_total Records acknowledged by the target.",
        "# HELP strait_bytes_replicated_total Record batch bytes acknowledged by the target.",
        "# HELP strait_lag_offsets Source high watermark minus the next source offset to replicate.",
        "# HELP strait_lag_seconds Age of the newest acknowledged record when the partition is behind; 0 when caught up.",
        "# HELP strait_replication_latency_seconds Source record timestamp (max of the batch) to target acknowledgement.",
        "# HELP strait_fetch_errors_total Fetch failures affecting a partition.",
        "# HELP strait_fetch_retries_total Fetches of a partition retried after an error or a leader change.",
        "# HELP strait_produce_errors_total Batches the producer gave up on (after its own retries).",
        "# HELP strait_produce_retries_total Restarts of a partition's pipeline after a produce error (data is re-fetched).",
        "# HELP strait_slow_path_batches_total Source batches re-encoded instead of forwarded, by reason.",
        "# HELP strait_dropped_batches_total Source batches not forwarded: control markers and aborted transactions.",
        "# HELP strait_incidents_total Source truncation, topic re-creation, target mismatch, unsupported partition growth.",
        "# HELP strait_coalesced_input_batches_total Batches merged into larger ones while the partition's in-flight window was full.",
        "# HELP strait_coalesced_output_batches_total Merged batches produced by coalescing.",
        "# HELP strait_coalesced_bytes_copied_total Bytes written into merged batches by coalescing (copies of the inputs).",
        "# HELP strait_offset_map_runs Runs in the partition's offset map (1 for a topic without gaps).",
        "# HELP strait_in_flight_bytes Fetched bytes held by batches not yet acknowledged.",
        "# HELP strait_topics_created_total Target topics created.",
        "# HELP strait_topic_config_updates_total Target topic config changes applied.",
        "# HELP strait_topic_sync_failures_total Topic creations, config updates or growths that failed.",
        "# HELP strait_group_sync_groups_translated_total Consumer groups whose offsets were translated.",
        "# HELP strait_group_offsets_committed_total Translated offsets committed on the target.",
        "# HELP strait_group_translation_staleness_seconds Seconds since the group's offsets were last translated.",
        "# HELP strait_checkpoint_records_written_total MM2-compatible checkpoint records written.",
        "# HELP strait_heartbeats_emitted_total Heartbeat records written.",
        "# HELP strait_state_records_written_total Offset-map records written to the state topic.",
        "# HELP strait_flow_up 1 while the flow is replicating, 0 otherwise.",
    ];

    /// Sample names added since (new families; the ones above are unchanged).
    const ADDED: &[&str] = &[
        "strait_fetch_wait_seconds_bucket{flow,le}",
        "strait_fetch_wait_seconds_count{flow}",
        "strait_fetch_wait_seconds_sum{flow}",
        "strait_produce_ack_seconds_bucket{flow,le}",
        "strait_produce_ack_seconds_count{flow}",
        "strait_produce_ack_seconds_sum{flow}",
        "strait_replication_engine_latency_seconds_bucket{flow,le}",
        "strait_replication_engine_latency_seconds_count{flow}",
        "strait_replication_engine_latency_seconds_sum{flow}",
    ];

    #[test]
    fn sample_names_labels_and_help_texts_are_unchanged() {
        let text = super::tests_support::full().render();
        let mut expected: Vec<&str> = BEFORE.iter().chain(ADDED).copied().collect();
        expected.sort_unstable();
        assert_eq!(super::tests_support::shapes(&text), expected, "{text}");
        for before in HELP_BEFORE {
            let rest = before.strip_prefix("# HELP ").expect("help line");
            let (name, help) = rest.split_once(' ').expect("name and help");
            // OpenMetrics names a counter family without the `_total` of its sample.
            let family = name.strip_suffix("_total").unwrap_or(name);
            assert!(
                text.contains(&format!("# HELP {family} {help}\n")),
                "{before}\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}

mod tests_support {
    use super::*;
    /// A registry with a series in every family.
    pub(crate) fn full() -> Metrics {
        let m = Metrics::new();
        let h = m.partition("f", "t", 0);
        h.acked(7, 100, 0.02);
        h.engine_acked(std::time::Instant::now(), std::time::Instant::now());
        m.fetch_wait_handle("f").observe(0.01);
        h.lag(3, 1.5);
        h.map_runs(1);
        h.slow_path("gapped");
        h.coalesced(2, 10);
        h.dropped("control");
        h.fetch_error();
        h.produce_error();
        h.incident(IncidentKind::SourceTruncation);
        m.in_flight_bytes("all", 5);
        m.topic_created("f");
        m.topic_config_updates("f", 1);
        m.topic_sync_failure("f");
        m.groups_translated("f", 1);
        m.group_offsets_committed("f", "g", 1);
        m.group_translation_staleness("f", "g", 2.0);
        m.checkpoints_written("f", 1);
        m.heartbeat_emitted("f");
        m.state_records_written("f", 1);
        m.set_flow_state("f", FlowState::Running);
        m
    }
    /// Every sample line's name and sorted label names, sorted and deduplicated.
    pub(crate) fn shapes(text: &str) -> Vec<String> {
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let series = l.rsplit_once(' ').map_or(l, |(s, _)| s);
                let (name, labels) = series.split_once('{').unwrap_or((series, ""));
                let mut keys: Vec<&str> = labels
                    .trim_end_matches('}')
                    .split(',')
                    .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                    .collect();
                keys.sort_unstable();
                format!("{name}{{{}}}", keys.join(","))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}
