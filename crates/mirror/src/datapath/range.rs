//! Reading one partition's records between offsets, range after range in offset order,
//! for the checks that compare two logs (a takeover's proof, `strait verify`).
//!
//! - What a fetch returns past a range is kept for the next range, so reading a partition
//!   in consecutive ranges fetches each record once.
//! - A range that starts past the position with nothing kept jumps there (a new
//!   consumer), so a sample of windows does not read what lies between them.
//! - The read stops at the range's end or at the end given when the reader was made (the
//!   partition's end read before the check), whichever comes first.
//! - A broker that answers nothing, and moves nothing, for [`STUCK_POLLS`] fetches in a row
//!   below that end fails the read: a short read would look like missing records.
//! - After each fetch, [`RangeReader::paced`]'s hook is told the bytes read (keys, values,
//!   headers) and says how long to wait before the next.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

use strait_client::{Client, ConsumedRecord, FetchOptions, PartitionConsumer};

/// Fetches in a row that return and move nothing before a read fails.
pub const STUCK_POLLS: u32 = 50;

/// How long to wait after a fetch of this many bytes.
pub type Pace = Box<dyn FnMut(u64) -> Duration + Send>;

/// Reads one partition range after range (see the module doc).
pub struct RangeReader {
    client: Client,
    topic: String,
    partition: i32,
    end: i64,
    opts: FetchOptions,
    markers: bool,
    consumer: Option<PartitionConsumer>,
    carry: VecDeque<ConsumedRecord>,
    pace: Option<Pace>,
}

impl std::fmt::Debug for RangeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeReader")
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("end", &self.end)
            .field("carry", &self.carry.len())
            .finish_non_exhaustive()
    }
}

impl RangeReader {
    /// A reader of `topic`/`partition` up to `end` (exclusive), fetching with `opts`.
    pub fn new(client: &Client, topic: &str, partition: i32, end: i64, opts: FetchOptions) -> Self {
        RangeReader {
            client: client.clone(),
            topic: topic.to_owned(),
            partition,
            end,
            opts,
            markers: false,
            consumer: None,
            carry: VecDeque::new(),
            pace: None,
        }
    }

    /// Resolves transactions by their own markers
    /// ([`PartitionConsumer::resolving_markers`]).
    pub fn resolving_markers(mut self) -> Self {
        self.markers = true;
        self
    }

    /// Waits, after each fetch, as long as `pace` says for the bytes it read.
    pub fn paced(mut self, pace: Pace) -> Self {
        self.pace = Some(pace);
        self
    }

    fn consumer_at(&self, offset: i64) -> PartitionConsumer {
        let c = PartitionConsumer::new(self.client.clone(), &self.topic, self.partition, offset)
            .with_options(self.opts);
        if self.markers {
            c.resolving_markers()
        } else {
            c
        }
    }

    /// The records at offsets `r`, in offset order.
    pub async fn range(
        &mut self,
        r: Range<i64>,
    ) -> Result<Vec<ConsumedRecord>, strait_client::Error> {
        while self.carry.front().is_some_and(|x| x.offset < r.start) {
            self.carry.pop_front();
        }
        let behind = self
            .consumer
            .as_ref()
            .is_none_or(|c| self.carry.is_empty() && c.position() < r.start);
        if behind {
            self.consumer = Some(self.consumer_at(r.start));
        }
        let to = r.end.min(self.end);
        let Some(consumer) = self.consumer.as_mut() else {
            return Ok(Vec::new());
        };
        let mut stuck = 0;
        while consumer.position() < to {
            let before = consumer.position();
            let records = consumer.poll().await?;
            if let Some(pace) = self.pace.as_mut() {
                let wait = pace(records.iter().map(payload).sum());
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
            if records.is_empty() && consumer.position() == before {
                stuck += 1;
                if stuck >= STUCK_POLLS {
                    return Err(strait_client::Error::new(strait_client::ErrorKind::Timeout)
                        .topic(&self.topic)
                        .partition(self.partition)
                        .message(format!(
                            "no record past offset {before} after {STUCK_POLLS} fetches, \
                                 below the end {to} read before"
                        )));
                }
            } else {
                stuck = 0;
            }
            self.carry.extend(records);
        }
        let mut out = Vec::new();
        while self.carry.front().is_some_and(|x| x.offset < r.end) {
            out.extend(self.carry.pop_front());
        }
        Ok(out)
    }
}

/// A record's payload bytes: key, value, header names and values.
fn payload(r: &ConsumedRecord) -> u64 {
    let headers: usize = r
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.as_ref().map_or(0, |v| v.len()))
        .sum();
    (r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len()) + headers)
        as u64
}
