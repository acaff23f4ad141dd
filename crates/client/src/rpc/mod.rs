//! Typed RPCs, one module per API group. Each module adds methods to
//! [`Client`](crate::client::Client).

pub mod acls;
pub mod admin;
pub mod authz;
pub mod fetch;
pub mod groups;
pub mod offsets;
pub mod produce;
pub mod txn;

/// Kept here for callers that named it by this path; it lives in the framing code.
#[doc(no_inline)]
pub use crate::frame::Request;
