//! Assembling a run: the parts every flow has, built once, in an order that matters —
//! connections, the producer (in exactly-once mode first of all: InitProducerId fences an
//! older process, so the state read next is final), the state topic read on from where
//! the flow's last start left off, the router that feeds the partitions, and the mode's
//! own state ([`Role`]: the transactional parts, or the scale-out membership).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strait_client::{Client, FetchOptions, IdempotentProducer, IsolationLevel, ProducerConfig};
use strait_offsets::Registry;
use strait_records::Limits;
use tokio::sync::{mpsc, watch};

use super::exactly_once::{self, Eos};
use super::mode::{Mode, Role, Slot};
use super::partitions::Partitions;
use super::scale_out::Scale;
use super::{FlowRun, SharedState};
use crate::config::{Cluster, Config, Flow};
use crate::connect::connect;
use crate::datapath::budget::Budget;
use crate::datapath::fetcher::{Recreation, Router};
use crate::datapath::sink::Sink;
use crate::error::MirrorError;
use crate::groups::GroupSync;
use crate::heartbeat::Heartbeats;
use crate::metrics::Metrics;
use crate::state::{self, SavedState, StateWriter};
use crate::topics::TopicSync;

/// What a run starts from: the flow in its mode, and what the process shares with it.
#[derive(Clone)]
pub(super) struct Start<'a> {
    /// The flow (a slot's: with the slot's `transactional.id`).
    pub flow: &'a Flow,
    /// Its mode, chosen once ([`Mode::of`]).
    pub mode: Mode,
    /// The whole config (clusters, engine).
    pub config: &'a Config,
    /// The process's metrics.
    pub metrics: Metrics,
    /// The process's in-flight budget.
    pub budget: Budget,
    /// `--once`: stop at the ends seen at start.
    pub once: bool,
    /// Exactly-once scale-out: the one slot this run replicates.
    pub slot: Option<Slot>,
    /// The flow's state topic as its runs read it.
    pub state: &'a SharedState,
}

/// The jobs a run hands to its control tasks once its partitions run.
pub(super) struct Parts {
    /// Topic discovery, creation and config sync.
    pub topic_sync: TopicSync,
    /// Whether the topic sync creates and re-configures target topics, where that changes
    /// after the first refresh (scale-out: only the control owner does).
    pub writes: Option<Arc<AtomicBool>>,
    /// Group offset sync.
    pub group_sync: GroupSync,
    /// Heartbeats to the target.
    pub heartbeats: Heartbeats,
}

impl FlowRun {
    /// Connects, starts the producer, reads the state and joins the group: a run ready to
    /// start its partitions, and the jobs of its control tasks.
    pub(super) async fn assemble(start: &Start<'_>) -> Result<(Self, Parts), MirrorError> {
        let Start {
            flow,
            mode,
            config,
            ref metrics,
            ref budget,
            once,
            slot: _,
            state,
        } = *start;
        let (target_cluster, source, target) = connect_both(config, flow).await?;
        let producer_config = config.engine.producer_config(target_cluster);
        let (mut eos, producer) = start_producer(&target, flow, mode, producer_config).await?;
        let saved = load_state(state, &target, flow, &mut eos).await?;
        let state_writer =
            StateWriter::new(target.clone(), flow).with_producer_config(producer_config);
        let topic_sync = TopicSync::new(flow, source.clone(), target.clone(), metrics.clone());
        let (role, topic_sync, state_writer, writes) =
            role(start, eos, target_cluster, topic_sync, state_writer).await?;
        let (router, recreations, fetch_stop) = router(start, &source);
        let registry = Arc::new(Registry::new());
        let group_sync = GroupSync::new(
            flow,
            source.clone(),
            target.clone(),
            Arc::clone(&registry),
            metrics.clone(),
        );
        let heartbeats = Heartbeats::new(flow, target.clone()).with_metrics(metrics.clone());
        let run = FlowRun {
            flow: flow.clone(),
            state_writer,
            source,
            target,
            metrics: metrics.clone(),
            registry,
            producer,
            producer_config,
            role,
            router,
            recreations,
            fetch_stop,
            partitions: Partitions::default(),
            topics: BTreeMap::new(),
            saved,
            once,
            max_held_bytes: usize::try_from(budget.total() / 2).unwrap_or(usize::MAX),
            budget: budget.clone(),
            engine: config.engine,
            stop_grace: target_cluster.request_timeout,
        };
        let parts = Parts {
            topic_sync,
            writes,
            group_sync,
            heartbeats,
        };
        Ok((run, parts))
    }
}

/// Connects to the flow's source and target (at once); the target's cluster settings
/// with the two clients.
async fn connect_both<'c>(
    config: &'c Config,
    flow: &Flow,
) -> Result<(&'c Cluster, Client, Client), MirrorError> {
    let cluster = |name: &str| {
        config
            .cluster(name)
            .ok_or_else(|| MirrorError::other(format!("unknown cluster {name}")))
    };
    let target_cluster = cluster(&flow.target)?;
    let (source, target) =
        tokio::try_join!(connect(cluster(&flow.source)?), connect(target_cluster))?;
    Ok((target_cluster, source, target))
}

/// Makes sure the flow's state topic exists and reads it on; the exactly-once parts
/// (`eos`) keep the deltas to tombstone.
async fn load_state(
    state: &SharedState,
    target: &Client,
    flow: &Flow,
    eos: &mut Option<Eos>,
) -> Result<SavedState, MirrorError> {
    state::ensure_state_topic(target, flow).await?;
    // Read on from where this flow's (or this slot's member's) last start left off.
    let (saved, deltas) = state.lock().await.read(target, flow).await?;
    if let Some(e) = eos {
        e.deltas = deltas;
    }
    tracing::info!(flow = %flow.name, partitions = saved.len(),
        guarantee = flow.delivery.guarantee.as_str(), "state loaded");
    Ok(saved)
}

/// Starts the run's producer: in exactly-once mode the transactional one (InitProducerId
/// fences an older process of the flow, so it comes first of all) with its parts,
/// otherwise an idempotent one.
async fn start_producer(
    target: &Client,
    flow: &Flow,
    mode: Mode,
    producer_config: ProducerConfig,
) -> Result<(Option<Eos>, Sink), MirrorError> {
    let transactional = matches!(mode, Mode::ExactlyOnce | Mode::ExactlyOnceSlots);
    let eos = match transactional {
        true => Some(exactly_once::start_producer(target, flow, producer_config).await?),
        false => None,
    };
    let producer = match &eos {
        Some(e) => Sink::Transactional(e.producer.clone()),
        None => Sink::Idempotent(
            IdempotentProducer::new(target.clone(), producer_config)
                .await
                .map_err(|e| MirrorError::kafka("InitProducerId", e).cluster(&flow.target))?,
        ),
    };
    Ok((eos, producer))
}

/// The run's [`Role`] (a member joins its group here), with the topic sync and state
/// writer set up for it, and the switch of the topic sync's writes where that changes
/// after the first refresh.
async fn role(
    start: &Start<'_>,
    eos: Option<Eos>,
    target_cluster: &Cluster,
    mut topic_sync: TopicSync,
    mut state_writer: StateWriter,
) -> Result<(Role, TopicSync, StateWriter, Option<Arc<AtomicBool>>), MirrorError> {
    let flow = start.flow;
    // The first refresh creates missing target topics: a slot's (as every scale-out
    // process does at start) and a member's; later ones only discover, and the control
    // owner creates and re-configures topics from then on.
    let mut writes = None;
    let role = match (eos, start.slot, start.mode) {
        (Some(e), Some(slot), _) => {
            let w = Arc::new(AtomicBool::new(true));
            topic_sync = topic_sync.with_writes(Arc::clone(&w));
            writes = Some(w);
            state_writer = state_writer.in_transactions(e.producer.clone());
            Role::Slot(slot, e)
        }
        (Some(e), None, _) => {
            state_writer = state_writer.in_transactions(e.producer.clone());
            Role::Transactional(e)
        }
        (None, _, Mode::ScaleOut) => {
            let so = flow
                .scale_out
                .as_ref()
                .ok_or_else(|| MirrorError::other("scale-out without [flows.scale_out]"))?;
            let scale = Scale::join(flow, so, target_cluster).await?;
            scale.writes().store(true, Ordering::Release);
            topic_sync = topic_sync.with_writes(Arc::clone(scale.writes()));
            writes = Some(Arc::clone(scale.writes()));
            state_writer = state_writer.with_generation(Arc::clone(scale.stamp()));
            Role::Member(Box::new(scale))
        }
        (None, _, _) => Role::Plain,
    };
    Ok((role, topic_sync, state_writer, writes))
}

/// The router that feeds the run's partitions, its reports of re-created source topics,
/// and the switch that stops its fetchers.
fn router(
    start: &Start<'_>,
    source: &Client,
) -> (
    Arc<Router>,
    mpsc::UnboundedReceiver<Recreation>,
    watch::Sender<bool>,
) {
    let flow = start.flow;
    let (fetch_stop, fetch_stop_rx) = watch::channel(false);
    let opts = FetchOptions {
        max_wait: start
            .config
            .engine
            .fetch_max_wait
            .max(Duration::from_millis(5)),
        min_bytes: 1,
        max_bytes: start.config.engine.fetch_max_bytes,
        isolation: IsolationLevel::ReadCommitted,
    };
    let (recreated, recreations) = mpsc::unbounded_channel();
    let router = Router::new(
        source.clone(),
        &flow.name,
        &flow.source,
        opts,
        start.config.engine.fetch_partition_max_bytes,
        start.budget.clone(),
        Limits::default(),
        fetch_stop_rx,
        recreated,
        start.metrics.fetch_wait_handle(&flow.name),
    );
    (router, recreations, fetch_stop)
}
