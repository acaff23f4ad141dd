//! Connecting to a configured cluster, with a deadline and an error naming the cluster
//! and its addresses.

use std::time::Duration;

use strait_client::{Client, ClientConfig};

use crate::config::Cluster;
use crate::error::MirrorError;

/// The client settings for `cluster` (timeouts, client id), without security.
pub fn client_config(cluster: &Cluster) -> ClientConfig {
    ClientConfig::new(cluster.bootstrap_servers.clone())
        .with_client_id(cluster.client_id.clone())
        .with_connect_timeout(cluster.connect_timeout)
        .with_request_timeout(cluster.request_timeout)
        .with_retry_timeout(cluster.request_timeout)
        .with_metadata_max_age(cluster.metadata_refresh_interval)
}

/// Connects to `cluster`, giving up after about the connect timeout plus one request
/// timeout. TLS and authentication failures are not retried: they come back at once,
/// naming the broker, the mechanism and the user. The error names the cluster; the
/// caller's layer names the flow.
pub async fn connect(cluster: &Cluster) -> Result<Client, MirrorError> {
    let addresses = cluster.bootstrap_servers.join(",");
    let refused = |source: strait_client::Error| {
        MirrorError::kafka(
            format!(
                "connecting to {addresses} ({})",
                cluster.security.protocol_name()
            ),
            source,
        )
        .cluster(&cluster.name)
    };
    let security = cluster.security.to_client().map_err(refused)?;
    let cfg = client_config(cluster).with_security(security);
    let deadline = cluster.connect_timeout + cluster.request_timeout + Duration::from_secs(1);
    let started = std::time::Instant::now();
    let unreachable =
        |source| MirrorError::unreachable(addresses.clone(), started.elapsed(), source);
    match tokio::time::timeout(deadline, Client::connect(cfg)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) if e.is_auth_failure() => return Err(refused(e)),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(unreachable(
            strait_client::Error::new(strait_client::ErrorKind::Timeout)
                .message("no broker answered"),
        )),
    }
    .map_err(|e| e.cluster(&cluster.name))
}
