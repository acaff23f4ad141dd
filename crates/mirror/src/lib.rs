//! strait-mirror: the replication engine.
//!
//! Not built yet: this crate is an empty placeholder until the engine issue lands.
