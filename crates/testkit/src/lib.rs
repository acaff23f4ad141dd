//! strait-testkit: broker processes and test data for Strait's tests and benches.
//!
//! Not built yet: this crate is an empty placeholder until the client issue lands.
