//! The compression codec ids of a batch's attributes: the vocabulary shared by the header,
//! the codecs ([`crate::compression`]) and the errors that name a codec.

use std::fmt;

/// Compression codec of a batch (attribute bits 0..3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Compression {
    /// No compression.
    #[default]
    None,
    /// gzip (RFC 1952).
    Gzip,
    /// Snappy: xerial-framed or raw.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec for attribute bits 0..3, if any.
    pub fn from_id(id: u8) -> Option<Compression> {
        Self::ALL.get(usize::from(id)).copied()
    }

    /// The codec's id in attribute bits 0..3.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The name Kafka's `compression.type` config uses.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
