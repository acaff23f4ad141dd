//! offsets
