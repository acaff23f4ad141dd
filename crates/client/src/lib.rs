//! strait-client: an embeddable async Kafka client.
//!
//! Not built yet: this crate is an empty placeholder until the client issue lands.
