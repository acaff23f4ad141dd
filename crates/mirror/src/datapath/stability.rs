//! Whether a source broker's last stable offset can decide transactions (`Stability`),
//! used by the fetchers to mark what a `read_committed` fetch proves committed.

use std::sync::Arc;

use strait_client::{Client, FetchedPartition};

/// Whether a source broker's last stable offset can be trusted to decide transactions.
///
/// Apache Kafka answers a `read_committed` fetch only up to the partition's last stable
/// offset (LSO), below which every transaction is decided, and lists the aborted ones
/// overlapping the data: transactional data below the LSO and not listed is committed and
/// need not wait for its marker. Tansu 0.6 has an LSO too (while a transaction is open it
/// stops there: LSO 0 < HW 150, nothing returned past it) but never an aborted list, so
/// after an abort its aborted data sits below LSO = HW looking committed
/// (docs/compatibility.md): an LSO below the high watermark proves nothing, and there only
/// the markers decide.
///
/// What proves it: the broker advertises DescribeProducers (KIP-664, Kafka 2.8+), which
/// reads the per-producer state the LSO and the aborted-transaction index come from. Tansu
/// does not advertise it. A response that contradicts the LSO (a batch returned past it)
/// withdraws the trust for good.
#[derive(Debug, Default, Clone)]
pub(super) struct Stability {
    contradicted: bool,
    /// Set by a background check of the broker's ApiVersions.
    advertised: Arc<std::sync::atomic::AtomicBool>,
}

impl Stability {
    /// Checks in the background whether `broker` advertises DescribeProducers.
    pub(super) fn check_advertised(&self, client: &Client, broker: i32) {
        let (client, flag) = (client.clone(), Arc::clone(&self.advertised));
        tokio::spawn(async move {
            let api = strait_client::protocol::messages::ApiKey::DescribeProducers;
            if client.advertises(broker, api).await.unwrap_or(false) {
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
    }

    /// Withdraws the trust if a partition of the response has a batch past its LSO.
    pub(super) fn observe(&mut self, partitions: &[FetchedPartition]) {
        self.contradicted |= partitions
            .iter()
            .filter(|p| p.error_code == 0)
            .any(|p| past_lso(p.last_stable_offset, &p.records));
    }

    pub(super) fn trusted(&self) -> bool {
        !self.contradicted && self.advertised.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether `records` hold a batch starting at or past `lso` (the base offset of each batch
/// in order; a last batch whose 12-byte head is cut short is ignored). No LSO (−1):
/// nothing to contradict.
fn past_lso(lso: i64, records: &[u8]) -> bool {
    if lso < 0 {
        return false;
    }
    let mut at = 0usize;
    while let Some(head) = records.get(at..at.saturating_add(12)) {
        let base = i64::from_be_bytes(head[0..8].try_into().unwrap_or_default());
        let len = i32::from_be_bytes(head[8..12].try_into().unwrap_or_default());
        let Ok(len) = usize::try_from(len) else { break };
        if base >= lso {
            return true;
        }
        at = at.saturating_add(12).saturating_add(len);
    }
    false
}

#[cfg(test)]
mod tests;
