//! A background producer of numbered records for the crash, exactly-once and Apache Kafka
//! scenario tests: each call writes `per_call` records to every partition, record `n` of
//! partition `p` valued `"<p>:<n>"`, through librdkafka (idempotent, at most
//! `batch_records` per batch), until stopped; stopped and joined on drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crate::TestRecord;
use crate::rdkafka::{self, ProduceOptions};

/// The running producer.
pub struct NumberedProducer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64, String>>>,
}

impl NumberedProducer {
    /// Starts writing to `topic` (partitions `0..partitions`) on `bootstrap`.
    pub fn start(
        bootstrap: String,
        topic: &'static str,
        partitions: i32,
        per_call: u64,
        batch_records: u32,
    ) -> NumberedProducer {
        Self::start_paced(
            bootstrap,
            topic,
            partitions,
            (per_call, batch_records),
            std::time::Duration::ZERO,
        )
    }

    /// [`NumberedProducer::start`] pausing `pause` after each call; `(per_call,
    /// batch_records)` as there.
    pub fn start_paced(
        bootstrap: String,
        topic: &'static str,
        partitions: i32,
        (per_call, batch_records): (u64, u32),
        pause: std::time::Duration,
    ) -> NumberedProducer {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let opts = ProduceOptions {
                idempotence: true,
                batch_num_messages: Some(batch_records),
                ..ProduceOptions::default()
            };
            let mut next = vec![0u64; partitions as usize];
            let mut total = 0;
            while !flag.load(Ordering::Acquire) {
                let mut records = Vec::new();
                for p in 0..partitions {
                    let seq = &mut next[p as usize];
                    for _ in 0..per_call {
                        records.push(TestRecord::new("k", format!("{p}:{seq}")).with_partition(p));
                        *seq += 1;
                    }
                }
                let delivered = rdkafka::produce(&bootstrap, topic, &records, &opts)
                    .map_err(|e| e.to_string())?;
                if let Some(d) = delivered.iter().find(|d| d.error.is_some()) {
                    return Err(format!("delivery failed: {d:?}"));
                }
                total += records.len() as u64;
                std::thread::sleep(pause);
            }
            Ok(total)
        });
        NumberedProducer {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops and returns how many records were produced.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(Ok(n))) => n,
            Some(Ok(Err(e))) => panic!("producer: {e}"),
            Some(Err(_)) => panic!("producer thread panicked"),
            None => 0,
        }
    }
}

impl Drop for NumberedProducer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
