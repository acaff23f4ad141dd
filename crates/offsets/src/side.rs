//! The two sides of a replication flow.

/// One side of a replication flow: the cluster records are read from, or the one they are
/// written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The cluster records are replicated from.
    Source,
    /// The cluster records are replicated to.
    Target,
}

impl Side {
    /// The opposite side.
    pub const fn other(self) -> Side {
        match self {
            Side::Source => Side::Target,
            Side::Target => Side::Source,
        }
    }

    /// Index into the `[source, target]` pairs the map keeps.
    pub(crate) const fn index(self) -> usize {
        match self {
            Side::Source => 0,
            Side::Target => 1,
        }
    }
}

/// Largest offset the map accepts: Kafka offsets are non-negative `i64`s, and so are the
/// "next offset" positions derived from them (`offset + len` never exceeds this).
pub const MAX_OFFSET: u64 = i64::MAX as u64;
