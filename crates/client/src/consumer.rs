//! A record-level consumer for one partition: fetch → batches → records.

use bytes::Bytes;
use strait_records::{
    AbortedFilter, AbortedTransaction, Batch, Limits, Resolved, TxnResolver, split,
};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::rpc::fetch::{FetchOptions, FetchPosition, FetchedPartition, IsolationLevel};

/// A consumed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    /// Offset.
    pub offset: i64,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers in order: `(name, value)`.
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

/// Reads one partition from an offset, following the leader. Control batches are skipped;
/// with [`IsolationLevel::ReadCommitted`] aborted transactions are filtered out (by the
/// broker's aborted list; with [`PartitionConsumer::resolving_markers`] also by the
/// transactions' own markers).
#[derive(Debug)]
pub struct PartitionConsumer {
    client: Client,
    topic: String,
    partition: i32,
    offset: i64,
    high_watermark: i64,
    opts: FetchOptions,
    limits: Limits,
    resolver: Option<TxnResolver>,
    /// Where reading started: records of a first batch straddling it are not returned.
    start: i64,
}

impl PartitionConsumer {
    /// A consumer of `topic`/`partition` starting at `offset`.
    pub fn new(client: Client, topic: &str, partition: i32, offset: i64) -> Self {
        PartitionConsumer {
            client,
            topic: topic.to_string(),
            partition,
            offset,
            high_watermark: -1,
            opts: FetchOptions::default(),
            limits: Limits::default(),
            resolver: None,
            start: offset,
        }
    }

    /// Returns a transaction's records only once its COMMIT marker is read, and never
    /// those of one that ended with ABORT, whatever the broker's aborted list says (some
    /// Kafka-compatible brokers send none). Records of a transaction still open at the
    /// end of the log are not returned (they stay held until its marker arrives).
    pub fn resolving_markers(mut self) -> Self {
        self.resolver = Some(TxnResolver::new(self.limits));
        self
    }

    /// [`PartitionConsumer::resolving_markers`], returning each transaction's records as
    /// soon as its COMMIT marker is read, past other producers' open transactions: records
    /// come in commit order, not offset order (see
    /// [`TxnResolver::in_commit_order`] for the logs where that is right).
    pub fn resolving_markers_in_commit_order(mut self) -> Self {
        self.resolver = Some(TxnResolver::in_commit_order(self.limits));
        self
    }

    /// Reads on through `client` (another connection to the same cluster), keeping the
    /// position and the transactions held so far.
    pub fn set_client(&mut self, client: Client) {
        self.client = client;
    }

    /// Sets the fetch options.
    pub fn with_options(mut self, opts: FetchOptions) -> Self {
        self.opts = opts;
        self
    }

    /// The next offset to read.
    pub fn position(&self) -> i64 {
        self.offset
    }

    /// The high watermark from the last fetch (-1 before the first).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// One Fetch of the partition at the position from its leader (retried as the client
    /// retries); `None` when the answer does not hold the partition.
    async fn fetch_partition(&self) -> Result<Option<FetchedPartition>> {
        let client = self.client.clone();
        client
            .with_retries("consume", || async {
                let (leader, epoch) = client.leader_for(&self.topic, self.partition).await?;
                let mut pos = FetchPosition::new(self.topic.clone(), self.partition, self.offset);
                pos.current_leader_epoch = epoch;
                pos.max_bytes = self.opts.max_bytes;
                let res = client.fetch(leader, &[pos], &self.opts).await?;
                let p = res
                    .partitions
                    .into_iter()
                    .find(|p| p.topic == self.topic && p.partition == self.partition);
                match p {
                    Some(p) => match p.error() {
                        Some(e) => Err(e.broker(leader).offset(self.offset)),
                        None => Ok(Some(p)),
                    },
                    None => Ok(None),
                }
            })
            .await
    }

    /// One fetch; returns the records at or after the position (possibly none) and
    /// advances the position past every batch returned.
    pub async fn poll(&mut self) -> Result<Vec<ConsumedRecord>> {
        let part = self.fetch_partition().await?;
        let Some(part) = part else {
            return Ok(Vec::new());
        };
        self.high_watermark = part.high_watermark;
        let batches = split(part.records, &self.limits)
            .map_err(|e| Error::protocol(format!("fetched records: {e}")))?
            .batches;
        let aborted: Vec<AbortedTransaction> = part
            .aborted_transactions
            .iter()
            .map(|a| AbortedTransaction {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
            })
            .collect();
        let mut filter = AbortedFilter::new(&aborted, self.limits);
        let committed_only = self.opts.isolation == IsolationLevel::ReadCommitted;
        let mut out = Vec::new();
        for b in batches {
            let h = *b.header();
            let verdict = filter
                .check(&b)
                .map_err(|e| Error::protocol(format!("batch at {}: {e}", h.base_offset)))?;
            let next = h.next_offset();
            if h.next_offset() <= self.offset {
                continue; // already read (a fetch can start before the position)
            }
            if let Some(resolver) = &mut self.resolver {
                resolver
                    .push(b, verdict)
                    .map_err(|e| Error::protocol(format!("batch at {}: {e}", h.base_offset)))?;
                self.offset = self.offset.max(next);
                while let Some(resolved) = resolver.pop() {
                    if let Resolved::Forward(b) = resolved {
                        records_of(&b, self.start, &self.limits, &mut out)?;
                    }
                }
                continue;
            }
            if h.attributes.is_control() || (committed_only && verdict.is_dropped()) {
                self.offset = self.offset.max(next);
                continue;
            }
            records_of(&b, self.offset, &self.limits, &mut out)?;
            self.offset = self.offset.max(next);
        }
        Ok(out)
    }
}

/// Appends the records of `b` at or after `from` to `out` (its CRC checked first).
fn records_of(b: &Batch, from: i64, limits: &Limits, out: &mut Vec<ConsumedRecord>) -> Result<()> {
    let base = b.header().base_offset;
    b.verify_crc()
        .map_err(|e| Error::protocol(format!("batch at {base}: {e}")))?;
    let records = b
        .records(limits)
        .map_err(|e| Error::protocol(format!("batch at {base}: {e}")))?;
    for r in records {
        let r = r.map_err(|e| Error::protocol(format!("record: {e}")))?;
        if r.offset < from {
            continue; // a batch can start before the offset we asked for
        }
        out.push(ConsumedRecord {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key,
            value: r.value,
            headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
        });
    }
    Ok(())
}
