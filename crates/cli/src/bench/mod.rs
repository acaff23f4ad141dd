//! `strait bench`: makes Strait's speed measurable by anyone with two brokers.
//!
//! - the flags and their parsers are the command line's ([`crate::cli::bench`]).
//! - [`guard`]: the refusal of a cluster holding anything but benchmark topics (`--yes` overrides).
//! - [`load`]: the payload pool and the drain load generator.
//! - [`replicate`]: the generated config and the real engine on a runtime of its own.
//! - [`live`]: continuous replication while producing at a rate; end-to-end latency.
//! - [`measure`]: getrusage (process and per-thread), sampled RSS, VmHWM.
//! - [`verify`]: per-partition count + checksum of source and target.
//! - [`report`]: the text table and the JSON object.
//!
//! Exit status: 0 when verification passed (and, live, nothing was missing), 1 otherwise
//! (the report is printed either way).

pub mod guard;
pub mod live;
pub mod load;
pub mod measure;
pub mod replicate;
pub mod report;
pub mod verify;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use strait_client::Client;

pub use crate::cli::bench::BenchArgs;
use crate::cli::bench::Mode;
use crate::progress::{Bar, Unit};
use report::{BrokerCpu, Cpu, LiveReport, LoadReport, MemoryReport, ReplicationReport, Report};

/// Default engine fetch max wait in live mode (see [`BenchArgs::fetch_max_wait`]).
pub const LIVE_FETCH_MAX_WAIT: Duration = Duration::from_millis(20);

/// A client for one of the generated config's clusters (with its security settings).
async fn connect(config: &strait_mirror::config::Config, alias: &str) -> Result<Client> {
    let cluster = config
        .cluster(alias)
        .with_context(|| format!("no cluster {alias}"))?;
    let cfg =
        strait_mirror::connect::client_config(cluster).with_security(cluster.security.to_client()?);
    Ok(Client::connect(cfg).await?)
}

/// Runs `strait bench`.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    check_args(args)?;
    let topic = args.topic.clone().unwrap_or_else(|| {
        format!(
            "strait-bench-{}-{}",
            mode_name(args.mode),
            std::process::id()
        )
    });
    let config = bench_config(args, &topic)?;
    let target_topic = replicate::target_topic(&config, &topic)?;
    let rt = bench_runtime()?;
    let (source, target) = rt.block_on(connect_both(&config, args))?;
    if args.mode != Mode::Verify {
        if !args.yes && refused(&rt, args, &source, &target)? {
            return Ok(crate::exit::Exit::Refused.into());
        }
        rt.block_on(load::create_topic(&source, &topic, args.partitions))?;
    }
    let pool = Arc::new(load::PayloadPool::new(
        args.record_size as usize,
        load::POOL_SIZE,
        0x0057_4241_4954,
    ));
    let mut report = new_report(args, &config, &topic, &target_topic);
    let pair = TopicPair {
        rt: &rt,
        source: &source,
        target: &target,
        topic: &topic,
        target_topic: &target_topic,
        partitions: args.partitions,
    };
    match args.mode {
        Mode::Verify => {
            let v = pair.verify();
            report.ok = v.ok;
            report.verification = Some(v);
        }
        Mode::Drain | Mode::Load => run_drain(args, &pair, config, pool, &mut report)?,
        Mode::Live => run_live(args, &pair, config, pool, &mut report)?,
    }
    report.memory.process_peak_rss_bytes = measure::vm_hwm();
    drop(rt);
    print_report(args, &report)?;
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The bench's own runtime: load generator, verifier, live producer and tailer.
fn bench_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench")
        .enable_all()
        .build()
        .context("starting the bench runtime")
}

/// Refuses a record size outside 1 byte..16 MiB, and verify mode without a topic.
fn check_args(args: &BenchArgs) -> Result<()> {
    if args.record_size == 0 || args.record_size > 16 * 1024 * 1024 {
        bail!("--record-size must be between 1 byte and 16 MiB");
    }
    if args.mode == Mode::Verify && args.topic.is_none() {
        bail!("--mode verify compares an existing topic: give it with --topic");
    }
    Ok(())
}

/// The generated config for `topic`, with the mode's fetch max wait and the delivery
/// guarantee asked for.
fn bench_config(args: &BenchArgs, topic: &str) -> Result<strait_mirror::config::Config> {
    let fetch_max_wait = match args.mode {
        Mode::Drain | Mode::Load | Mode::Verify => args.fetch_max_wait,
        Mode::Live => Some(args.fetch_max_wait.unwrap_or(LIVE_FETCH_MAX_WAIT)),
    };
    let mut config = replicate::build_config(
        &args.source,
        &args.target,
        topic,
        fetch_max_wait,
        &args.engine,
        args.tls_ca.as_deref(),
    )?;
    if args.exactly_once {
        for f in &mut config.flows {
            f.delivery.guarantee = strait_mirror::config::delivery::Guarantee::ExactlyOnce;
            if let Some(i) = args.transaction_interval {
                f.delivery.transaction_interval = i;
            }
        }
    }
    Ok(config)
}

/// Clients for the source and the target, in that order.
async fn connect_both(
    config: &strait_mirror::config::Config,
    args: &BenchArgs,
) -> Result<(Client, Client)> {
    let s = connect(config, replicate::SOURCE_ALIAS)
        .await
        .with_context(|| format!("connecting to the source {}", args.source))?;
    let t = connect(config, replicate::TARGET_ALIAS)
        .await
        .with_context(|| format!("connecting to the target {}", args.target))?;
    Ok((s, t))
}

/// Whether the guard refuses either broker (then its reasons are printed on stderr).
fn refused(
    rt: &tokio::runtime::Runtime,
    args: &BenchArgs,
    source: &Client,
    target: &Client,
) -> Result<bool> {
    let refusals = rt.block_on(async {
        let s = guard::check(source, "source", &args.source).await?;
        let t = guard::check(target, "target", &args.target).await?;
        anyhow::Ok([s, t])
    })?;
    let refusals: Vec<String> = refusals.into_iter().flatten().collect();
    for r in &refusals {
        eprintln!("strait: {r}");
    }
    Ok(!refusals.is_empty())
}

/// The report's settings, with no phase measured yet.
fn new_report(
    args: &BenchArgs,
    config: &strait_mirror::config::Config,
    topic: &str,
    target_topic: &str,
) -> Report {
    Report {
        mode: args.mode,
        source: args.source.clone(),
        target: args.target.clone(),
        topic: topic.to_string(),
        target_topic: target_topic.to_string(),
        partitions: args.partitions,
        record_size: args.record_size,
        codec: args.codec,
        batch_size: args.batch_size,
        engine_fetch_max_wait_ms: config.engine.fetch_max_wait.as_millis() as u64,
        engine_workers: config.engine.worker_threads,
        guarantee: config
            .flows
            .first()
            .map_or("at_least_once", |f| f.delivery.guarantee.as_str()),
        load: None,
        replication: None,
        live: None,
        memory: MemoryReport::default(),
        verification: None,
        ok: false,
    }
}

/// The source topic and its copy on the target, with the runtime that reads them.
struct TopicPair<'a> {
    rt: &'a tokio::runtime::Runtime,
    source: &'a Client,
    target: &'a Client,
    topic: &'a str,
    target_topic: &'a str,
    partitions: i32,
}

impl TopicPair<'_> {
    /// Source and target, read to their high watermarks and compared.
    fn verify(&self) -> verify::Verification {
        self.rt.block_on(verify::verify(
            self.source,
            self.topic,
            self.target,
            self.target_topic,
            self.partitions,
        ))
    }
}

/// Drain and load modes: loads the source, then (drain) replicates it once and verifies.
fn run_drain(
    args: &BenchArgs,
    pair: &TopicPair<'_>,
    config: strait_mirror::config::Config,
    pool: Arc<load::PayloadPool>,
    report: &mut Report,
) -> Result<()> {
    let stats = load_source(args, pair, pool, report)?;
    if args.mode == Mode::Load {
        // The loaded topic is left for another process (`strait run --once`).
        report.ok = true;
        return Ok(());
    }
    let load_rate = report.load.as_ref().map(|l| l.mib_per_sec);
    replicate_once(args, config, &stats, load_rate, report)?;
    let display = Bar::start("verifying", Unit::Time, || (0, 0));
    let v = pair.verify();
    display.finish();
    report.ok = v.ok;
    report.verification = Some(v);
    Ok(())
}

/// Writes `--total` bytes to the source as fast as it takes them; reports the load and
/// the RSS before replication.
fn load_source(
    args: &BenchArgs,
    pair: &TopicPair<'_>,
    pool: Arc<load::PayloadPool>,
    report: &mut Report,
) -> Result<load::LoadStats> {
    let progress = Arc::new(load::Progress::default());
    let display = {
        let (p, total) = (progress.clone(), args.total);
        Bar::start("loading", Unit::Bytes, move || {
            (p.bytes.load(Ordering::Relaxed), total)
        })
    };
    let stats = pair.rt.block_on(load::drain_load(
        pair.source,
        pair.topic,
        args.partitions,
        pool,
        args.total,
        args.record_size,
        args.batch_size,
        args.codec.compression(),
        progress,
    ))?;
    display.finish();
    load::ensure_loaded(&stats)?;
    report.load = Some(LoadReport::new(
        stats.records,
        stats.value_bytes,
        stats.payload_bytes,
        stats.batches,
        stats.elapsed.as_secs_f64(),
    ));
    report.memory.rss_before_replication_bytes = measure::rss_now();
    Ok(stats)
}

/// Replicates the loaded topic with `Engine::run_once`; reports its cost and, when the
/// brokers' pids are known, theirs.
fn replicate_once(
    args: &BenchArgs,
    config: strait_mirror::config::Config,
    stats: &load::LoadStats,
    load_rate: Option<f64>,
    report: &mut Report,
) -> Result<()> {
    let display = Bar::start("replicating (Engine::run_once)", Unit::Time, || (0, 0));
    let brokers_before = args.broker_pids.map(broker_cpu);
    let (summary, cost) = replicate::run_once(config)?;
    let brokers_after = args.broker_pids.map(broker_cpu);
    display.finish();
    report.memory.replication_peak_rss_bytes = Some(cost.rss.peak_bytes).filter(|b| *b > 0);
    report.replication = Some(
        ReplicationReport::new(
            summary.records(),
            summary.bytes(),
            stats.value_bytes,
            cost.elapsed.as_secs_f64(),
            load_rate,
            Cpu::from(cost.engine_threads_cpu),
            Cpu::from(cost.process_cpu),
            Cpu::from(cost.rss.sampler_cpu),
        )
        .with_batches(
            stats.batches,
            summary.produced_batches(),
            summary.produce_requests(),
            cost.fetch_requests,
        ),
    );
    if let (Some(r), Some((s0, t0)), Some((s1, t1))) =
        (report.replication.as_mut(), brokers_before, brokers_after)
    {
        r.brokers = Some(BrokerCpu::new(
            Cpu::from(s1.since(s0)),
            Cpu::from(t1.since(t0)),
            summary.produce_requests(),
        ));
    }
    Ok(())
}

/// Live mode: replicates continuously while producing at `--rate` for `--duration`, then
/// verifies; reports latency, the engine's timings and CPU, and the peak RSS.
fn run_live(
    args: &BenchArgs,
    pair: &TopicPair<'_>,
    config: strait_mirror::config::Config,
    pool: Arc<load::PayloadPool>,
    report: &mut Report,
) -> Result<()> {
    report.memory.rss_before_replication_bytes = measure::rss_now();
    let sampler = measure::RssSampler::start(Duration::from_millis(10));
    let engine = replicate::LiveEngine::start(config)?;
    let result = produce_and_tail(args, pair, &engine, pool);
    let (engine_result, engine_cpu) = engine.stop();
    report.memory.replication_peak_rss_bytes = Some(sampler.finish().peak_bytes).filter(|b| *b > 0);
    let result = match (result, engine_result) {
        (Ok(r), Ok(())) => r,
        (Err(e), Err(engine_err)) => {
            return Err(e.context(format!("and the engine failed: {engine_err:#}")));
        }
        (Err(e), Ok(())) => return Err(e),
        (Ok(_), Err(e)) => return Err(e),
    };
    let v = pair.verify();
    report.ok = v.ok && result.missing == 0;
    report.verification = Some(v);
    report.live = Some(LiveReport {
        rate_mib_per_sec: args.rate,
        duration_secs: args.duration.as_secs_f64(),
        result,
        engine_cpu: Cpu::from(engine_cpu),
    });
    Ok(())
}

/// Produces to the source and tails the target while `engine` runs; the result carries
/// the engine's own timings over the run and its catch-up (read before it stops).
fn produce_and_tail(
    args: &BenchArgs,
    pair: &TopicPair<'_>,
    engine: &replicate::LiveEngine,
    pool: Arc<load::PayloadPool>,
) -> Result<live::LiveResult> {
    let progress = Arc::new(load::Progress::default());
    let display = {
        let p = progress.clone();
        Bar::start("live (producing)", Unit::Bytes, move || {
            (p.bytes.load(Ordering::Relaxed), 0)
        })
    };
    let params = live::LiveParams {
        topic: pair.topic.to_string(),
        target_topic: pair.target_topic.to_string(),
        partitions: args.partitions,
        record_size: args.record_size,
        rate_mib: args.rate,
        duration: args.duration,
        compression: args.codec.compression(),
    };
    let alive = || !engine.is_finished();
    let result = pair.rt.block_on(live::run(
        pair.source,
        pair.target,
        &params,
        pool,
        progress,
        &alive,
    ));
    display.finish();
    let (fetch_wait, fetch_to_ack, produce_to_ack) = engine.timings();
    result.map(|mut r| {
        r.engine_fetch_wait_ms = live::Percentiles::of_histogram(&fetch_wait);
        r.engine_fetch_to_ack_ms = live::Percentiles::of_histogram(&fetch_to_ack);
        r.engine_produce_to_ack_ms = live::Percentiles::of_histogram(&produce_to_ack);
        r
    })
}

/// Prints the report: one JSON object with `--json`, else the text table.
fn print_report(args: &BenchArgs, report: &Report) -> Result<()> {
    if args.json {
        println!(
            "{}",
            serde_json::to_string(report).context("encoding the report")?
        );
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Drain => "drain",
        Mode::Live => "live",
        Mode::Load => "load",
        Mode::Verify => "verify",
    }
}

/// The source and target brokers' CPU so far (zeros for a process that is gone: the
/// phase's figure then reads 0, never a made-up difference).
fn broker_cpu((source, target): (u32, u32)) -> (measure::CpuSnapshot, measure::CpuSnapshot) {
    (
        measure::process_cpu(source).unwrap_or_default(),
        measure::process_cpu(target).unwrap_or_default(),
    )
}
