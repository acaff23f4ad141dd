//! `A->B.*` keys (else the global ones) → one `[[flows]]` table.

use super::{
    DEFAULT_POLICY, IDENTITY_POLICY, ImportError, MM2_REPLICATION_FACTOR, Props, TYPED_REFERENCE,
    literal, placeholders, regex_list,
};
use crate::config::delivery::{DeliverySpec, Guarantee};
use crate::config::flow::FlowSpec;
use crate::config::intervals::IntervalsSpec;
use crate::config::naming::{NamingPolicy, NamingSpec};
use crate::config::sync::SyncSpec;
use crate::config::topics::{StartPosition, TopicsSpec};

/// MM2's `isInternalTopic` (DefaultReplicationPolicy): names ending `.internal` or
/// `-internal` (its own checkpoints and offset-syncs topics, Connect's), and names starting
/// with `__` or `.`. MM2 never replicates them, whatever `topics.exclude` says.
pub(super) const INTERNAL_TOPICS: &[&str] = &[r".*[\-\.]internal", r"__.*", r"\..*"];

impl Props {
    /// The flow `source` → `target`: its per-flow `A->B.<k>` keys, else the global `<k>`.
    pub(super) fn flow(&mut self, source: &str, target: &str) -> Result<FlowSpec, ImportError> {
        let mut flow = FlowSpec {
            name: None,
            source: source.to_owned(),
            target: target.to_owned(),
            enabled: false,
            state_topic: None,
            topics: Default::default(),
            naming: Default::default(),
            groups: Default::default(),
            topic_configs: Default::default(),
            sync: Default::default(),
            intervals: Default::default(),
            delivery: Default::default(),
            scale_out: None,
        };
        let fk = |k: &str| vec![format!("{source}->{target}.{k}"), k.to_owned()];
        // MM2 default: a flow is off unless enabled.
        if let Some(b) = self.boolean(&fk("enabled")) {
            flow.enabled = b;
        }
        self.filters(&mut flow, &fk);
        self.naming(&mut flow.naming, source, &fk)?;
        self.topic_creation(&mut flow.topics, source, target, &fk);
        self.sync(&mut flow.sync, &fk);
        self.intervals(&mut flow.intervals, &fk);
        self.delivery(&mut flow.delivery, &fk, target);
        Ok(flow)
    }

    /// `topics`, `topics.exclude`, `groups`, `groups.exclude` and
    /// `config.properties.exclude` (each also by its pre-3.0 `blacklist` name, which the
    /// new name beats) → the flow's filters; MM2's internal topics are always excluded.
    fn filters(&mut self, flow: &mut FlowSpec, fk: &dyn Fn(&str) -> Vec<String>) {
        if let Some((_, v)) = self.first(&fk("topics")) {
            flow.topics.include = regex_list(&v);
        }
        let exclude = [fk("topics.exclude"), fk("topics.blacklist")].concat();
        if let Some((_, v)) = self.first(&exclude) {
            flow.topics.exclude = regex_list(&v);
        }
        // MM2 never replicates its internal topics, whatever `topics.exclude` says.
        for internal in INTERNAL_TOPICS {
            if !flow.topics.exclude.iter().any(|e| e == internal) {
                flow.topics.exclude.push((*internal).to_owned());
            }
        }
        if let Some((_, v)) = self.first(&fk("groups")) {
            flow.groups.include = regex_list(&v);
        }
        if let Some((_, v)) = self.first(&[fk("groups.exclude"), fk("groups.blacklist")].concat()) {
            flow.groups.exclude = regex_list(&v);
        }
        if let Some((_, v)) = self.first(
            &[
                fk("config.properties.exclude"),
                fk("config.properties.blacklist"),
            ]
            .concat(),
        ) {
            flow.topic_configs.exclude = regex_list(&v);
        }
    }

    /// `replication.factor` (MM2's default 2 if unset) and the consumer's
    /// `auto.offset.reset` → how target topics are created and where new ones start.
    fn topic_creation(
        &mut self,
        topics: &mut TopicsSpec,
        source: &str,
        target: &str,
        fk: &dyn Fn(&str) -> Vec<String>,
    ) {
        topics.replication_factor = MM2_REPLICATION_FACTOR;
        if let Some((k, v)) = self.typed(&fk("replication.factor")) {
            match v.parse::<i64>() {
                Ok(rf) => topics.replication_factor = rf,
                Err(_) => self.unmapped(&k, "not an integer; MM2's default 2 was used"),
            }
        }
        if let Some((k, v)) = self.typed(&[
            format!("{source}->{target}.consumer.auto.offset.reset"),
            format!("{source}.consumer.auto.offset.reset"),
            "consumer.auto.offset.reset".to_owned(),
        ]) {
            match v.to_ascii_lowercase().as_str() {
                "earliest" => topics.start_position = StartPosition::Earliest,
                "latest" => topics.start_position = StartPosition::Latest,
                _ => self.unmapped(
                    &k,
                    "only earliest and latest have an equivalent (`topics.start_position`)",
                ),
            }
        }
    }

    /// The `*.enabled` switches of topic config, group offset, heartbeat, checkpoint and
    /// ACL syncing → `sync`.
    fn sync(&mut self, sync: &mut SyncSpec, fk: &dyn Fn(&str) -> Vec<String>) {
        sync.topic_configs = self
            .boolean(&fk("sync.topic.configs.enabled"))
            .unwrap_or(true);
        // MM2's default is false; Strait's is true. Keep MM2's behaviour.
        sync.group_offsets = self
            .boolean(&fk("sync.group.offsets.enabled"))
            .unwrap_or(false);
        sync.heartbeats = self.boolean(&fk("emit.heartbeats.enabled")).unwrap_or(true);
        sync.checkpoints = self
            .boolean(&fk("emit.checkpoints.enabled"))
            .unwrap_or(true);
        sync.topic_acls = self.boolean(&fk("sync.topic.acls.enabled")).unwrap_or(true);
    }

    /// The `*.interval.seconds` keys → `intervals`.
    fn intervals(&mut self, iv: &mut IntervalsSpec, fk: &dyn Fn(&str) -> Vec<String>) {
        for (mm2, slot) in [
            ("refresh.topics.interval.seconds", &mut iv.topic_refresh),
            (
                "sync.topic.configs.interval.seconds",
                &mut iv.topic_config_sync,
            ),
            ("emit.checkpoints.interval.seconds", &mut iv.checkpoint),
            ("sync.topic.acls.interval.seconds", &mut iv.topic_acl_sync),
            ("emit.heartbeats.interval.seconds", &mut iv.heartbeat),
        ] {
            if let Some(d) = self.seconds(&fk(mm2)) {
                *slot = d;
            }
        }
        // Strait discovers groups and syncs their offsets in one pass: the shorter MM2 cadence.
        let group_syncs = [
            self.seconds(&fk("sync.group.offsets.interval.seconds")),
            self.seconds(&fk("refresh.groups.interval.seconds")),
        ];
        if let Some(d) = group_syncs.into_iter().flatten().min() {
            iv.group_sync = d;
        }
    }

    /// `replication.policy.class`, `replication.policy.separator` and
    /// `source.cluster.alias` → `naming`.
    fn naming(
        &mut self,
        naming: &mut NamingSpec,
        source: &str,
        fk: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<(), ImportError> {
        let separator = self.typed(&fk("replication.policy.separator"));
        let alias = self.first(&fk("source.cluster.alias"));
        if let Some((k, v)) = self.typed(&fk("replication.policy.class")) {
            self.policy_class(naming, k, v, separator.as_ref())?;
        }
        let empty_alias = alias.as_ref().is_some_and(|(_, a)| a.is_empty());
        match &separator {
            // MM2 before 3.0 had no identity policy: an empty separator with an empty
            // `source.cluster.alias` names replicas `"" + "" + topic`.
            Some((k, s))
                if s.is_empty() && (empty_alias || naming.policy == NamingPolicy::Identity) =>
            {
                naming.policy = NamingPolicy::Identity;
                let k = k.clone();
                self.unmapped(
                    &k,
                    "an empty separator with an empty `source.cluster.alias` (or an identity policy) \
                     keeps the source topic names: imported as `naming.policy = \"identity\"` with the \
                     default separator (Strait still prefixes heartbeats topics, as IdentityReplicationPolicy does)",
                );
                return Ok(());
            }
            Some((_, s)) => naming.separator = literal(s),
            None => {}
        }
        if let Some((k, a)) = alias {
            if a.contains(placeholders::OPEN) {
                self.unmapped(&k, TYPED_REFERENCE);
            } else if a != source && naming.policy == NamingPolicy::Prefix {
                naming.alias = Some(a);
            } else if a != source {
                self.unmapped(
                    &k,
                    "identity naming writes no alias into topic names; not used",
                );
            }
        }
        Ok(())
    }

    /// `replication.policy.class` (`k` = `v`) → `naming.policy`: MM2's two policies, else
    /// the `--policy` choice; else an error naming the separator `prefix` would use.
    fn policy_class(
        &mut self,
        naming: &mut NamingSpec,
        k: String,
        v: String,
        separator: Option<&(String, String)>,
    ) -> Result<(), ImportError> {
        let class = v.rsplit('.').next().unwrap_or(&v);
        match (class, self.policy_choice) {
            (DEFAULT_POLICY, _) => naming.policy = NamingPolicy::Prefix,
            // Also Strimzi's `io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy`.
            (IDENTITY_POLICY, _) => naming.policy = NamingPolicy::Identity,
            (_, Some(chosen)) => {
                naming.policy = chosen;
                self.unmapped(
                    &k,
                    format!(
                        "a custom replication policy cannot be loaded; `naming.policy = \"{chosen}\"` \
                         as --policy asked: check that it names topics as the class did"
                    ),
                );
            }
            (_, None) => {
                let line = self.map.get(&k).map_or(0, |p| p.line);
                return Err(ImportError::CustomPolicy {
                    key: k,
                    line,
                    class: v,
                    separator: separator
                        .map_or_else(|| naming.separator.clone(), |(_, s)| s.clone()),
                });
            }
        }
        Ok(())
    }

    /// `exactly.once.source.support` (the worker's switch: `enabled` turns exactly-once
    /// on; `preparing` and `disabled` keep at-least-once), `transaction.boundary`
    /// (`poll` and `interval` both commit on Strait's interval; `connector` has no
    /// equivalent), `transaction.boundary.interval.ms`, and the producer's
    /// `transaction.timeout.ms`.
    fn delivery(&mut self, d: &mut DeliverySpec, fk: &dyn Fn(&str) -> Vec<String>, target: &str) {
        // Also the target cluster's worker setting (`B.exactly.once.source.support`).
        let mut support = fk("exactly.once.source.support");
        support.insert(1, format!("{target}.exactly.once.source.support"));
        if let Some((k, v)) = self.first(&support) {
            match v.to_ascii_lowercase().as_str() {
                "enabled" => d.guarantee = Guarantee::ExactlyOnce,
                "preparing" | "disabled" => d.guarantee = Guarantee::AtLeastOnce,
                _ => self.unmapped(
                    &k,
                    "not enabled, preparing or disabled; at-least-once was used",
                ),
            }
        }
        if let Some((k, v)) = self.first(&fk("transaction.boundary")) {
            match v.to_ascii_lowercase().as_str() {
                "poll" | "interval" => {}
                _ => self.unmapped(
                    &k,
                    "only poll and interval have an equivalent: Strait commits every \
                     `delivery.transaction_interval`",
                ),
            }
        }
        for (key, slot) in [
            (
                "transaction.boundary.interval.ms",
                &mut d.transaction_interval,
            ),
            (
                "producer.transaction.timeout.ms",
                &mut d.transaction_timeout,
            ),
        ] {
            let mut keys = fk(key);
            keys.insert(1, format!("{target}.{key}"));
            let found = keys.into_iter().find(|k| self.map.contains_key(k.as_str()));
            if let Some(k) = found
                && let Some(v) = self.millis(&k)
            {
                *slot = v;
            }
        }
    }
}
