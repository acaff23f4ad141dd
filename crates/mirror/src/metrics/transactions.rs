//! Exactly-once metrics: transactions committed and aborted, their size and how long
//! they stay open and take to commit.

use prometheus_client::registry::Registry;

use super::catalogue::{FLOW, reg};
use super::family::{Counter, Family, Histogram};

/// The transaction families.
pub(super) struct TxnFamilies {
    ended: Family<Counter>,
    partitions: Family<Counter>,
    open: Family<Histogram>,
    commit: Family<Histogram>,
}

impl TxnFamilies {
    pub(super) fn new(r: &mut Registry) -> Self {
        TxnFamilies {
            ended: reg(
                r,
                "strait_transactions_total",
                "Target transactions ended, by outcome (committed, failed).",
                &["flow", "outcome"],
            ),
            partitions: reg(
                r,
                "strait_transaction_partition_states_total",
                "Partition states committed with transactions (one per partition that changed).",
                FLOW,
            ),
            open: reg(
                r,
                "strait_transaction_open_seconds",
                "How long a committed transaction was open (begin to commit acknowledged); a \
                 record's wait from its acknowledgement to its commit is at most this.",
                FLOW,
            ),
            commit: reg(
                r,
                "strait_transaction_commit_seconds",
                "Time from sealing a transaction to its commit being acknowledged (waiting \
                 for in-flight batches, the state write and EndTxn).",
                FLOW,
            ),
        }
    }
}

impl super::Metrics {
    /// A transaction ended: committed with `partitions` partition states after being open
    /// `open_secs`, its commit taking `commit_secs`; or failed (the other figures unused).
    pub fn transaction_ended(
        &self,
        flow: &str,
        committed: bool,
        partitions: u64,
        open_secs: f64,
        commit_secs: f64,
    ) {
        let f = &self.inner.txn;
        let outcome = if committed { "committed" } else { "failed" };
        f.ended.get(&[flow, outcome]).inc();
        if committed {
            f.partitions.get(&[flow]).inc_by(partitions);
            f.open.get(&[flow]).observe(open_secs);
            f.commit.get(&[flow]).observe(commit_secs);
        }
    }
}
