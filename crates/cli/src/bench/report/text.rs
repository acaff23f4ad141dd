//! The report as a two-column text table, section by section.

use super::{LiveReport, LoadReport, MIB, MemoryReport, ReplicationReport, Report};
use crate::bench::live::Percentiles;

/// One line of the table: its label and its value.
type Row = (String, String);

/// Bytes as MiB, one decimal.
fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / MIB)
}

/// A latency distribution as p50 / p90 / p99 / max, in ms, with its sample count.
fn pct(p: &Percentiles) -> String {
    format!(
        "p50 {:.1} / p90 {:.1} / p99 {:.1} / max {:.1} ms ({} samples)",
        p.p50, p.p90, p.p99, p.max, p.samples
    )
}

impl Report {
    /// The report as a two-column text table.
    pub fn text(&self) -> String {
        let mut rows = self.settings_rows();
        if let Some(l) = &self.load {
            rows.push(load_row(l));
        }
        if let Some(r) = &self.replication {
            replication_rows(r, &mut rows);
        }
        if let Some(l) = &self.live {
            live_rows(l, &mut rows);
        }
        rows.push(memory_row(&self.memory));
        if let Some(v) = &self.verification {
            rows.push(("verification".into(), v.summary()));
        }
        align(rows)
    }

    /// The settings: mode, brokers, topics, records and engine.
    fn settings_rows(&self) -> Vec<Row> {
        vec![
            ("mode".into(), format!("{:?}", self.mode).to_lowercase()),
            (
                "source → target".into(),
                format!("{} → {}", self.source, self.target),
            ),
            (
                "topic".into(),
                format!(
                    "{} → {} ({} partitions)",
                    self.topic, self.target_topic, self.partitions
                ),
            ),
            (
                "records".into(),
                format!(
                    "{} B values, codec {}, batches of {} KiB (uncompressed)",
                    self.record_size,
                    format!("{:?}", self.codec).to_lowercase(),
                    self.batch_size / 1024
                ),
            ),
            (
                "engine".into(),
                format!(
                    "fetch_max_wait {} ms, {} worker threads, {}",
                    self.engine_fetch_max_wait_ms, self.engine_workers, self.guarantee
                ),
            ),
        ]
    }
}

/// The load phase: what was written to the source, how fast.
fn load_row(l: &LoadReport) -> Row {
    (
        "load (source ingest)".into(),
        format!(
            "{} in {:.2} s: {:.1} MiB/s, {:.0} records/s ({} records, {} batches)",
            mib(l.value_bytes),
            l.secs,
            l.mib_per_sec,
            l.records_per_sec,
            l.records,
            l.batches
        ),
    )
}

/// The replication phase: its rate, and the engine's, brokers' and process's CPU.
fn replication_rows(r: &ReplicationReport, rows: &mut Vec<Row>) {
    rows.push((
        "replication".into(),
        format!(
            "{:.2} s: {:.1} MiB/s of values, {:.1} MiB/s of batches, {:.0} records/s",
            r.secs, r.mib_per_sec, r.batch_mib_per_sec, r.records_per_sec
        ),
    ));
    if let Some(v) = r.vs_load {
        rows.push((
            "replication / load rate".into(),
            format!("{:.0} %", v * 100.0),
        ));
    }
    engine_and_broker_cpu_rows(r, rows);
    rows.push((
        "process CPU (phase)".into(),
        format!(
            "{:.2} s user + {:.2} s sys = {:.2} s/GiB of batches (sampler {:.3} s)",
            r.process_cpu.user_secs,
            r.process_cpu.sys_secs,
            r.process_cpu_secs_per_gib_batches,
            r.sampler_cpu.total()
        ),
    ));
}

/// The replication phase's CPU: the engine's, per GiB and per unit, and the brokers'.
fn engine_and_broker_cpu_rows(r: &ReplicationReport, rows: &mut Vec<Row>) {
    rows.push((
        "engine CPU".into(),
        format!(
            "{:.2} s user + {:.2} s sys = {:.2} s/GiB of batches ({} moved), {:.2} s/GiB of values",
            r.engine_cpu.user_secs,
            r.engine_cpu.sys_secs,
            r.cpu_secs_per_gib_batches,
            mib(r.batch_bytes),
            r.cpu_secs_per_gib_values
        ),
    ));
    if let Some(b) = &r.per_batch {
        rows.push((
            "engine CPU per unit".into(),
            format!(
                "{:.1} µs per source batch ({}), {:.1} µs per produced batch ({}), {:.1} µs per Produce request ({})",
                b.cpu_us_per_source_batch,
                b.source_batches,
                b.cpu_us_per_produced_batch,
                b.produced_batches,
                b.cpu_us_per_request,
                b.produce_requests
            ),
        ));
    }
    if let Some(b) = &r.brokers {
        rows.push((
            "broker CPU (phase)".into(),
            format!(
                "source {:.2} s, target {:.2} s ({:.1} µs per Produce request)",
                b.source.total(),
                b.target.total(),
                b.target_us_per_produce_request
            ),
        ));
    }
}

/// Live mode: the rate achieved, the latencies, whether the engine kept up, its CPU.
fn live_rows(l: &LiveReport, rows: &mut Vec<Row>) {
    let r = &l.result;
    rows.push((
        "live produce".into(),
        format!(
            "{:.1} MiB/s asked, {:.1} MiB/s achieved for {:.0} s, {} records",
            l.rate_mib_per_sec, r.achieved_mib_per_sec, l.duration_secs, r.produced
        ),
    ));
    rows.push(("latency ack → readable".into(), pct(&r.ack_to_readable_ms)));
    rows.push((
        "latency send → readable".into(),
        pct(&r.send_to_readable_ms),
    ));
    rows.push(("source produce latency".into(), pct(&r.send_to_ack_ms)));
    rows.push(("engine fetch wait".into(), pct(&r.engine_fetch_wait_ms)));
    rows.push((
        "engine fetch → target ack".into(),
        pct(&r.engine_fetch_to_ack_ms),
    ));
    rows.push((
        "of which produce → target ack".into(),
        pct(&r.engine_produce_to_ack_ms),
    ));
    rows.push(("tailer fetch wait".into(), pct(&r.tail_wait_ms)));
    rows.push((
        "kept up".into(),
        format!(
            "{}: lag {} records at the last ack ({} not yet written to the target), \
                 caught up in {:.3} s; {} missing, {} duplicates",
            if r.kept_up { "yes" } else { "NO" },
            r.lag_at_end_records,
            r.engine_lag_at_end_records,
            r.catch_up_secs,
            r.missing,
            r.duplicates
        ),
    ));
    rows.push((
        "engine CPU (whole run)".into(),
        format!(
            "{:.2} s user + {:.2} s sys",
            l.engine_cpu.user_secs, l.engine_cpu.sys_secs
        ),
    ));
}

/// Memory: peak RSS during replication, RSS before it, and the process's VmHWM.
fn memory_row(m: &MemoryReport) -> Row {
    let opt = |b: Option<u64>| b.map(mib).unwrap_or_else(|| "n/a".into());
    (
        "memory".into(),
        format!(
            "replication peak RSS {} (sampled; {} at start), process VmHWM {} (includes load and verify)",
            opt(m.replication_peak_rss_bytes),
            opt(m.rss_before_replication_bytes),
            opt(m.process_peak_rss_bytes)
        ),
    )
}

/// The rows as text, labels padded to the widest.
fn align(rows: Vec<Row>) -> String {
    let w = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        out.push_str(&format!("{k:<w$}  {v}\n"));
    }
    out
}
