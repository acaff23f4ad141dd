//! `strait bench` flags, and the size / duration / rate parsers they use.

use std::time::Duration;

use clap::{Args, ValueEnum};
use strait_records::Compression;

/// `strait bench`: load a source topic, replicate it with the real engine, verify, report.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Source broker, `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT")]
    pub source: String,
    /// Target broker, `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT")]
    pub target: String,
    /// Connect to both brokers over TLS, verifying them against this CA bundle (PEM);
    /// the engine and the bench's own clients alike (`protocol = "ssl"`).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Source topic to create and load (default `strait-bench-<mode>-<pid>`).
    #[arg(long, value_name = "T")]
    pub topic: Option<String>,
    /// Partitions of the source topic (up to 10,000: the scaling sweep's largest case).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=10_000))]
    pub partitions: i32,
    /// Size of one record value in bytes (key and header come on top).
    #[arg(long, default_value = "1024", value_parser = parse_size)]
    pub record_size: u64,
    /// Drain mode: uncompressed bytes of record values to load.
    #[arg(long, default_value = "512MiB", value_parser = parse_size)]
    pub total: u64,
    /// Codec of the loaded batches.
    #[arg(long, value_enum, default_value_t = Codec::None)]
    pub codec: Codec,
    /// Uncompressed size at which the load generator cuts a batch.
    #[arg(long, default_value = "16KiB", value_parser = parse_size)]
    pub batch_size: u64,
    /// drain: load, then replicate what exists; live: replicate while producing.
    #[arg(long, value_enum, default_value_t = Mode::Drain)]
    pub mode: Mode,
    /// Live mode: produce rate in MiB/s of record values.
    #[arg(long, default_value = "20", value_parser = parse_rate)]
    pub rate: f64,
    /// Live mode: how long to produce.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// The engine's fetch max wait (`engine.fetch_max_wait`). Default: the config default
    /// in drain mode, 20ms in live mode (Tansu answers a parked fetch after max_wait/2, so
    /// this bounds live latency on Tansu).
    #[arg(long, value_parser = parse_duration)]
    pub fetch_max_wait: Option<Duration>,
    /// Any other `[engine]` key of the generated config, as `KEY=TOML-VALUE`
    /// (e.g. `--engine worker_threads=2`, `--engine in_flight_memory='"64MiB"'`);
    /// repeatable. The engine runs on `engine.worker_threads` threads, as `strait run` does.
    #[arg(long = "engine", value_name = "KEY=VALUE", value_parser = parse_engine_setting)]
    pub engine: Vec<(String, String)>,
    /// Print one JSON object on stdout instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Replicate with `delivery.guarantee = "exactly_once"` (default transaction interval);
    /// the target is read as a `read_committed` consumer sees it.
    #[arg(long)]
    pub exactly_once: bool,
    /// Process ids of the source and the target broker, `SRC,DST` (local brokers): their
    /// CPU (`/proc/PID/stat` utime + stime) over the replication phase is reported.
    #[arg(long, value_name = "SRC,DST", value_parser = parse_pids)]
    pub broker_pids: Option<(u32, u32)>,
    /// Write into a source or target that holds topics other than benchmark and internal
    /// ones (refused otherwise, exit 4: the bench loads hundreds of MiB).
    #[arg(long)]
    pub yes: bool,
    /// With `--exactly-once`: `delivery.transaction_interval` (default: the config's).
    #[arg(long, value_parser = parse_duration, requires = "exactly_once")]
    pub transaction_interval: Option<Duration>,
}

/// What the bench does.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Load the source, then replicate it (`Engine::run_once`) and verify.
    Drain,
    /// Replicate continuously (`Engine::run`) while producing at `--rate`; measure latency.
    Live,
    /// Only load the source, as `drain` does, and leave the topic for another process
    /// (`scripts/bench` times `strait run --once` on it as a process of its own).
    Load,
    /// Only verify: compare an existing `--topic` (which must be given) with its copy on
    /// the target (`prefix` naming, as the generated config has it), e.g. after
    /// `strait run --once` replicated a `load`.
    Verify,
}

/// Batch codec of the load.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    /// Uncompressed.
    None,
    /// gzip.
    Gzip,
    /// Snappy.
    Snappy,
    /// LZ4.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Codec {
    /// The strait-records codec.
    pub fn compression(self) -> Compression {
        match self {
            Codec::None => Compression::None,
            Codec::Gzip => Compression::Gzip,
            Codec::Snappy => Compression::Snappy,
            Codec::Lz4 => Compression::Lz4,
            Codec::Zstd => Compression::Zstd,
        }
    }
}

/// Parses `SRC,DST` process ids for `--broker-pids`.
pub fn parse_pids(text: &str) -> Result<(u32, u32), String> {
    let parse = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("`{text}`: expected two process ids, SRC,DST"))
    };
    match text.split_once(',') {
        Some((a, b)) => Ok((parse(a)?, parse(b)?)),
        None => Err(format!("`{text}`: expected two process ids, SRC,DST")),
    }
}

/// Parses `KEY=VALUE` for `--engine`; the value is checked later, by the config loader.
pub fn parse_engine_setting(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            let key = k.trim();
            if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`{key}`: an [engine] key is letters, digits and `_`"
                ));
            }
            Ok((key.to_owned(), v.trim().to_owned()))
        }
        _ => Err(format!(
            "`{text}`: expected KEY=VALUE, e.g. coalesce_max_bytes='\"256KiB\"'"
        )),
    }
}

/// `"1.5GiB"` → `(1.5, "GiB")`: the leading decimal number and the (trimmed) rest.
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    Some((num.parse().ok()?, unit.trim()))
}

/// Parses `512MiB`, `16KiB`, `1GiB`, `64MB`, `1000` (bytes). Binary units are powers of
/// 1024, decimal ones (`KB`, `MB`, `GB`) powers of 1000.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (n, unit) = number_and_unit(text)
        .ok_or_else(|| format!("`{text}`: expected a size like 512MiB, 16KiB or 1024"))?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        other => return Err(format!("`{text}`: unknown size unit `{other}`")),
    };
    let bytes = n * mult;
    if !(1.0..=(1u64 << 50) as f64).contains(&bytes) {
        return Err(format!("`{text}`: out of range"));
    }
    Ok(bytes as u64)
}

/// Parses `60s`, `500ms`, `2m`, `1h`, `1.5s`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (n, unit) = number_and_unit(text)
        .ok_or_else(|| format!("`{text}`: expected a duration like 60s or 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("`{text}`: unknown duration unit `{other}`")),
    };
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("`{text}`: out of range (at most 24h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a rate in MiB/s: `20`, `20MiB/s`, `20MiB`.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let t = t.strip_suffix("MiB").unwrap_or(t).trim();
    let r: f64 = t
        .parse()
        .map_err(|_| format!("`{text}`: expected a rate in MiB/s like 20"))?;
    if !(r > 0.0 && r <= 100_000.0) {
        return Err(format!("`{text}`: out of range"));
    }
    Ok(r)
}

#[cfg(test)]
mod tests;
