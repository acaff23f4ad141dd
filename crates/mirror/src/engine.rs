//! The engine: every enabled flow of a config, continuously ([`Engine::run`]) or once
//! ([`Engine::run_once`]).

use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Config;
use crate::datapath::budget::Budget;
use crate::error::MirrorError;
use crate::flow::{FlowSummary, run_flow};
use crate::metrics::Metrics;

/// What a `--once` run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// Per flow.
    pub flows: Vec<FlowSummary>,
    /// Wall time.
    pub elapsed: Duration,
}

impl RunSummary {
    /// Topics over all flows.
    pub fn topics(&self) -> usize {
        self.flows.iter().map(|f| f.topics).sum()
    }

    /// Partitions over all flows.
    pub fn partitions(&self) -> usize {
        self.flows.iter().map(|f| f.partitions).sum()
    }

    /// Records over all flows.
    pub fn records(&self) -> u64 {
        self.flows.iter().map(|f| f.records).sum()
    }

    /// Produce requests over all flows.
    pub fn produce_requests(&self) -> u64 {
        self.flows.iter().map(|f| f.produce_requests).sum()
    }

    /// Produced batches over all flows.
    pub fn produced_batches(&self) -> u64 {
        self.flows.iter().map(|f| f.produced_batches).sum()
    }

    /// Bytes over all flows.
    pub fn bytes(&self) -> u64 {
        self.flows.iter().map(|f| f.bytes).sum()
    }

    /// Groups translated over all flows.
    pub fn groups_translated(&self) -> usize {
        self.flows.iter().map(|f| f.groups_translated).sum()
    }

    /// Throughput in MiB/s (0 for an instant run).
    pub fn mib_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.bytes() as f64 / (1024.0 * 1024.0) / secs
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for RunSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for fl in &self.flows {
            writeln!(
                f,
                "flow {}: {} topic(s), {} partition(s), {} record(s), {} byte(s), {} group(s) translated; \
                 {} batch(es) produced in {} Produce request(s), offset maps {} byte(s)",
                fl.flow,
                fl.topics,
                fl.partitions,
                fl.records,
                fl.bytes,
                fl.groups_translated,
                fl.produced_batches,
                fl.produce_requests,
                fl.offset_map_bytes
            )?;
        }
        write!(
            f,
            "total: {} topic(s), {} partition(s), {} record(s), {:.1} MiB in {:.2} s ({:.1} MiB/s), {} group(s) translated",
            self.topics(),
            self.partitions(),
            self.records(),
            self.bytes() as f64 / (1024.0 * 1024.0),
            self.elapsed.as_secs_f64(),
            self.mib_per_sec(),
            self.groups_translated()
        )
    }
}

/// Runs the flows of a config.
#[derive(Debug, Clone)]
pub struct Engine {
    config: Config,
    metrics: Metrics,
}

impl Engine {
    /// An engine for `config` with a fresh metrics registry.
    pub fn new(config: Config) -> Self {
        Engine {
            config,
            metrics: Metrics::new(),
        }
    }

    /// The metrics registry (serve it with [`crate::metrics::http::MetricsServer`]).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Replicates every enabled flow until `shutdown` completes, then stops gracefully:
    /// fetching stops, in-flight batches are acknowledged and recorded, state is written.
    ///
    /// Flows are isolated: a flow stopped by an error (an incident under policy `fail`, a
    /// configuration error, or a failure to start) does not stop the others, which keep
    /// replicating while `/health` names the failed flow (503). `Err` (the first flow's
    /// error) once every flow ended, if any failed — also after a graceful stop.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), MirrorError> {
        self.run_flows(false, shutdown).await.map(|_| ())
    }

    /// Replicates every selected partition up to the source end seen at start, syncs
    /// groups once, writes state and returns what was done. A flow that fails does not
    /// stop the others; `Err` (the first flow's error) when any failed.
    pub async fn run_once(&self) -> Result<RunSummary, MirrorError> {
        self.run_flows(true, std::future::pending()).await
    }

    async fn run_flows(
        &self,
        once: bool,
        shutdown: impl Future<Output = ()>,
    ) -> Result<RunSummary, MirrorError> {
        let started = Instant::now();
        let (stop_tx, stop_rx) = watch::channel(false);
        let budget = Budget::new(self.config.engine.in_flight_memory);
        let mut flows = self.spawn_flows(once, &stop_rx, &budget);
        if flows.is_empty() {
            return Err(MirrorError::other("no enabled flow in the config"));
        }
        let reporter = tokio::spawn(report_in_flight(budget, self.metrics.clone()));
        let bound = self.stop_bound();
        // Armed when the stop begins: a flow still running then is cancelled.
        let stop_by = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(shutdown, stop_by);
        let mut armed = false;
        let mut ended = Ended::default();
        let mut shutting_down = false;
        loop {
            if shutting_down && !armed {
                armed = true;
                stop_by.as_mut().reset(tokio::time::Instant::now() + bound);
            }
            tokio::select! {
                _ = &mut stop_by, if armed => {
                    tracing::error!(flows = flows.len(),
                        "flows did not stop within {bound:?}; cancelling them (the next run \
                         recovers from the last state written)");
                    flows.abort_all();
                    while flows.join_next().await.is_some() {}
                    ended.first_error.get_or_insert(MirrorError::other(format!(
                        "flows did not stop within {bound:?} of the stop"
                    )));
                    break;
                }
                _ = &mut shutdown, if !shutting_down => {
                    tracing::info!("stopping: finishing in-flight batches and writing state");
                    shutting_down = true;
                    let _ = stop_tx.send(true);
                }
                done = flows.join_next() => match done {
                    None => break,
                    Some(done) => ended.flow(done, flows.len()),
                },
            }
        }
        reporter.abort();
        ended.result(started)
    }

    /// Starts every enabled flow, each told to stop by `stop` and sharing `budget`.
    fn spawn_flows(
        &self,
        once: bool,
        stop: &watch::Receiver<bool>,
        budget: &Budget,
    ) -> JoinSet<Result<FlowSummary, MirrorError>> {
        let mut flows = JoinSet::new();
        for flow in self.config.enabled_flows() {
            flows.spawn(run_flow(
                flow.clone(),
                self.config.clone(),
                self.metrics.clone(),
                budget.clone(),
                once,
                stop.clone(),
            ));
        }
        flows
    }
}

/// What the flows of a run ended with, gathered as each ends.
#[derive(Default)]
struct Ended {
    summaries: Vec<FlowSummary>,
    first_error: Option<MirrorError>,
    failed: usize,
}

impl Ended {
    /// A flow's task ended (`running`: flows still running); an error is logged, and the
    /// first one kept.
    fn flow(
        &mut self,
        done: Result<Result<FlowSummary, MirrorError>, tokio::task::JoinError>,
        running: usize,
    ) {
        match done {
            Ok(Ok(s)) => self.summaries.push(s),
            Ok(Err(e)) => {
                tracing::error!(error = %e, flows = running,
                    "flow stopped by an error; the other flows keep replicating \
                     (/health reports it)");
                self.failed += 1;
                self.first_error.get_or_insert(e);
            }
            Err(e) => {
                tracing::error!(error = %e, "flow task failed; the other flows keep replicating");
                self.failed += 1;
                self.first_error
                    .get_or_insert(MirrorError::other(format!("flow task failed: {e}")));
            }
        }
    }

    /// The run's result once every flow ended: the first error, else every flow's summary
    /// (by name) and the wall time since `started`.
    fn result(mut self, started: Instant) -> Result<RunSummary, MirrorError> {
        if self.failed > 1 {
            tracing::error!(
                flows = self.failed,
                "more than one flow failed (each is logged above)"
            );
        }
        match self.first_error {
            Some(e) => Err(e),
            None => {
                self.summaries.sort_by(|a, b| a.flow.cmp(&b.flow));
                Ok(RunSummary {
                    flows: self.summaries,
                    elapsed: started.elapsed(),
                })
            }
        }
    }
}

impl Engine {
    /// How long a stop may take: a flow gives its in-flight batches, then its final state
    /// write, its target's request timeout each; a few seconds more for the rest.
    pub fn stop_bound(&self) -> Duration {
        let slowest = self
            .config
            .enabled_flows()
            .filter_map(|f| self.config.cluster(&f.target))
            .map(|c| c.request_timeout)
            .max()
            .unwrap_or(Duration::from_secs(30));
        slowest * 2 + Duration::from_secs(5)
    }
}

async fn report_in_flight(budget: Budget, metrics: Metrics) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        metrics.in_flight_bytes("all", budget.used());
    }
}
