//! [`GroupMember`]: the async driver of [`Membership`]. One task sends what the machine
//! says (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) to the group's coordinator, found with
//! FindCoordinator (key type 0) through [`Client::group_call`], feeds the answers back, and
//! publishes a [`GroupView`] on a watch channel whenever the phase or the assignment
//! changes. The self-fence deadline is raced against every call: an answer that does not
//! come in time does not extend ownership.
//!
//! This file holds the handle and the task's state; the task's loop is `driver`, its calls
//! to the coordinator are `calls`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::membership::{Assignment, JoinedMember, Membership, MembershipConfig, Phase, Stats};
use super::types::GroupError;
use crate::client::{Client, ClientConfig};
use crate::error::Result;

mod calls;
mod driver;

/// The caller's side of the group protocol: what this member joins with and, on the
/// leader, who gets what. Both are opaque bytes to the client.
pub trait Protocol: Send + 'static {
    /// The protocols this member supports, most preferred first: `(name, metadata)`.
    /// Called before every JoinGroup, so the metadata can say what the member owns now.
    /// An `Err` stops the member ([`GroupError::Assignor`]).
    fn protocols(&mut self) -> std::result::Result<Vec<(String, Bytes)>, String>;

    /// As the leader of `generation`: each member's assignment for `protocol`
    /// (`(member id, bytes)`; a member left out gets an empty assignment). An `Err` stops
    /// the member ([`GroupError::Assignor`]).
    fn assign(
        &mut self,
        protocol: &str,
        generation: i32,
        members: &[JoinedMember],
    ) -> std::result::Result<Vec<(String, Bytes)>, String>;
}

/// What the member is and owns, as published on the watch channel.
#[derive(Debug, Clone)]
pub struct GroupView {
    /// The phase.
    pub phase: Phase,
    /// Our member id ("" before the coordinator gave one).
    pub member_id: String,
    /// The assignment we own, with its generation; `None` while we own nothing.
    pub assignment: Option<Assignment>,
    /// Why the member last lost its assignment or stopped.
    pub error: Option<GroupError>,
    /// Assignments received so far (one per completed rebalance).
    pub assignments_received: u64,
    /// The machine's counters (joins, MEMBER_ID_REQUIRED answers, losses).
    pub stats: Stats,
    /// Time spent without a stable assignment since the member started (joining,
    /// rebalancing, fenced), up to the last change of phase.
    pub unstable_for: Duration,
}

impl GroupView {
    fn same(&self, other: &GroupView) -> bool {
        self.phase == other.phase
            && self.member_id == other.member_id
            && self.assignment == other.assignment
            && self.assignments_received == other.assignments_received
            && self.stats == other.stats
            && self.error.as_ref().map(ToString::to_string)
                == other.error.as_ref().map(ToString::to_string)
    }
}

#[derive(Debug)]
enum Command {
    Rejoin,
    Leave(oneshot::Sender<()>),
    Detach(oneshot::Sender<()>),
}

/// One member of a group, joined and heartbeating in a task of its own.
///
/// Give it a [`Client`] of its own ([`GroupMember::connect`]): Kafka answers the requests
/// of one connection in order, and a JoinGroup is parked at the coordinator until the
/// rebalance completes, so a shared client's other coordinator calls would wait behind it.
///
/// Dropping it stops the task at once without a LeaveGroup (as a crash would); prefer
/// [`GroupMember::leave`] (or [`GroupMember::detach`] for a static member about to restart).
pub struct GroupMember {
    view: watch::Receiver<GroupView>,
    cmd: mpsc::UnboundedSender<Command>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("view", &*self.view.borrow())
            .finish_non_exhaustive()
    }
}

impl GroupMember {
    /// Connects two clients of its own (one for the membership calls, one for the
    /// keep-alives sent while a JoinGroup waits, rule 15) and starts the member.
    pub async fn connect(
        client: ClientConfig,
        cfg: MembershipConfig,
        protocol: impl Protocol,
    ) -> Result<GroupMember> {
        cfg.validate()?;
        let main = Client::connect(client.clone()).await?;
        let keepalive = Client::connect(client).await?;
        GroupMember::spawn(main, keepalive, cfg, protocol)
    }

    /// Starts the member on `client` (see the type's note on sharing a client). The
    /// keep-alives go through the same client, so on Kafka they wait behind a waiting
    /// JoinGroup and do not help; [`GroupMember::connect`] avoids that. Fails only on an
    /// invalid config.
    pub fn start(
        client: Client,
        cfg: MembershipConfig,
        protocol: impl Protocol,
    ) -> Result<GroupMember> {
        GroupMember::spawn(client.clone(), client, cfg, protocol)
    }

    fn spawn(
        client: Client,
        keepalive: Client,
        cfg: MembershipConfig,
        protocol: impl Protocol,
    ) -> Result<GroupMember> {
        cfg.validate()?;
        let machine = Membership::new(cfg);
        let (tx, view) = watch::channel(GroupView {
            phase: machine.phase(),
            member_id: String::new(),
            assignment: None,
            error: None,
            assignments_received: 0,
            stats: Stats::default(),
            unstable_for: Duration::ZERO,
        });
        let (cmd, commands) = mpsc::unbounded_channel();
        let driver = Driver {
            client,
            keepalive,
            m: machine,
            protocol: Box::new(protocol),
            view: tx,
            commands,
            waiting: Vec::new(),
            received: 0,
            unstable_since: Some(Instant::now()),
            unstable_for: Duration::ZERO,
        };
        let task = tokio::spawn(driver.run());
        Ok(GroupMember {
            view,
            cmd,
            task: Some(task),
        })
    }

    /// A receiver of the member's view (phase, assignment, generation).
    pub fn view(&self) -> watch::Receiver<GroupView> {
        self.view.clone()
    }

    /// The view now.
    pub fn current(&self) -> GroupView {
        self.view.borrow().clone()
    }

    /// Waits until the member owns an assignment of a generation later than `after`
    /// (`None`: any), up to `timeout`. Fails with the member's error if it stopped.
    pub async fn wait_for_assignment(
        &self,
        after: Option<i32>,
        timeout: Duration,
    ) -> std::result::Result<Assignment, GroupError> {
        wait_for_assignment(self.view.clone(), after, timeout).await
    }

    /// Asks for a new generation, keeping the current assignment until it arrives (after
    /// releasing revoked partitions, or when the metadata changed).
    pub fn rejoin(&self) {
        let _ = self.cmd.send(Command::Rejoin);
    }

    /// A handle that asks for a rejoin from another task (the one releasing partitions).
    pub fn rejoiner(&self) -> Rejoiner {
        Rejoiner {
            cmd: self.cmd.clone(),
        }
    }

    /// Gives the assignment up, sends a LeaveGroup (bounded by the client's request and
    /// retry timeouts) and stops.
    pub async fn leave(mut self) {
        self.stop(Command::Leave).await;
    }

    /// Gives the assignment up and stops heartbeating without a LeaveGroup: a static member
    /// that restarts within the session timeout gets its assignment back without a
    /// rebalance.
    pub async fn detach(mut self) {
        self.stop(Command::Detach).await;
    }

    async fn stop(&mut self, make: fn(oneshot::Sender<()>) -> Command) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(make(tx)).is_ok() {
            let _ = rx.await;
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

/// [`GroupMember::wait_for_assignment`] on a receiver of its view ([`GroupMember::view`]),
/// for a task that holds no [`GroupMember`] (with a [`Rejoiner`] to ask for the generation).
pub async fn wait_for_assignment(
    mut view: watch::Receiver<GroupView>,
    after: Option<i32>,
    timeout: Duration,
) -> std::result::Result<Assignment, GroupError> {
    let wait = view.wait_for(|v| {
        matches!(v.phase, Phase::Failed | Phase::Left)
            || v.assignment
                .as_ref()
                .is_some_and(|a| after.is_none_or(|g| a.generation > g))
    });
    match tokio::time::timeout(timeout, wait).await {
        Ok(Ok(v)) => match (&v.assignment, &v.error) {
            (Some(a), _) if !matches!(v.phase, Phase::Failed | Phase::Left) => Ok(a.clone()),
            (_, Some(e)) => Err(e.clone()),
            _ => Err(GroupError::Protocol("the member left".into())),
        },
        Ok(Err(_)) => Err(GroupError::Protocol("the member's task ended".into())),
        Err(_) => Err(GroupError::Protocol(format!(
            "no assignment within {timeout:?}"
        ))),
    }
}

/// Asks a [`GroupMember`] for a new generation ([`GroupMember::rejoin`]); cheap to clone.
/// Does nothing once the member stopped.
#[derive(Debug, Clone)]
pub struct Rejoiner {
    cmd: mpsc::UnboundedSender<Command>,
}

impl Rejoiner {
    /// See [`GroupMember::rejoin`].
    pub fn rejoin(&self) {
        let _ = self.cmd.send(Command::Rejoin);
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

struct Driver {
    client: Client,
    /// For keep-alives while a JoinGroup waits (another connection).
    keepalive: Client,
    m: Membership,
    protocol: Box<dyn Protocol>,
    view: watch::Sender<GroupView>,
    commands: mpsc::UnboundedReceiver<Command>,
    /// Callers of leave/detach, told when the task ends.
    waiting: Vec<oneshot::Sender<()>>,
    received: u64,
    /// Since when the member has had no stable assignment (`None` while stable).
    unstable_since: Option<Instant>,
    unstable_for: Duration,
}
