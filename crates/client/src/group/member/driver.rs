//! The member's task: [`Driver`] runs the [`Membership`](crate::group::Membership) machine,
//! sends each step's call while racing it against the fence deadline, the keep-alives and
//! the commands of the handle, and publishes the [`GroupView`].

use std::future::Future;
use std::time::Instant;

use super::calls::{heartbeat, join, leave, sync};
use super::{Command, Driver, GroupView};
use crate::error::Result;
use crate::group::membership::{JoinCall, Phase, Step, SyncCall};

/// The outcome of racing a call against the fence deadline and the commands.
enum Raced<T> {
    Answer(T),
    Interrupted,
}

impl Driver {
    pub(super) async fn run(mut self) {
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
                Step::Join(call) => self.join_step(call).await,
                Step::Sync(call) => self.sync_step(call).await,
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

    /// A join step: the caller's protocols, then the JoinGroup, raced like every call.
    async fn join_step(&mut self, call: JoinCall) {
        let (client, cfg) = (self.client.clone(), self.m.config().clone());
        let protocols = match self.protocol.protocols() {
            Ok(p) => p,
            Err(e) => {
                self.m.on_protocol_failed(e);
                return;
            }
        };
        let fut = async move { join(&client, &cfg, call, protocols).await };
        if let Raced::Answer(r) = self.race(fut).await {
            self.m.on_join(Instant::now(), r);
        }
    }

    /// A sync step: the leader's assignment (the caller's assignor), then the SyncGroup,
    /// raced like every call.
    async fn sync_step(&mut self, call: SyncCall) {
        let assignments = match &call.leader_of {
            Some(members) => {
                match self
                    .protocol
                    .assign(&call.protocol, call.generation, members)
                {
                    Ok(a) => a,
                    Err(e) => {
                        self.m.on_protocol_failed(e);
                        return;
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
