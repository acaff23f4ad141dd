//! Pure: whether a partition's source topic is still the topic its feed fetches, by topic
//! id (KIP-516).
//!
//! A feed carries the id of the topic its map belongs to, and its fetcher fetches by that
//! id (Fetch v13), so a topic deleted and created again under the same name is never read
//! at the old topic's positions: the broker refuses the old id (UNKNOWN_TOPIC_ID on Kafka,
//! UNKNOWN_TOPIC_OR_PARTITION on Tansu 0.6), the router looks the topic up again, and
//! [`compare`] decides from what the metadata says.
//!
//! Rules:
//! - No id on either side (a broker below KIP-516 reports nil ids) → [`Seen::Same`]: the
//!   feed fetches by name and a re-creation is only found by the topic refresh, as before.
//! - The topic is not in the metadata → [`Seen::Gone`]: deleted, perhaps to be created
//!   again; nothing to decide yet (the topic refresh handles deletion).
//! - The same id → [`Seen::Same`] (a broker that refused it had not caught up yet).
//! - Another id → [`Seen::Recreated`]: the feed is paused (nothing of the new topic is
//!   fetched) and the flow is told once per new id ([`Recreation`]); it applies
//!   `on_topic_recreation` as for a re-creation its topic refresh finds.

use uuid::Uuid;

/// What the metadata says about a feed's topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Still the topic the feed fetches (or ids are not known).
    Same,
    /// No topic of that name now.
    Gone,
    /// A topic of that name with another id.
    Recreated {
        /// The id the feed fetches (its map's).
        old: Uuid,
        /// The id the topic has now.
        new: Uuid,
    },
}

/// Compares the id a feed fetches with the id the metadata reports for its topic name
/// (`None`: no such topic).
pub fn compare(fetching: Uuid, metadata: Option<Uuid>) -> Seen {
    match metadata {
        _ if fetching.is_nil() => Seen::Same,
        None => Seen::Gone,
        Some(id) if id.is_nil() || id == fetching => Seen::Same,
        Some(new) => Seen::Recreated { old: fetching, new },
    }
}

/// A router's report to its flow: a partition's source topic has a new id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recreation {
    /// Source topic.
    pub topic: String,
    /// The partition whose fetch found it.
    pub partition: i32,
    /// The id the partition's map belongs to.
    pub old: Uuid,
    /// The topic's id now.
    pub new: Uuid,
}

#[cfg(test)]
mod tests;
