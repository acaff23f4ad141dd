//! txn
