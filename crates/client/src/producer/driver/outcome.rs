//! The outcomes of the driver's requests: a Produce response matched to its batches, and
//! every outcome fed to the sequencer (acks delivered, retries scheduled).

use kafka_protocol::messages::ProduceResponse;
use tokio::time::Instant;

use super::{Driver, InFlight, Retry};
use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::producer::sequencer::Ack;
use crate::producer::state::deliver;

impl Driver {
    pub(super) fn on_response(&mut self, req: InFlight, r: Result<Option<ProduceResponse>>) {
        if let Some(n) = self.per_broker.get_mut(&req.broker) {
            *n = n.saturating_sub(1);
        }
        let broker = req.broker;
        match r {
            Err(e) => {
                for (tp, t) in req.batches {
                    self.results.push((tp, t, Err(e.clone())));
                }
            }
            Ok(resp) => {
                let mut acks: Vec<Option<Result<Ack>>> = req.batches.iter().map(|_| None).collect();
                let mut cursor = 0;
                for topic in resp.iter().flat_map(|r| &r.responses) {
                    for p in &topic.partition_responses {
                        let n = req.batches.len();
                        let found = (0..n).map(|k| (cursor + k) % n).find(|&k| {
                            let (tp, _) = &req.batches[k];
                            tp.1 == p.index && *tp.0 == *topic.name.0.as_str()
                        });
                        let Some(k) = found else { continue };
                        cursor = k + 1;
                        acks[k] = Some(match Error::from_code(p.error_code) {
                            Some(e) => {
                                let e = match &p.error_message {
                                    Some(m) => e.message(m.to_string()),
                                    None => e,
                                };
                                Err(e.broker(broker))
                            }
                            None => Ok(Ack {
                                base_offset: p.base_offset,
                                log_append_time_ms: p.log_append_time_ms,
                                duplicate: false,
                            }),
                        });
                    }
                }
                for ((tp, t), a) in req.batches.into_iter().zip(acks) {
                    let a = a.unwrap_or_else(|| {
                        Err(Error::protocol("Produce response without the partition")
                            .broker(broker))
                    });
                    self.results.push((tp, t, a));
                }
            }
        }
        self.apply_results();
    }

    /// Feeds the collected outcomes to the sequencer, delivers acks, schedules retries.
    pub(super) fn apply_results(&mut self) {
        if self.results.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut invalidate = false;
        {
            let mut st = self.inner.state.lock();
            let st = &mut *st;
            for (tp, t, result) in self.results.drain(..) {
                let retry = result.as_ref().err().filter(|e| e.is_retriable()).cloned();
                let failed = result.as_ref().err().cloned();
                st.seq.on_result(&tp, t.token, t.attempt, result);
                if let Some(e) = &failed
                    && self.inner.transactional_id.is_some()
                    && st.seq.needs_identity()
                {
                    // Transactional: no renumbering under a new epoch inside the
                    // transaction; the batch fails with its own error (the caller aborts).
                    st.seq.fail(&tp, t.token, e.clone());
                }
                let failed = failed.is_some();
                if failed && let Some(abort) = &st.aborted {
                    st.seq.fail(&tp, t.token, abort.clone());
                }
                match retry {
                    Some(e) => {
                        if st.slots.get(&t.token).is_some_and(|s| now >= s.deadline) {
                            let timeout = self.inner.cfg.delivery_timeout;
                            st.seq.fail(
                                &tp,
                                t.token,
                                e.clone().message(format!(
                                    "delivery timeout: not acknowledged within {timeout:?}"
                                )),
                            );
                        }
                        invalidate |= e.is_stale_metadata() || e.is_network();
                        let backoff = self.inner.client.config().backoff;
                        let r = self.retries.entry(tp.clone()).or_insert_with(|| Retry {
                            backoff: Backoff::new(backoff),
                            at: now,
                        });
                        r.at = now + r.backoff.next_delay();
                    }
                    None => {
                        self.retries.remove(&tp);
                    }
                }
                deliver(st, &tp);
            }
        }
        if invalidate {
            self.inner.client.invalidate_metadata();
        }
        self.inner.changed.notify_waiters();
    }
}
