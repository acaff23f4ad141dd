//! The target's tailers: one per partition, noting when each record becomes readable.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, Result};
use strait_client::{Client, ConsumedRecord, FetchOptions};

use super::slots::Table;
use super::{Clock, HEADER, TAIL_CATCH_UP_MAX_WAIT, TAIL_MAX_WAIT, decode_header};

/// One tailer's view of the target, and what the tailers share: when each record became
/// readable, the counts, and the signal to stop.
#[derive(Clone)]
pub(super) struct Tailing {
    pub(super) client: Client,
    pub(super) topic: String,
    pub(super) clock: Clock,
    pub(super) seen: Arc<Table>,
    pub(super) received: Arc<AtomicU64>,
    pub(super) duplicates: Arc<AtomicU64>,
    pub(super) stop: Arc<AtomicBool>,
}

impl Tailing {
    /// Tails partition `p` of the target until told to stop; returns each poll's wait, µs.
    pub(super) async fn tail(self, p: i32) -> Result<Vec<u64>> {
        let opts = FetchOptions {
            max_wait: TAIL_MAX_WAIT,
            max_bytes: 8 * 1024 * 1024,
            ..FetchOptions::default()
        };
        // Falling behind the high watermark, wait longer: Tansu answers after about
        // max_wait / 2 with what it gathered, so a short wait starves a reader that is
        // catching up (the engine's fetchers do the same; docs/compatibility.md).
        let catching_up = FetchOptions {
            max_wait: TAIL_CATCH_UP_MAX_WAIT,
            ..opts
        };
        // As a read_committed consumer sees it (exactly-once: after each commit).
        let mut c = strait_client::PartitionConsumer::new(self.client.clone(), &self.topic, p, 0)
            .with_options(opts)
            .resolving_markers();
        // Each poll's wait, µs (8 bytes per poll: ~1.6 KB a second at Tansu's ~5 ms).
        let mut waits = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            let asked = self.clock.now_us();
            let records = c
                .poll()
                .await
                .with_context(|| format!("tailing {}-{p}", self.topic))?;
            waits.push(self.clock.now_us().saturating_sub(asked));
            // More waiting than this poll brought (as in the engine's fetchers).
            let behind = c.high_watermark().saturating_sub(c.position())
                > i64::try_from(records.len()).unwrap_or(i64::MAX).max(1);
            c = c.with_options(if behind { catching_up } else { opts });
            self.note_readable(p, &records, self.clock.now_us());
        }
        anyhow::Ok(waits)
    }

    /// Notes the bench's records among `records` as readable at `t`, counting duplicates.
    fn note_readable(&self, p: i32, records: &[ConsumedRecord], t: u64) {
        for r in records {
            let Some((seq, _)) = r
                .headers
                .iter()
                .find(|(k, _)| k.as_ref() == HEADER.as_bytes())
                .and_then(|(_, v)| v.as_deref())
                .and_then(decode_header)
            else {
                continue;
            };
            let dup = self.seen.set_range(p as usize, seq, seq + 1, t);
            self.duplicates.fetch_add(dup, Ordering::Relaxed);
            self.received.fetch_add(1 - dup, Ordering::Relaxed);
        }
    }
}
