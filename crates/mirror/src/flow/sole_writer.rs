//! Drives the sole-writer guard ([`crate::scale::sole_writer`]) of a flow without
//! `[flows.scale_out]`: joins the flow's group on the target before anything is written,
//! refuses to start when another process holds the flow, and stops the flow if a later
//! rebalance gives the flow to another process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use strait_client::group::{GroupError, GroupMember, GroupView, MembershipConfig, Phase};
use strait_client::protocol::ResponseError;
use tokio::sync::watch;

use super::owner::Confirmed;
use super::scale_out::host_name;
use super::signal::interruptible;
use crate::config::scale_out::{REBALANCE_TIMEOUT, default_group};
use crate::config::{Cluster, Flow};
use crate::error::MirrorError;
use crate::scale::sole_writer::{SoleWriter, dead_predecessors, identity, writer_client_id};
use crate::scale::{MemberMetadata, PROTOCOL_TYPE};

/// The guard's session: Kafka's smallest by default (`group.min.session.timeout.ms`). A
/// lapse costs nothing but a rejoin (the holder claims the flow back), and a short one
/// shortens what a restart waits where the dead predecessor cannot be removed (Tansu
/// answers a first JoinGroup after half the session).
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// Longest wait for the coordinator's first answer: a coordinator that never completes a
/// rebalance must not hold the flow's start for ever.
const FIRST_ASSIGNMENT: Duration = Duration::from_secs(60);

/// The guard a running flow holds; dropping it leaves the group as a crash would, so
/// prefer [`Guard::release`].
pub(super) struct Guard {
    member: GroupMember,
    /// Why another process now holds the flow (set by the watcher; the flow stops).
    lost: Arc<Mutex<Option<String>>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Guard {
    /// Why the flow was taken by another process while running, if it was.
    pub(super) fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Confirms with the coordinator that this process still holds the flow: asks for a
    /// new generation and waits for it. What an exactly-once restart asks before its
    /// InitProducerId, which would otherwise fence a successor that took the flow over
    /// while this process was frozen or cut off.
    pub(super) async fn confirm(&self) -> Confirmed {
        let before = self.member.current().assignment.map(|a| a.generation);
        self.member.rejoin();
        let wait = SESSION_TIMEOUT + REBALANCE_TIMEOUT.0;
        match self.member.wait_for_assignment(before, wait).await {
            Ok(a) if SoleWriter::holds(&a.data) => Confirmed::Held,
            Ok(a) => Confirmed::Taken(format!(
                "another process holds the flow's writer group since generation {} (this \
                 one was cut off from the coordinator, or frozen, longer than its session); \
                 stopping without restarting, which would fence it",
                a.generation
            )),
            Err(e) => Confirmed::Unknown(format!(
                "the flow's writer group did not confirm this process as the writer ({e})"
            )),
        }
    }

    /// Leaves the group (LeaveGroup), so that a successor starts without waiting out
    /// this process's session.
    pub(super) async fn release(self) {
        self.watcher.abort();
        self.member.leave().await;
    }
}

/// Takes the flow's sole-writer guard on `target`, or refuses with an error naming the
/// process that holds it. `on_lost` is sent `true` if a later rebalance gives the flow
/// to another process. `Ok(None)`: `stop` came first.
pub(super) async fn take(
    flow: &Flow,
    target: &Cluster,
    stop: &mut watch::Receiver<bool>,
    on_lost: watch::Sender<bool>,
) -> Result<Option<Guard>, MirrorError> {
    let group = default_group(&flow.name);
    let (admin, member, proto) = join(target, &group).await?;
    let Some(answered) = first_answer(&member, stop).await else {
        member.leave().await;
        return Ok(None);
    };
    let generation = match held_in(&admin, &member, &group, answered).await {
        Ok(generation) => generation,
        Err(why) => {
            member.leave().await;
            return Err(
                MirrorError::config(format!("flow's writer group {group}: {why}"))
                    .cluster(&target.name),
            );
        }
    };
    proto.hold(generation);
    tracing::info!(flow = %flow.name, group = %group, generation,
        "holding the flow's writer group (a second process of this flow is refused)");
    let lost = Arc::new(Mutex::new(None));
    let watcher = tokio::spawn(watch_for_loss(
        member.view(),
        Arc::clone(&lost),
        on_lost,
        (flow.name.clone(), group.clone()),
    ));
    Ok(Some(Guard {
        member,
        lost,
        watcher,
    }))
}

/// Joins the flow's writer `group` on `target`, once this host's earlier processes that
/// are gone were removed from it: a client of the target, the member, and its protocol.
async fn join(
    target: &Cluster,
    group: &str,
) -> Result<(strait_client::Client, GroupMember, SoleWriter), MirrorError> {
    // Reaching the target first gives an unreachable one the same error as the data
    // path's, and the client names the holder of a refused guard.
    let admin = crate::connect::connect(target).await?;
    let host = host_name().unwrap_or_else(|| "unknown".into());
    let pid = std::process::id();
    remove_dead_predecessors(&admin, group, &target.client_id, (&host, pid)).await;
    let proto = SoleWriter::new(identity(&host, pid));
    let cfg = MembershipConfig::new(group, PROTOCOL_TYPE)
        .with_session_timeout(SESSION_TIMEOUT)
        .with_rebalance_timeout(REBALANCE_TIMEOUT.0);
    let client =
        crate::connect::client_config(target)
            .with_client_id(writer_client_id(&target.client_id, &host, pid))
            .with_security(target.security.to_client().map_err(|e| {
                MirrorError::kafka("writer group: security", e).cluster(&target.name)
            })?);
    let member = GroupMember::connect(client, cfg, proto.clone())
        .await
        .map_err(|e| {
            MirrorError::kafka(format!("joining the flow's writer group {group}"), e)
                .cluster(&target.name)
        })?;
    Ok((admin, member, proto))
}

/// The coordinator's first answer to `member`, within [`FIRST_ASSIGNMENT`] (`Err`: none
/// came): its view once it holds an assignment or failed (`None`: the member's task
/// ended). `None` when `stop` came first.
async fn first_answer(
    member: &GroupMember,
    stop: &mut watch::Receiver<bool>,
) -> Option<Result<Option<GroupView>, tokio::time::error::Elapsed>> {
    let mut view = member.view();
    let first = async {
        let r = view.wait_for(|v| v.assignment.is_some() || v.phase == Phase::Failed);
        r.await.map(|v| v.clone()).ok()
    };
    interruptible(stop, tokio::time::timeout(FIRST_ASSIGNMENT, first)).await
}

/// The generation the first answer gives this process the flow in, or why it does not:
/// no answer in time, the coordinator refused the member, or another process holds the
/// flow (named, through `admin`).
async fn held_in(
    admin: &strait_client::Client,
    member: &GroupMember,
    group: &str,
    answered: Result<Option<GroupView>, tokio::time::error::Elapsed>,
) -> Result<i32, String> {
    let Ok(answered) = answered else {
        return Err(format!(
            "no assignment from the group coordinator within {}s; a second process of this \
             flow could not be ruled out",
            FIRST_ASSIGNMENT.as_secs()
        ));
    };
    let Some(v) = answered.filter(|v| v.phase != Phase::Failed) else {
        let error = member.current().error;
        return Err(error.map_or("it stopped".into(), |e| why_refused(&e)));
    };
    match v.assignment.filter(|a| SoleWriter::holds(&a.data)) {
        Some(a) => Ok(a.generation),
        None => Err(format!(
            "this flow is already written by {}; a second writer would duplicate records on \
             the target. Stop the other process, or add [flows.scale_out] to every process \
             of the flow to share it",
            holder_host(admin, group).await
        )),
    }
}

/// Sets `lost` and sends `on_lost` once an assignment without the unit arrives.
async fn watch_for_loss(
    mut view: watch::Receiver<strait_client::group::GroupView>,
    lost: Arc<Mutex<Option<String>>>,
    on_lost: watch::Sender<bool>,
    (flow, group): (String, String),
) {
    while view.changed().await.is_ok() {
        let v = view.borrow_and_update().clone();
        if v.phase == Phase::Failed {
            tracing::warn!(flow, group, error = ?v.error.as_ref().map(ToString::to_string),
                "the flow's writer group stopped; a second process of this flow would no \
                 longer be refused");
            return;
        }
        if let Some(a) = v.assignment.filter(|a| !SoleWriter::holds(&a.data)) {
            let why = format!(
                "the flow's writer group {group} gave the flow to another process in \
                 generation {} (this one was cut off from the coordinator longer than its \
                 session); stopping so that one process writes",
                a.generation
            );
            *lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            let _ = on_lost.send(true);
            return;
        }
    }
}

/// Removes this host's earlier processes of the flow that are gone from the group
/// ([`dead_predecessors`]), so that a restart does not wait out their session. Best
/// effort: whatever fails here only costs that wait.
async fn remove_dead_predecessors(
    client: &strait_client::Client,
    group: &str,
    client_id: &str,
    (host, pid): (&str, u32),
) {
    let Ok(groups) = client.describe_groups(&[group]).await else {
        return;
    };
    // Without /proc (not Linux) every process counts as alive: nothing is removed.
    let proc_fs = std::path::Path::new("/proc/self").exists();
    // A zombie (killed, not yet reaped) is gone too.
    let alive = |p: u32| {
        !proc_fs
            || std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                let state = stat
                    .rsplit_once(')')
                    .and_then(|(_, r)| r.trim_start().chars().next());
                !matches!(state, Some('Z' | 'X'))
            })
    };
    // A coordinator that reports no protocol for a group with members (Tansu 0.6) never
    // completes a rebalance after another member's LeaveGroup: there the restart waits
    // out the session instead (docs/compatibility.md).
    let ids: Vec<&str> = groups
        .iter()
        .filter(|g| !g.protocol_data.is_empty())
        .flat_map(|g| g.members.iter())
        .map(|m| m.member_id.as_str())
        .collect();
    tracing::debug!(group, members = ?ids, "the writer group's members before joining");
    let gone = dead_predecessors(ids, client_id, host, pid, alive);
    if gone.is_empty() {
        return;
    }
    let ids: Vec<&str> = gone.iter().map(String::as_str).collect();
    match client.leave_group(group, &ids).await {
        Ok(()) => tracing::info!(group, members = ?gone,
            "removed this host's earlier process of the flow (gone) from its writer group"),
        Err(e) => tracing::info!(group, error = %e,
            "could not remove this host's earlier process from the writer group; waiting \
             for its session to expire"),
    }
}

/// Who holds the group: the hosts in its members' metadata, else "another process".
async fn holder_host(client: &strait_client::Client, group: &str) -> String {
    let Ok(groups) = client.describe_groups(&[group]).await else {
        return "another process".into();
    };
    let hosts: Vec<String> = groups
        .iter()
        .flat_map(|g| g.members.iter())
        .filter_map(|m| {
            let meta = MemberMetadata::decode(&m.member_metadata).ok()?;
            let holds = meta.owned.contains(&crate::scale::PartitionId::writer());
            holds.then_some(meta.host)
        })
        .collect();
    match hosts.as_slice() {
        [] => "another process".into(),
        _ => format!("the process on {}", hosts.join(", ")),
    }
}

/// Why the coordinator refused the guard, saying what to do.
fn why_refused(e: &GroupError) -> String {
    match e {
        GroupError::Refused(k)
            if k.kafka_error() == Some(ResponseError::InconsistentGroupProtocol) =>
        {
            format!(
                "{e}: the group's members run this flow with [flows.scale_out] (or another \
                 Strait version); this process is configured without it. Every process of \
                 a flow must agree: stop them, or add [flows.scale_out] here too"
            )
        }
        GroupError::Refused(k)
            if k.kafka_error() == Some(ResponseError::GroupAuthorizationFailed) =>
        {
            format!(
                "{e}: the target's principal needs Read on this group (the guard that \
                 refuses a second process of the flow; docs/security.md lists the ACLs)"
            )
        }
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
