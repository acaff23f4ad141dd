//! The lead jobs' loops ([`super::LeadJobs`]), each run in its own task by
//! [`super::Control`]: group sync, reverse group sync, topic ACL sync and heartbeats,
//! one round every tick, an error logged and the next round tried.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use strait_client::Client;
use tokio::time::Interval;

use crate::acls::AclSync;
use crate::config::Flow;
use crate::groups::{GroupSync, ReverseSync};
use crate::heartbeat::Heartbeats;
use crate::state::StateTail;

/// Translates the groups' offsets every tick, with every partition's maps read from the
/// state topic first when `from_state` (scale-out); the count translated goes into
/// `translated`. `name`: the flow's, for the log.
pub(super) async fn sync_groups(
    mut groups: GroupSync,
    from_state: Option<(Client, Flow)>,
    translated: Arc<AtomicUsize>,
    mut tick: Interval,
    name: String,
) {
    let mut state = from_state.as_ref().map(|(_, f)| StateTail::new(f));
    loop {
        tick.tick().await;
        if let (Some((target, flow)), Some(state)) = (&from_state, &mut state) {
            match state.maps(target, flow).await {
                Ok(maps) => groups.set_maps(Arc::new(maps)),
                Err(e) => {
                    tracing::warn!(flow = %name, error = %e,
                        "group sync: cannot read the flow's maps from its state topic");
                    continue;
                }
            }
        }
        match groups.sync_once().await {
            Ok(r) => translated.store(r.groups_translated, Ordering::Relaxed),
            Err(e) => tracing::warn!(flow = %name, error = %e, "group sync failed"),
        }
    }
}

/// Translates the target's commits back onto the source every tick, with the maps read
/// as [`sync_groups`] reads them.
pub(super) async fn sync_groups_back(
    mut reverse: ReverseSync,
    from_state: Option<(Client, Flow)>,
    mut tick: Interval,
    name: String,
) {
    let mut state = from_state.as_ref().map(|(_, f)| StateTail::new(f));
    loop {
        tick.tick().await;
        if let (Some((target, flow)), Some(state)) = (&from_state, &mut state) {
            match state.maps(target, flow).await {
                Ok(maps) => reverse.set_maps(Arc::new(maps)),
                Err(e) => {
                    tracing::warn!(flow = %name, error = %e, "reverse group sync: \
                        cannot read the flow's maps from its state topic");
                    continue;
                }
            }
        }
        if let Err(e) = reverse.sync_once().await {
            tracing::warn!(flow = %name, error = %e, "reverse group sync failed");
        }
    }
}

/// Syncs the topic ACLs every tick, until the sync turns itself off.
pub(super) async fn sync_acls(mut acls: AclSync, mut tick: Interval, name: String) {
    while acls.off().is_none() {
        tick.tick().await;
        match acls.sync_once().await {
            Ok(r) if r.created > 0 => {
                tracing::info!(flow = %name, created = r.created, present = r.present,
                    skipped = r.skipped, "topic ACLs synced")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(flow = %name, error = %e, "topic ACL sync failed"),
        }
    }
}

/// Emits the MM2 heartbeats every tick.
pub(super) async fn emit_heartbeats(mut heartbeats: Heartbeats, mut tick: Interval, name: String) {
    loop {
        tick.tick().await;
        if let Err(e) = heartbeats.emit().await {
            tracing::warn!(flow = %name, error = %e, "heartbeat failed");
        }
    }
}
