//! A record's content as `strait verify` compares it: a digest per field, so a difference
//! is named by field and a record costs 32 bytes to remember.

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use strait_client::ConsumedRecord;

/// A record's content: a digest per field (the first 8 bytes of its SHA-256), so a
/// difference can be named by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Content {
    /// The key (null and empty differ).
    pub key: u64,
    /// The value (null and empty differ).
    pub value: u64,
    /// The headers, in order.
    pub headers: u64,
    /// The timestamp (ms).
    pub timestamp: i64,
    /// The value is null.
    pub tombstone: bool,
}

/// A field of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The key.
    Key,
    /// The value.
    Value,
    /// The headers.
    Headers,
    /// The timestamp.
    Timestamp,
}

fn put(h: &mut Sha256, bytes: Option<&[u8]>) {
    match bytes {
        None => h.update([0u8]),
        Some(b) => {
            h.update([1u8]);
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        }
    }
}

fn first8(h: Sha256) -> u64 {
    let out = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&out[..8]);
    u64::from_be_bytes(b)
}

fn digest(bytes: Option<&[u8]>) -> u64 {
    let mut h = Sha256::new();
    put(&mut h, bytes);
    first8(h)
}

impl Content {
    /// The content of a consumed record.
    pub fn of(r: &ConsumedRecord) -> Content {
        let mut h = Sha256::new();
        h.update((r.headers.len() as u64).to_be_bytes());
        for (name, value) in &r.headers {
            put(&mut h, Some(name));
            put(&mut h, value.as_deref());
        }
        Content {
            key: digest(r.key.as_deref()),
            value: digest(r.value.as_deref()),
            headers: first8(h),
            timestamp: r.timestamp,
            tombstone: r.value.is_none(),
        }
    }

    /// The fields that differ from `other`'s.
    pub fn differs(&self, other: &Content) -> Vec<Field> {
        let mut out = Vec::new();
        if self.key != other.key {
            out.push(Field::Key);
        }
        if self.value != other.value {
            out.push(Field::Value);
        }
        if self.headers != other.headers {
            out.push(Field::Headers);
        }
        if self.timestamp != other.timestamp {
            out.push(Field::Timestamp);
        }
        out
    }

    /// Adds the content to a digest of records in order.
    pub(super) fn feed(&self, h: &mut Sha256) {
        h.update(self.key.to_be_bytes());
        h.update(self.value.to_be_bytes());
        h.update(self.headers.to_be_bytes());
        h.update(self.timestamp.to_be_bytes());
    }
}

/// A record read at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Its offset.
    pub offset: u64,
    /// Its content.
    pub content: Content,
}
