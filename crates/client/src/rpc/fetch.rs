//! fetch
