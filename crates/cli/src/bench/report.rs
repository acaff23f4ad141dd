//! The bench report: one serde struct, printed as a text table or as one JSON object.

use serde::Serialize;

use super::live::LiveResult;
use super::verify::Verification;
use crate::cli::bench::{Codec, Mode};

mod text;

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Everything `strait bench` measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// drain or live.
    pub mode: Mode,
    /// Source broker.
    pub source: String,
    /// Target broker.
    pub target: String,
    /// Source topic.
    pub topic: String,
    /// Target topic.
    pub target_topic: String,
    /// Partitions.
    pub partitions: i32,
    /// Value bytes per record.
    pub record_size: u64,
    /// Load codec.
    pub codec: Codec,
    /// Load batch size (uncompressed bytes).
    pub batch_size: u64,
    /// The engine's `fetch_max_wait` in ms.
    pub engine_fetch_max_wait_ms: u64,
    /// Worker threads of the engine's runtime.
    pub engine_workers: usize,
    /// `delivery.guarantee` of the flow (`at_least_once`, `exactly_once`).
    pub guarantee: &'static str,
    /// The drain load.
    pub load: Option<LoadReport>,
    /// The replication phase.
    pub replication: Option<ReplicationReport>,
    /// Live mode.
    pub live: Option<LiveReport>,
    /// Memory.
    pub memory: MemoryReport,
    /// Source vs target.
    pub verification: Option<Verification>,
    /// Verification passed (and, live, nothing missing).
    pub ok: bool,
}

/// The drain load phase.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Records written.
    pub records: u64,
    /// Value bytes.
    pub value_bytes: u64,
    /// Key + value + header bytes.
    pub payload_bytes: u64,
    /// Batches.
    pub batches: u64,
    /// Seconds from first send to last ack.
    pub secs: f64,
    /// Value MiB per second.
    pub mib_per_sec: f64,
    /// Records per second.
    pub records_per_sec: f64,
}

impl LoadReport {
    /// Builds the rates from the counts.
    pub fn new(
        records: u64,
        value_bytes: u64,
        payload_bytes: u64,
        batches: u64,
        secs: f64,
    ) -> Self {
        let s = secs.max(1e-9);
        LoadReport {
            records,
            value_bytes,
            payload_bytes,
            batches,
            secs,
            mib_per_sec: value_bytes as f64 / MIB / s,
            records_per_sec: records as f64 / s,
        }
    }
}

/// CPU seconds, split.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Cpu {
    /// User seconds.
    pub user_secs: f64,
    /// System seconds.
    pub sys_secs: f64,
}

impl Cpu {
    /// From a measure snapshot.
    pub fn from(s: super::measure::CpuSnapshot) -> Cpu {
        Cpu {
            user_secs: s.user_us as f64 / 1e6,
            sys_secs: s.sys_us as f64 / 1e6,
        }
    }

    /// User + system.
    pub fn total(&self) -> f64 {
        self.user_secs + self.sys_secs
    }
}

/// The replication phase (drain: `Engine::run_once`).
#[derive(Debug, Clone, Serialize)]
pub struct ReplicationReport {
    /// Records the engine reported.
    pub records: u64,
    /// Record-batch bytes the engine reported moving (as stored, i.e. compressed).
    pub batch_bytes: u64,
    /// Seconds.
    pub secs: f64,
    /// Value MiB (uncompressed, as loaded) per second.
    pub mib_per_sec: f64,
    /// Batch MiB (as stored) per second.
    pub batch_mib_per_sec: f64,
    /// Records per second.
    pub records_per_sec: f64,
    /// Replication rate / load rate (the brokers' ingest rate), value bytes.
    pub vs_load: Option<f64>,
    /// CPU of the engine runtime's threads (RUSAGE_THREAD sums).
    pub engine_cpu: Cpu,
    /// CPU of the whole process over the phase (RUSAGE_SELF delta), includes the sampler.
    pub process_cpu: Cpu,
    /// CPU of the RSS sampler thread (part of process_cpu).
    pub sampler_cpu: Cpu,
    /// Engine CPU seconds per GiB of batch bytes moved: the figure compared with the
    /// byte-relay floor.
    pub cpu_secs_per_gib_batches: f64,
    /// Engine CPU seconds per GiB of values (uncompressed).
    pub cpu_secs_per_gib_values: f64,
    /// Process CPU seconds per GiB of batch bytes.
    pub process_cpu_secs_per_gib_batches: f64,
    /// Per-batch cost: the engine's CPU per source batch forwarded, per batch produced
    /// (after coalescing) and per Produce request.
    pub per_batch: Option<PerBatch>,
    /// The brokers' own CPU over the phase (`--broker-pids`).
    pub brokers: Option<BrokerCpu>,
}

/// The local brokers' CPU over the replication phase (`/proc/PID/stat`, 10 ms ticks).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct BrokerCpu {
    /// The source broker (serving the engine's fetches).
    pub source: Cpu,
    /// The target broker (serving the engine's Produce requests).
    pub target: Cpu,
    /// Target broker CPU µs per Produce request the engine sent (0 without requests).
    pub target_us_per_produce_request: f64,
}

impl BrokerCpu {
    /// The phase's broker CPU, and the target's per Produce request of `requests`.
    pub fn new(source: Cpu, target: Cpu, requests: u64) -> Self {
        BrokerCpu {
            source,
            target,
            target_us_per_produce_request: if requests == 0 {
                0.0
            } else {
                target.total() * 1e6 / requests as f64
            },
        }
    }
}

/// Engine CPU per unit of work (the per-batch cost issue 16 tracks).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct PerBatch {
    /// Source batches (as loaded).
    pub source_batches: u64,
    /// Batches the producer sent (after coalescing; retries counted).
    pub produced_batches: u64,
    /// Produce requests sent.
    pub produce_requests: u64,
    /// Fetch requests the flow's fetchers sent (the count of `strait_fetch_wait_seconds`).
    pub fetch_requests: u64,
    /// Engine CPU µs per source batch.
    pub cpu_us_per_source_batch: f64,
    /// Engine CPU µs per produced batch.
    pub cpu_us_per_produced_batch: f64,
    /// Engine CPU µs per Produce request.
    pub cpu_us_per_request: f64,
}

impl PerBatch {
    /// The per-unit costs of `engine_cpu_secs`.
    pub fn new(
        engine_cpu_secs: f64,
        source: u64,
        produced: u64,
        requests: u64,
        fetches: u64,
    ) -> Self {
        let per = |n: u64| {
            if n == 0 {
                0.0
            } else {
                engine_cpu_secs * 1e6 / n as f64
            }
        };
        PerBatch {
            source_batches: source,
            produced_batches: produced,
            produce_requests: requests,
            fetch_requests: fetches,
            cpu_us_per_source_batch: per(source),
            cpu_us_per_produced_batch: per(produced),
            cpu_us_per_request: per(requests),
        }
    }
}

impl ReplicationReport {
    /// Builds the rates.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        records: u64,
        batch_bytes: u64,
        value_bytes: u64,
        secs: f64,
        load_mib_per_sec: Option<f64>,
        engine_cpu: Cpu,
        process_cpu: Cpu,
        sampler_cpu: Cpu,
    ) -> Self {
        let s = secs.max(1e-9);
        let mib_per_sec = value_bytes as f64 / MIB / s;
        let per_gib = |cpu: f64, bytes: u64| {
            if bytes == 0 {
                0.0
            } else {
                cpu / (bytes as f64 / GIB)
            }
        };
        ReplicationReport {
            records,
            batch_bytes,
            secs,
            mib_per_sec,
            batch_mib_per_sec: batch_bytes as f64 / MIB / s,
            records_per_sec: records as f64 / s,
            vs_load: load_mib_per_sec
                .filter(|l| *l > 0.0)
                .map(|l| mib_per_sec / l),
            engine_cpu,
            process_cpu,
            sampler_cpu,
            cpu_secs_per_gib_batches: per_gib(engine_cpu.total(), batch_bytes),
            cpu_secs_per_gib_values: per_gib(engine_cpu.total(), value_bytes),
            process_cpu_secs_per_gib_batches: per_gib(process_cpu.total(), batch_bytes),
            per_batch: None,
            brokers: None,
        }
    }

    /// With the per-batch cost: `source` batches loaded, `produced` batches, `requests`
    /// Produce requests and `fetches` Fetch requests the engine sent.
    pub fn with_batches(mut self, source: u64, produced: u64, requests: u64, fetches: u64) -> Self {
        self.per_batch = Some(PerBatch::new(
            self.engine_cpu.total(),
            source,
            produced,
            requests,
            fetches,
        ));
        self
    }
}

/// Live mode.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    /// Requested rate, MiB/s of values.
    pub rate_mib_per_sec: f64,
    /// Production window, s.
    pub duration_secs: f64,
    /// What was measured.
    #[serde(flatten)]
    pub result: LiveResult,
    /// CPU of the engine runtime's threads over the whole live run.
    pub engine_cpu: Cpu,
}

/// Memory.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct MemoryReport {
    /// VmHWM: peak RSS of the whole process (load generator and verifier included).
    pub process_peak_rss_bytes: Option<u64>,
    /// RSS when the replication phase started.
    pub rss_before_replication_bytes: Option<u64>,
    /// Highest RSS sampled (every 10 ms, /proc/self/statm) during replication.
    pub replication_peak_rss_bytes: Option<u64>,
}

#[cfg(test)]
mod tests;
