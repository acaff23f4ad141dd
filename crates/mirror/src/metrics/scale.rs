//! Scale-out metrics: per flow, what this member owns and how often (and how long) its
//! group rebalanced.

use prometheus_client::registry::Registry;

use super::catalogue::{FLOW, reg};
use super::family::{Counter, Family, Gauge, IntGauge};

/// The scale-out families.
pub(super) struct ScaleFamilies {
    owned: Family<IntGauge>,
    generation: Family<IntGauge>,
    leader: Family<IntGauge>,
    rebalances: Family<Counter>,
    rebalancing: Family<Gauge>,
}

impl ScaleFamilies {
    pub(super) fn new(r: &mut Registry) -> Self {
        ScaleFamilies {
            owned: reg(
                r,
                "strait_scale_owned_partitions",
                "Source partitions this member of the flow's group replicates now.",
                FLOW,
            ),
            generation: reg(
                r,
                "strait_scale_generation",
                "The group generation whose assignment this member runs (-1: none).",
                FLOW,
            ),
            leader: reg(
                r,
                "strait_scale_control_owner",
                "1 while this member runs the flow's control-plane jobs (topic creation and \
                 config sync, group-offset sync, checkpoints, heartbeats, ACL sync).",
                FLOW,
            ),
            rebalances: reg(
                r,
                "strait_scale_rebalances_total",
                "Assignments this member received (one per completed rebalance).",
                FLOW,
            ),
            rebalancing: reg(
                r,
                "strait_scale_rebalancing_seconds",
                "Total time this member spent without a stable assignment (joining, \
                 rebalancing, fenced) since it started.",
                FLOW,
            ),
        }
    }
}

impl super::Metrics {
    /// The member of `flow` runs `owned` partitions of `generation`, the control jobs when
    /// `control`, after `rebalances` assignments and `rebalancing_secs` without one.
    pub fn scale_member(
        &self,
        flow: &str,
        owned: usize,
        generation: i32,
        control: bool,
        rebalances: u64,
        rebalancing_secs: f64,
    ) {
        let f = &self.inner.scale;
        f.owned
            .get(&[flow])
            .set(i64::try_from(owned).unwrap_or(i64::MAX));
        f.generation.get(&[flow]).set(i64::from(generation));
        f.leader.get(&[flow]).set(i64::from(control));
        let c = f.rebalances.get(&[flow]);
        let seen = c.get();
        if rebalances > seen {
            c.inc_by(rebalances - seen);
        }
        f.rebalancing.get(&[flow]).set(rebalancing_secs);
    }
}
