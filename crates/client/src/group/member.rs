//! [`GroupMember`]: the async driver of [`Membership`]. One task sends what the machine
//! says (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) to the group's coordinator, found with
//! FindCoordinator (key type 0) through [`Client::group_call`], feeds the answers back, and
//! publishes a [`GroupView`] on a watch channel whenever the phase or the assignment
//! changes. The self-fence deadline is raced against every call: an answer that does not
//! come in time does not extend ownership.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::membership::{
    Assignment, HeartbeatCall, JoinAnswer, JoinCall, Joined, JoinedMember, LeaveCall, Membership,
    MembershipConfig, Phase, Stats, Step, SyncCall,
};
use super::types::GroupError;
use crate::client::{Client, ClientConfig};
use crate::error::{Error, Result};

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

/// The outcome of racing a call against the fence deadline and the commands.
enum Raced<T> {
    Answer(T),
    Interrupted,
}

impl Driver {
    async fn run(mut self) {
        loop {
            let step = self.m.next_step(Instant::now());
            self.publish();
            match step {
                Step::Done => break,
                Step::AwaitAnswer => {
                    // Every call is awaited where it is sent; nothing is in flight here.
                    tokio::task::yield_now().await;
                }
                Step::Wait(until) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(until.into()) => {}
                        cmd = self.commands.recv() => self.command(cmd),
                    }
                }
                Step::Join(call) => {
                    let (client, cfg) = (self.client.clone(), self.m.config().clone());
                    let protocols = match self.protocol.protocols() {
                        Ok(p) => p,
                        Err(e) => {
                            self.m.on_protocol_failed(e);
                            continue;
                        }
                    };
                    let fut = async move { join(&client, &cfg, call, protocols).await };
                    if let Raced::Answer(r) = self.race(fut).await {
                        self.m.on_join(Instant::now(), r);
                    }
                }
                Step::Sync(call) => {
                    let assignments = match &call.leader_of {
                        Some(members) => {
                            match self
                                .protocol
                                .assign(&call.protocol, call.generation, members)
                            {
                                Ok(a) => a,
                                Err(e) => {
                                    self.m.on_protocol_failed(e);
                                    continue;
                                }
                            }
                        }
                        None => Vec::new(),
                    };
                    let (client, cfg) = (self.client.clone(), self.m.config().clone());
                    let fut = async move { sync(&client, &cfg, call, assignments).await };
                    if let Raced::Answer(r) = self.race(fut).await {
                        self.m.on_sync(Instant::now(), r);
                    }
                }
                Step::Heartbeat(call) => {
                    let (client, cfg) = (self.client.clone(), self.m.config().clone());
                    let fut = async move { heartbeat(&client, &cfg, call).await };
                    if let Raced::Answer(r) = self.race(fut).await {
                        self.m.on_heartbeat(Instant::now(), r);
                    }
                }
                Step::Leave(call) => {
                    // Bounded by the client's request and retry timeouts.
                    let r = leave(&self.client, self.m.config(), call).await;
                    self.m.on_leave(Instant::now(), r);
                }
            }
        }
        self.publish();
        for w in self.waiting.drain(..) {
            let _ = w.send(());
        }
    }

    /// Awaits `fut`, applying the fence deadline when it passes and the commands as they
    /// come; a leave or detach abandons the call.
    async fn race<T>(&mut self, fut: impl Future<Output = T>) -> Raced<T> {
        tokio::pin!(fut);
        let mut keepalive: Option<std::pin::Pin<Box<dyn Future<Output = Result<()>> + Send>>> =
            None;
        loop {
            let fence = self.m.fence_deadline();
            let keepalive_at = if keepalive.is_none() {
                self.m.keepalive_at()
            } else {
                None
            };
            tokio::select! {
                r = &mut fut => return Raced::Answer(r),
                _ = sleep_until_opt(keepalive_at) => {
                    if let Some(call) = self.m.keepalive(Instant::now()) {
                        let (client, cfg) = (self.keepalive.clone(), self.m.config().clone());
                        keepalive = Some(Box::pin(async move {
                            heartbeat(&client, &cfg, call).await
                        }));
                    }
                }
                r = async { keepalive.as_mut().expect("guarded").await }, if keepalive.is_some() => {
                    keepalive = None;
                    self.m.on_keepalive(Instant::now(), r);
                    self.publish();
                }
                _ = sleep_until_opt(fence) => {
                    if self.m.tick(Instant::now()) {
                        tracing::warn!(group = %self.m.config().group_id,
                            "no heartbeat answered in time: giving the assignment up (self-fence)");
                    }
                    self.publish();
                }
                cmd = self.commands.recv() => {
                    let stops = matches!(cmd, None | Some(Command::Leave(_) | Command::Detach(_)));
                    self.command(cmd);
                    self.publish();
                    if stops {
                        return Raced::Interrupted;
                    }
                }
            }
        }
    }

    fn command(&mut self, cmd: Option<Command>) {
        match cmd {
            Some(Command::Rejoin) => self.m.request_rejoin(),
            Some(Command::Leave(tx)) => {
                self.waiting.push(tx);
                self.m.leave();
            }
            Some(Command::Detach(tx)) => {
                self.waiting.push(tx);
                self.m.detach();
            }
            // The handle is gone (it aborts the task when dropped; this is the race).
            None => self.m.detach(),
        }
    }

    fn publish(&mut self) {
        let assignment = self.m.assignment().cloned();
        let fresh = assignment.as_ref().is_some_and(|a| {
            self.view
                .borrow()
                .assignment
                .as_ref()
                .is_none_or(|old| old.generation != a.generation)
        });
        if fresh {
            self.received += 1;
        }
        let stable = self.m.phase() == Phase::Stable && assignment.is_some();
        let now = Instant::now();
        match (stable, self.unstable_since) {
            (true, Some(since)) => {
                self.unstable_for += now - since;
                self.unstable_since = None;
            }
            (false, None) if !matches!(self.m.phase(), Phase::Left | Phase::Failed) => {
                self.unstable_since = Some(now);
            }
            _ => {}
        }
        let next = GroupView {
            phase: self.m.phase(),
            member_id: self.m.member_id().to_string(),
            assignment,
            error: self.m.last_error().cloned(),
            assignments_received: self.received,
            stats: self.m.stats(),
            unstable_for: self.unstable_for,
        };
        self.view.send_if_modified(|v| {
            if v.same(&next) {
                false
            } else {
                *v = next;
                true
            }
        });
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn ms(d: Duration) -> i32 {
    // validate() bounds the timeouts to i32 milliseconds.
    d.as_millis().min(i32::MAX as u128) as i32
}

fn static_needs(api: ApiKey, version: i16, min: i16) -> Result<()> {
    if version < min {
        return Err(Error::invalid(format!(
            "static membership (group.instance.id) needs {api:?} v{min}+, the coordinator \
             offers v{version}"
        )));
    }
    Ok(())
}

fn code_error(code: i16, api: ApiKey) -> Error {
    Error::from_code(code)
        .unwrap_or_else(|| Error::protocol(format!("error code {code}")))
        .api(api)
}

async fn join(
    client: &Client,
    cfg: &MembershipConfig,
    call: JoinCall,
    protocols: Vec<(String, Bytes)>,
) -> Result<JoinAnswer> {
    let protocols: Vec<JoinGroupRequestProtocol> = protocols
        .into_iter()
        .map(|(name, metadata)| {
            JoinGroupRequestProtocol::default()
                .with_name(sb(&name))
                .with_metadata(metadata)
        })
        .collect();
    let wait = cfg.rebalance_timeout.max(cfg.session_timeout);
    let resp: JoinGroupResponse = client
        .group_call(
            &cfg.group_id,
            wait,
            |r: &JoinGroupResponse| r.error_code,
            |v| {
                let mut r = JoinGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_session_timeout_ms(ms(cfg.session_timeout))
                    .with_member_id(sb(&call.member_id))
                    .with_protocol_type(sb(&cfg.protocol_type))
                    .with_protocols(protocols.clone());
                if v >= 1 {
                    r.rebalance_timeout_ms = ms(cfg.rebalance_timeout);
                }
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::JoinGroup, v, 5)?;
                    r.group_instance_id = Some(sb(id));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(JoinAnswer::Joined(Joined {
            member_id: resp.member_id.to_string(),
            generation: resp.generation_id,
            leader_id: resp.leader.to_string(),
            protocol: resp
                .protocol_name
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            protocol_type: resp.protocol_type.as_ref().map(ToString::to_string),
            skip_assignment: resp.skip_assignment,
            members: resp
                .members
                .into_iter()
                .map(|m| JoinedMember {
                    member_id: m.member_id.to_string(),
                    instance_id: m.group_instance_id.map(|s| s.to_string()),
                    metadata: m.metadata,
                })
                .collect(),
        })),
        79 => Ok(JoinAnswer::MemberIdRequired(resp.member_id.to_string())),
        c => Err(code_error(c, ApiKey::JoinGroup)),
    }
}

async fn sync(
    client: &Client,
    cfg: &MembershipConfig,
    call: SyncCall,
    assignments: Vec<(String, Bytes)>,
) -> Result<Bytes> {
    let assignments: Vec<SyncGroupRequestAssignment> = assignments
        .into_iter()
        .map(|(member, bytes)| {
            SyncGroupRequestAssignment::default()
                .with_member_id(sb(&member))
                .with_assignment(bytes)
        })
        .collect();
    let wait = cfg.rebalance_timeout;
    let resp: SyncGroupResponse = client
        .group_call(
            &cfg.group_id,
            wait,
            |r: &SyncGroupResponse| r.error_code,
            |v| {
                let mut r = SyncGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_generation_id(call.generation)
                    .with_member_id(sb(&call.member_id))
                    .with_assignments(assignments.clone());
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::SyncGroup, v, 3)?;
                    r.group_instance_id = Some(sb(id));
                }
                if v >= 5 {
                    r.protocol_type = Some(sb(&cfg.protocol_type));
                    r.protocol_name = Some(sb(&call.protocol));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(resp.assignment),
        c => Err(code_error(c, ApiKey::SyncGroup)),
    }
}

async fn heartbeat(client: &Client, cfg: &MembershipConfig, call: HeartbeatCall) -> Result<()> {
    let resp: HeartbeatResponse = client
        .group_call(
            &cfg.group_id,
            Duration::ZERO,
            |r: &HeartbeatResponse| r.error_code,
            |v| {
                let mut r = HeartbeatRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_generation_id(call.generation)
                    .with_member_id(sb(&call.member_id));
                if let Some(id) = &call.instance_id {
                    static_needs(ApiKey::Heartbeat, v, 3)?;
                    r.group_instance_id = Some(sb(id));
                }
                Ok(r)
            },
        )
        .await?;
    match resp.error_code {
        0 => Ok(()),
        c => Err(code_error(c, ApiKey::Heartbeat)),
    }
}

async fn leave(client: &Client, cfg: &MembershipConfig, call: LeaveCall) -> Result<()> {
    let resp: LeaveGroupResponse = client
        .group_call(
            &cfg.group_id,
            Duration::ZERO,
            |r: &LeaveGroupResponse| r.error_code,
            |_| {
                // LeaveGroup v3+ (the only versions this client sends): the batch form.
                let mut m = MemberIdentity::default().with_member_id(sb(&call.member_id));
                m.group_instance_id = call.instance_id.as_deref().map(sb);
                Ok(LeaveGroupRequest::default()
                    .with_group_id(GroupId(sb(&cfg.group_id)))
                    .with_members(vec![m]))
            },
        )
        .await?;
    if resp.error_code != 0 {
        return Err(code_error(resp.error_code, ApiKey::LeaveGroup));
    }
    match resp.members.iter().find(|m| m.error_code != 0) {
        Some(m) => Err(code_error(m.error_code, ApiKey::LeaveGroup)),
        None => Ok(()),
    }
}
