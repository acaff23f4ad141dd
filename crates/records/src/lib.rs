//! Kafka v2 record batches over `bytes::Bytes` (being built; see issue 2).
