//! `strait bench` writes hundreds of MiB into the clusters it is given: it refuses a
//! cluster holding anything but benchmark and internal topics, unless `--yes` says the
//! user means it. A topic is the bench's own when its name, or a prefixed replica's
//! name after its first `.`, starts with `strait-` (the bench's topics, `strait-state.*`
//! and their replicas); internal when it starts with `_` (`__consumer_offsets`,
//! `_schemas`, …).

use strait_client::Client;

/// At most this many foreign topics are named in the refusal.
const NAMED: usize = 5;

/// Whether `topic` may be in a cluster the bench writes to.
fn benchmark_or_internal(topic: &str) -> bool {
    let own = |name: &str| name.starts_with("strait-");
    topic.starts_with('_') || own(topic) || topic.split_once('.').is_some_and(|(_, r)| own(r))
}

/// The refusal for a cluster (`role`, `address`) holding `topics`, if any of them is
/// foreign.
fn refusal(role: &str, address: &str, topics: &[String]) -> Option<String> {
    let foreign: Vec<&str> = topics
        .iter()
        .map(String::as_str)
        .filter(|t| !benchmark_or_internal(t))
        .collect();
    if foreign.is_empty() {
        return None;
    }
    let more = foreign.len().saturating_sub(NAMED);
    let named = foreign[..foreign.len().min(NAMED)].join(", ");
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "the {role} {address} holds {} topic(s) that are not benchmark topics ({named}{more}); \
         `strait bench` writes hundreds of MiB into it: give it an empty cluster, or --yes \
         to bench on this one anyway",
        foreign.len()
    ))
}

/// Refuses (the reason) when `client`'s cluster holds foreign topics.
pub async fn check(client: &Client, role: &str, address: &str) -> anyhow::Result<Option<String>> {
    let meta = client.metadata(None).await?;
    let topics: Vec<String> = meta.topics.keys().cloned().collect();
    Ok(refusal(role, address, &topics))
}

#[cfg(test)]
mod tests;
