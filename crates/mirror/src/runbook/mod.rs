//! The switch-over runbook as code: `strait failover` moves a consumer group from a flow's
//! source to its target, `strait failback` moves it back, both through the flow's offset
//! maps (read from its state topic), committing only exact positions unless told
//! otherwise.
//!
//! [`decide`] holds the rules (pure); [`prepare`] gathers what they need from both
//! clusters (the group's commits on each side, its activity, the maps) and peeks at the
//! record each position points at; [`execute`] commits the plan.
//!
//! The entry points ([`prepare`], [`execute_on`], [`unplanned::prepare`]) name the flow
//! in their errors, once each; the steps below them name the cluster, topic or
//! partition they know.

pub mod unplanned;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use strait_client::{Client, CommitOffset, GroupMember, IsolationLevel, OffsetSpec};
use strait_offsets::OffsetMap;

/// The pure switch-over decision: it lives with group sync, whose reverse sync follows its
/// failback rules too.
pub use crate::groups::switch as decide;
pub use decide::{Direction, GroupActivity, Options, PartitionInput, Refusal, Verdict};

use crate::config::{Flow, TopicDecision};
use crate::datapath::probe::first_record_at;
use crate::error::MirrorError;
use crate::groups::activity;
use crate::state::{decode_map, read_state};

/// The record a position points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// The first record at or after the position.
    Record {
        /// Its offset.
        offset: i64,
        /// Its key.
        key: Option<Bytes>,
        /// Its timestamp (ms since the epoch).
        timestamp: i64,
    },
    /// Nothing at or after the position (yet): the end of the log.
    End,
    /// It could not be read (the error).
    Unreadable(String),
    /// Not read: the cluster is declared gone (`--source-unavailable`).
    NotRead,
}

/// One partition of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What was gathered.
    pub input: PartitionInput,
    /// What to do.
    pub verdict: Verdict,
    /// The record the group's position points at on the side it leaves.
    pub from_record: Peek,
    /// The record the new position points at on the side it moves to.
    pub to_record: Option<Peek>,
    /// Unplanned failover: when Strait synced the position (its checkpoint's timestamp,
    /// ms since the epoch); `None` for a position read from the group itself.
    pub synced_at: Option<i64>,
}

/// A switch-over plan for one group and flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Which way.
    pub direction: Direction,
    /// The flow.
    pub flow: String,
    /// The cluster the group leaves.
    pub from_cluster: String,
    /// The cluster it moves to.
    pub to_cluster: String,
    /// The group.
    pub group: String,
    /// The group on the side it leaves.
    pub leaving: GroupActivity,
    /// The group on the side it moves to.
    pub arriving: GroupActivity,
    /// What keeps the whole plan from executing.
    pub blocker: Option<String>,
    /// Per partition, sorted by topic and partition.
    pub rows: Vec<Row>,
}

impl Plan {
    /// Partitions refused.
    pub fn refused(&self) -> impl Iterator<Item = (&Row, &Refusal)> {
        self.rows.iter().filter_map(|r| match &r.verdict {
            Verdict::Refused { reason } => Some((r, reason)),
            _ => None,
        })
    }

    /// Whether replication still has to reach some position (failover waits for it).
    pub fn waiting_for_replication(&self) -> bool {
        self.refused()
            .any(|(_, r)| matches!(r, Refusal::NotYetReplicated { .. }))
    }

    /// Whether the plan may execute: nothing blocks it and no partition is refused.
    pub fn executable(&self) -> bool {
        self.blocker.is_none() && self.refused().next().is_none()
    }

    /// The commits it makes.
    pub fn commits(&self) -> Vec<CommitOffset> {
        self.rows
            .iter()
            .filter_map(|r| match r.verdict {
                Verdict::Commit { offset, .. } => Some(CommitOffset {
                    topic: r.input.to_topic.clone(),
                    partition: r.input.partition,
                    offset: offset as i64,
                    leader_epoch: -1,
                    metadata: None,
                }),
                _ => None,
            })
            .collect()
    }
}

/// The two clusters of a flow.
#[derive(Debug, Clone)]
pub struct Clusters {
    /// The flow's source.
    pub source: Client,
    /// The flow's target (holds the state topic).
    pub target: Client,
}

impl Clusters {
    fn sides(&self, direction: Direction) -> (&Client, &Client) {
        match direction {
            Direction::Failover => (&self.source, &self.target),
            Direction::Failback => (&self.target, &self.source),
        }
    }
}

/// Gathers a plan for `group`: its commits on the side it leaves (only `topic`, when
/// given, matched against the source or target name), their translations through the
/// flow's saved maps, its commits and activity on the side it moves to.
pub async fn prepare(
    clusters: &Clusters,
    flow: &Flow,
    group: &str,
    topic: Option<&str>,
    direction: Direction,
    options: Options,
) -> Result<Plan, MirrorError> {
    gather(clusters, flow, group, topic, direction, options)
        .await
        .map_err(|e| e.flow(&flow.name))
}

/// [`prepare`]'s work.
async fn gather(
    clusters: &Clusters,
    flow: &Flow,
    group: &str,
    topic: Option<&str>,
    direction: Direction,
    options: Options,
) -> Result<Plan, MirrorError> {
    let (from, to) = clusters.sides(direction);
    let (from_cluster, to_cluster) = match direction {
        Direction::Failover => (&flow.source, &flow.target),
        Direction::Failback => (&flow.target, &flow.source),
    };
    let maps = saved_maps(&clusters.target, flow).await?;
    let committed = from
        .offset_fetch(group, None)
        .await
        .map_err(|e| MirrorError::kafka("offset fetch", e).cluster(from_cluster))?;
    let mut rows = inputs(committed, flow, &maps, topic, direction);
    for input in &mut rows {
        read_arriving(to, group, input)
            .await
            .map_err(|e| e.cluster(to_cluster))?;
    }
    rows.sort_by(|a, b| (&a.from_topic, a.partition).cmp(&(&b.from_topic, b.partition)));
    let leaving = activity(from, group).await;
    let arriving = activity(to, group).await;
    let blocker = decide::blocker(&leaving, &arriving, options);
    let mut out = Vec::new();
    for input in rows {
        out.push(judged(from, to, input, direction, options).await);
    }
    Ok(Plan {
        direction,
        flow: flow.name.clone(),
        from_cluster: from_cluster.clone(),
        to_cluster: to_cluster.clone(),
        group: group.to_owned(),
        leaving,
        arriving,
        blocker,
        rows: out,
    })
}

/// The flow's saved offset maps, by (source topic, target topic, partition).
type SavedMaps = BTreeMap<(String, String, i32), OffsetMap>;

/// The group's commits on the side it leaves that belong to the flow (and to `topic`,
/// when given), each with its translation; the arriving side's positions not read yet.
fn inputs(
    committed: Vec<strait_client::CommittedOffset>,
    flow: &Flow,
    maps: &SavedMaps,
    topic: Option<&str>,
    direction: Direction,
) -> Vec<PartitionInput> {
    let mut rows = Vec::new();
    for c in committed.into_iter().filter(|c| c.offset >= 0) {
        let names = match direction {
            Direction::Failover => match flow.topic_decision(&c.topic) {
                TopicDecision::Replicate { target_topic } => Some((c.topic.clone(), target_topic)),
                _ => None,
            },
            Direction::Failback => maps
                .keys()
                .find(|(_, t, p)| *t == c.topic && *p == c.partition)
                .map(|(s, t, _)| (s.clone(), t.clone())),
        };
        let Some((source_topic, target_topic)) = names else {
            continue;
        };
        if topic.is_some_and(|t| t != source_topic && t != target_topic) {
            continue;
        }
        let map = maps.get(&(source_topic.clone(), target_topic.clone(), c.partition));
        let translation = map.map(|m| direction.translate(m, c.offset as u64));
        let (from_topic, to_topic) = match direction {
            Direction::Failover => (source_topic, target_topic),
            Direction::Failback => (target_topic, source_topic),
        };
        rows.push(PartitionInput {
            from_topic,
            to_topic,
            partition: c.partition,
            from_offset: c.offset,
            translation,
            to_offset: None,
            to_log_start: None,
        });
    }
    rows
}

/// One partition's verdict, with the record at the group's position on each side (on the
/// arriving side only where it would commit or already is).
async fn judged(
    from: &Client,
    to: &Client,
    input: PartitionInput,
    direction: Direction,
    options: Options,
) -> Row {
    let verdict = decide::decide(direction, &input, options);
    let from_record = peek(from, &input.from_topic, input.partition, input.from_offset).await;
    let to_record = match verdict {
        Verdict::Commit { offset, .. } | Verdict::AlreadyThere { offset } => {
            Some(peek(to, &input.to_topic, input.partition, offset as i64).await)
        }
        Verdict::Refused { .. } => None,
    };
    Row {
        input,
        verdict,
        from_record,
        to_record,
        synced_at: None,
    }
}

/// The flow's offset maps from its state topic on `target`, by (source topic, target
/// topic, partition).
async fn saved_maps(target: &Client, flow: &Flow) -> Result<SavedMaps, MirrorError> {
    let saved = read_state(target, flow).await?;
    let mut maps = BTreeMap::new();
    for ((source_topic, p), state) in &saved {
        let map = decode_map(state)?;
        maps.insert((source_topic.clone(), state.target_topic.clone(), *p), map);
    }
    Ok(maps)
}

/// Reads, on the side the group moves to (`to`), its committed position and the
/// partition's log start into `input`.
async fn read_arriving(
    to: &Client,
    group: &str,
    input: &mut PartitionInput,
) -> Result<(), MirrorError> {
    let asked = [input.partition];
    let got = to
        .offset_fetch(group, Some(&[(input.to_topic.as_str(), &asked)]))
        .await
        .map_err(|e| MirrorError::kafka("offset fetch", e))?;
    input.to_offset = got.first().map(|o| o.offset).filter(|o| *o >= 0);
    // Retention the flow's map was never told of (it learns the source's log start
    // only while replicating, and the target's never): a commit below it is refused.
    let starts = to
        .list_offsets(
            &input.to_topic,
            &[(input.partition, OffsetSpec::Earliest)],
            IsolationLevel::ReadUncommitted,
        )
        .await
        .map_err(|e| MirrorError::kafka("list offsets", e))?;
    input.to_log_start = starts.first().map(|o| o.offset);
    Ok(())
}

/// [`prepare`], again every `poll` while replication has not reached some position, for
/// at most `wait` (failover waits for the flow to pass the group's positions).
pub async fn prepare_waiting(
    clusters: &Clusters,
    flow: &Flow,
    group: &str,
    topic: Option<&str>,
    direction: Direction,
    options: Options,
    wait: Duration,
) -> Result<Plan, MirrorError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let plan = prepare(clusters, flow, group, topic, direction, options).await?;
        if !plan.waiting_for_replication() || tokio::time::Instant::now() >= deadline {
            return Ok(plan);
        }
        tracing::info!(flow = %flow.name, group, "waiting for replication to reach the group's positions");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Commits an executable plan on the side the group moves to; returns the partitions
/// committed. Refuses a plan that is not executable.
pub async fn execute(clusters: &Clusters, flow: &Flow, plan: &Plan) -> Result<usize, MirrorError> {
    let (_, to) = clusters.sides(plan.direction);
    execute_on(to, flow, plan).await
}

/// [`execute`] with the client of the side the group moves to only (an unplanned
/// failover has no source client).
pub async fn execute_on(to: &Client, flow: &Flow, plan: &Plan) -> Result<usize, MirrorError> {
    commit(to, flow, plan).await.map_err(|e| e.flow(&flow.name))
}

/// [`execute_on`]'s work.
async fn commit(to: &Client, flow: &Flow, plan: &Plan) -> Result<usize, MirrorError> {
    if !plan.executable() {
        return Err(MirrorError::other(
            "the plan has refused partitions or a blocker; nothing was committed",
        ));
    }
    let commits = plan.commits();
    if commits.is_empty() {
        return Ok(0);
    }
    to.offset_commit(&plan.group, &GroupMember::standalone(), &commits)
        .await
        .map_err(|e| MirrorError::kafka("offset commit", e).cluster(&plan.to_cluster))?;
    for c in &commits {
        tracing::info!(flow = %flow.name, group = %plan.group, cluster = %plan.to_cluster,
            topic = %c.topic, partition = c.partition, offset = c.offset, "committed");
    }
    Ok(commits.len())
}

/// The first record at or after `offset`, as the report shows it.
async fn peek(client: &Client, topic: &str, partition: i32, offset: i64) -> Peek {
    match first_record_at(client, topic, partition, offset).await {
        Ok(Some(r)) => Peek::Record {
            offset: r.offset,
            key: r.key,
            timestamp: r.timestamp,
        },
        Ok(None) => Peek::End,
        Err(e) => Peek::Unreadable(e.to_string()),
    }
}
