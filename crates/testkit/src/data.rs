//! Test records and a deterministic generator for them.
//!
//! [`TestRecord`] is what tests produce (through librdkafka or Strait) and compare with
//! what they read back. [`DataGen`] makes records of given sizes from a seed: the same
//! seed and calls give the same bytes on every machine.

use bytes::Bytes;

/// One record header. Kafka header names are strings; values may be null.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    /// Header name (duplicates are allowed in a record).
    pub name: String,
    /// Header value; `None` is a null value (distinct from empty).
    pub value: Option<Bytes>,
}

impl RecordHeader {
    /// A header with a value.
    pub fn new(name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        Self {
            name: name.into(),
            value: Some(value.into()),
        }
    }

    /// A header with a null value.
    pub fn null(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: None,
        }
    }
}

/// A record to produce (or as read back): the parts a producer controls.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TestRecord {
    /// Target partition; `None` lets the producer's partitioner choose.
    pub partition: Option<i32>,
    /// Key; `None` is a null key.
    pub key: Option<Bytes>,
    /// Value; `None` is a null value (a tombstone).
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<RecordHeader>,
    /// CreateTime in milliseconds; `None` lets the producer stamp the current time.
    pub timestamp: Option<i64>,
}

impl TestRecord {
    /// A record with a key and a value and nothing else.
    pub fn new(key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        Self {
            key: Some(key.into()),
            value: Some(value.into()),
            ..Self::default()
        }
    }

    /// The same record for partition `p`.
    pub fn with_partition(mut self, p: i32) -> Self {
        self.partition = Some(p);
        self
    }

    /// The same record with CreateTime `ts` (ms).
    pub fn with_timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// The same record with one more header.
    pub fn with_header(mut self, header: RecordHeader) -> Self {
        self.headers.push(header);
        self
    }
}

/// The shape of generated records: sizes and what to include.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSpec {
    /// Key length; `None` gives null keys. Keys start with the record's index
    /// (`k00000042-`) so they are unique, padded with random bytes to this length
    /// (longer if the index prefix does not fit).
    pub key_len: Option<usize>,
    /// Value length; `None` gives tombstones.
    pub value_len: Option<usize>,
    /// Headers per record, named `h0`, `h1`, ...
    pub headers: usize,
    /// Length of each header value.
    pub header_value_len: usize,
    /// Values of lowercase words (compress like text) instead of random bytes (which do
    /// not compress).
    pub compressible: bool,
    /// Partition for every record; `None` leaves it to the partitioner.
    pub partition: Option<i32>,
    /// CreateTime of record `i` is `base + i` ms; `None` leaves it to the producer.
    pub timestamp_base: Option<i64>,
}

impl Default for RecordSpec {
    /// 16-byte keys, 100-byte random values, one 8-byte header, partition 0, timestamps
    /// from 1 700 000 000 000.
    fn default() -> Self {
        Self {
            key_len: Some(16),
            value_len: Some(100),
            headers: 1,
            header_value_len: 8,
            compressible: false,
            partition: Some(0),
            timestamp_base: Some(1_700_000_000_000),
        }
    }
}

/// A deterministic generator of bytes and records (SplitMix64; not cryptographic).
#[derive(Debug, Clone)]
pub struct DataGen {
    state: u64,
    index: u64,
}

const WORDS: &[&str] = &[
    "strait",
    "kafka",
    "record",
    "batch",
    "offset",
    "replica",
    "broker",
    "fetch",
    "produce",
    "header",
    "codec",
    "mirror",
    "topic",
    "partition",
    "leader",
    "epoch",
];

impl DataGen {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed,
            index: 0,
        }
    }

    /// The next pseudo-random `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A pseudo-random number in `0..n` (`n > 0`; 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Bytes {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        Bytes::from(out)
    }

    /// `len` bytes of space-separated lowercase words (compressible, like text).
    pub fn text(&mut self, len: usize) -> Bytes {
        let mut out = Vec::with_capacity(len + 16);
        while out.len() < len {
            let w = WORDS[self.below(WORDS.len() as u64) as usize];
            out.extend_from_slice(w.as_bytes());
            out.push(b' ');
        }
        out.truncate(len);
        Bytes::from(out)
    }

    /// The next record of shape `spec`. Each call advances the record index used in keys
    /// and timestamps.
    pub fn record(&mut self, spec: &RecordSpec) -> TestRecord {
        let i = self.index;
        self.index += 1;
        let key = spec.key_len.map(|len| {
            let mut k = format!("k{i:08}-").into_bytes();
            if k.len() < len {
                let pad = self.bytes(len - k.len());
                k.extend_from_slice(&pad);
            }
            Bytes::from(k)
        });
        let value = spec.value_len.map(|len| {
            if spec.compressible {
                self.text(len)
            } else {
                self.bytes(len)
            }
        });
        let headers = (0..spec.headers)
            .map(|h| RecordHeader::new(format!("h{h}"), self.bytes(spec.header_value_len)))
            .collect();
        TestRecord {
            partition: spec.partition,
            key,
            value,
            headers,
            timestamp: spec.timestamp_base.map(|b| b + i as i64),
        }
    }

    /// `n` records of shape `spec`.
    pub fn records(&mut self, n: usize, spec: &RecordSpec) -> Vec<TestRecord> {
        (0..n).map(|_| self.record(spec)).collect()
    }

    /// A small mix of the edge cases a Kafka client must preserve, for `partition`:
    /// duplicate header names, a null header value, a null key, an empty key, a
    /// tombstone, an empty value, a 100 KiB value, a non-ASCII header name, timestamps
    /// that go backwards.
    pub fn edge_cases(&mut self, partition: i32) -> Vec<TestRecord> {
        let t = 1_700_000_000_000;
        let base = TestRecord {
            partition: Some(partition),
            ..TestRecord::default()
        };
        vec![
            TestRecord {
                key: Some(Bytes::from_static(b"dup-headers")),
                value: Some(self.bytes(32)),
                headers: vec![
                    RecordHeader::new("dup", "first"),
                    RecordHeader::new("dup", "second"),
                    RecordHeader::null("null-value"),
                    RecordHeader::new("empty", ""),
                    RecordHeader::new("n\u{e4}me", self.bytes(4)),
                ],
                timestamp: Some(t + 10),
                ..base.clone()
            },
            TestRecord {
                key: None,
                value: Some(Bytes::from_static(b"null key")),
                timestamp: Some(t + 5),
                ..base.clone()
            },
            TestRecord {
                key: Some(Bytes::new()),
                value: Some(Bytes::from_static(b"empty key")),
                timestamp: Some(t + 20),
                ..base.clone()
            },
            TestRecord {
                key: Some(Bytes::from_static(b"tombstone")),
                value: None,
                timestamp: Some(t + 1),
                ..base.clone()
            },
            TestRecord {
                key: Some(Bytes::from_static(b"empty value")),
                value: Some(Bytes::new()),
                timestamp: Some(t + 30),
                ..base.clone()
            },
            TestRecord {
                key: Some(Bytes::from_static(b"large")),
                value: Some(self.text(100 * 1024)),
                timestamp: Some(t + 40),
                ..base
            },
        ]
    }
}

#[cfg(test)]
mod tests;
