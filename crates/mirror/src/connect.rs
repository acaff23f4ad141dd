//! Connecting to a configured cluster, with a deadline and an error naming the cluster
//! and its addresses.

use std::time::Duration;

use strait_client::{Client, ClientConfig};

use crate::config::Cluster;
use crate::error::MirrorError;

/// Connects to `cluster` (for `flow`), giving up after about the connect timeout plus
/// one request timeout.
pub async fn connect(cluster: &Cluster, flow: &str) -> Result<Client, MirrorError> {
    let cfg = ClientConfig::new(cluster.bootstrap_servers.clone())
        .with_client_id(cluster.client_id.clone())
        .with_connect_timeout(cluster.connect_timeout)
        .with_request_timeout(cluster.request_timeout)
        .with_retry_timeout(cluster.request_timeout)
        .with_metadata_max_age(cluster.metadata_refresh_interval);
    let deadline = cluster.connect_timeout + cluster.request_timeout + Duration::from_secs(1);
    let unreachable = |source| MirrorError::Unreachable {
        ctx: Default::default(),
        addresses: cluster.bootstrap_servers.join(","),
        timeout: deadline,
        source,
    };
    match tokio::time::timeout(deadline, Client::connect(cfg)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(unreachable(
            strait_client::Error::new(strait_client::ErrorKind::Timeout)
                .message("no broker answered"),
        )),
    }
    .map_err(|e| e.flow(flow).cluster(&cluster.name))
}
