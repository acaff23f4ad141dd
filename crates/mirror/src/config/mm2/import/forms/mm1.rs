//! A MirrorMaker 1 setup (`kafka-mirror-maker.sh --consumer.config C --producer.config P
//! --include REGEX`) → `mm2.properties` entries for one flow `source` → `target`.
//!
//! MirrorMaker 1 kept topic names and synced nothing but records, so the flow has
//! identity naming and no heartbeats, checkpoints, group offset, topic config or ACL
//! sync; topics it creates get the broker's default replication factor, as auto-created
//! topics did. Connection and security keys become the cluster's; other client keys are
//! reported as the client tuning they are.

use super::super::super::properties::{self, Property};
use super::{ImportError, Rewritten};

/// The two cluster aliases.
const SOURCE: &str = "source";
const TARGET: &str = "target";

/// Client keys that describe the connection, read as the cluster's own.
fn connection_key(k: &str) -> bool {
    [
        "bootstrap.servers",
        "client.id",
        "request.timeout.ms",
        "socket.connection.setup.timeout.ms",
        "metadata.max.age.ms",
        "security.protocol",
    ]
    .contains(&k)
        || k.starts_with("ssl.")
        || k.starts_with("sasl.")
}

/// Rewrites a MirrorMaker 1 consumer config, producer config and topic regex.
pub(in super::super) fn rewrite(
    consumer: &str,
    producer: &str,
    include: &str,
) -> Result<Rewritten, ImportError> {
    let consumer = properties::parse(consumer)?;
    if consumer.iter().any(|p| p.key == "clusters") {
        return Err(ImportError::UnsupportedForm(
            "the file has `clusters`: it is an MM2 file, not a MirrorMaker 1 consumer config; \
             drop --producer-config and --include"
                .to_owned(),
        ));
    }
    // The producer file's lines are not the consumer file's: its keys carry line 0.
    let producer: Vec<Property> = properties::parse(producer)?
        .into_iter()
        .map(|p| Property { line: 0, ..p })
        .collect();
    let mut out = Rewritten::new();
    out.set("clusters".to_owned(), format!("{SOURCE}, {TARGET}"), 0);
    for (alias, client, entries) in [
        (SOURCE, "consumer", consumer),
        (TARGET, "producer", producer),
    ] {
        client_keys(&mut out, alias, client, entries);
    }
    flow_keys(&mut out, include);
    Ok(out)
}

/// The keys of one client config (`client`: `consumer` or `producer`) → the cluster
/// `alias`'s keys; its `group.id` is noted, its `auto.offset.reset` goes to the flow.
fn client_keys(out: &mut Rewritten, alias: &str, client: &str, entries: Vec<Property>) {
    for p in entries {
        let key = match p.key.as_str() {
            "group.id" if client == "consumer" => {
                out.notes.push((
                    "group.id".to_owned(),
                    "MirrorMaker 1's consumer group: Strait does not read its committed offsets; it \
                     keeps its own positions in its state topic on the target, and a new flow starts \
                     at `topics.start_position`"
                        .to_owned(),
                ));
                continue;
            }
            "auto.offset.reset" if client == "consumer" => {
                format!("{SOURCE}->{TARGET}.consumer.auto.offset.reset")
            }
            k if connection_key(k) => format!("{alias}.{k}"),
            k => format!("{alias}.{client}.{k}"),
        };
        out.set(key, p.value, p.line);
    }
}

/// The flow's keys: the topics `include` selects, identity naming, and nothing synced but
/// records, with a comment saying so.
fn flow_keys(out: &mut Rewritten, include: &str) {
    let flow = |k: &str| format!("{SOURCE}->{TARGET}.{k}");
    out.set(flow("enabled"), "true".to_owned(), 0);
    out.set(flow("topics"), include.to_owned(), 0);
    for (k, v) in [
        ("replication.policy.class", "IdentityReplicationPolicy"),
        ("emit.heartbeats.enabled", "false"),
        ("emit.checkpoints.enabled", "false"),
        ("sync.group.offsets.enabled", "false"),
        ("sync.topic.configs.enabled", "false"),
        ("sync.topic.acls.enabled", "false"),
        ("replication.factor", "-1"),
    ] {
        out.set(flow(k), v.to_owned(), 0);
    }
    out.comments.push(
        "MirrorMaker 1 setup: topics keep their names (naming.policy = \"identity\": a topic coming back \
         from the target is not recognised as a cycle), and only records are replicated (no heartbeats, \
         checkpoints, group offsets, topic configs or ACLs). Turn on what you want under [flows.sync]."
            .to_owned(),
    );
}
