//! `A.*` connection keys (and the security keys, through [`super::security`]) → one
//! `[clusters.A]` table.

use super::{Props, TYPED_REFERENCE, env_name, literal, placeholders};
use crate::config::cluster::{ClusterSpec, split_list};
use crate::config::security::{SecurityProtocol, SecuritySpec};

impl Props {
    /// `[clusters.<alias>]` from `A.bootstrap.servers`, `A.client.id`, the timeouts and the
    /// security keys.
    pub(super) fn cluster(&mut self, alias: &str) -> ClusterSpec {
        let key = |k: &str| format!("{alias}.{k}");
        let mut spec = ClusterSpec {
            bootstrap_servers: Vec::new(),
            client_id: crate::config::defaults::CLIENT_ID.to_owned(),
            request_timeout: crate::config::defaults::REQUEST_TIMEOUT,
            connect_timeout: crate::config::defaults::CONNECT_TIMEOUT,
            metadata_refresh_interval: crate::config::defaults::METADATA_REFRESH_INTERVAL,
            security: SecuritySpec::default(),
        };
        match self.take(&key("bootstrap.servers")) {
            Some(v) if !v.is_empty() => {
                spec.bootstrap_servers = split_list(&v).iter().map(|s| literal(s)).collect()
            }
            _ => {
                let var = env_name(alias, "BOOTSTRAP_SERVERS");
                spec.bootstrap_servers =
                    vec![self.env_placeholder(alias, "BOOTSTRAP_SERVERS", "bootstrap servers")];
                self.note(
                    &key("bootstrap.servers"),
                    "",
                    &format!("missing: the TOML reads it from the environment variable {var}"),
                );
            }
        }
        if let Some(v) = self.take(&key("client.id")) {
            spec.client_id = literal(&v);
        }
        for (mm2, slot) in [
            ("request.timeout.ms", &mut spec.request_timeout),
            (
                "socket.connection.setup.timeout.ms",
                &mut spec.connect_timeout,
            ),
            ("metadata.max.age.ms", &mut spec.metadata_refresh_interval),
        ] {
            if let Some(d) = self.millis(&key(mm2)) {
                *slot = d;
            }
        }
        if let Some((k, v)) = self.cluster_value(alias, "security.protocol") {
            let v = if v.contains(placeholders::OPEN) {
                self.unmapped(&k, TYPED_REFERENCE);
                String::new()
            } else {
                v
            };
            match v.to_ascii_uppercase().as_str() {
                "PLAINTEXT" => {}
                "SSL" => spec.security.protocol = SecurityProtocol::Ssl,
                "SASL_PLAINTEXT" => spec.security.protocol = SecurityProtocol::SaslPlaintext,
                "SASL_SSL" => spec.security.protocol = SecurityProtocol::SaslSsl,
                "" => {}
                _ => self.unmapped(&k, "unknown security protocol; PLAINTEXT was used"),
            }
        }
        spec.security.tls = self.tls(alias, spec.security.protocol);
        spec.security.sasl = self.sasl(alias, spec.security.protocol);
        spec
    }
}
