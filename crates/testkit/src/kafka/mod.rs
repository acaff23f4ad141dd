//! Apache Kafka for tests: KRaft clusters of real brokers (JVMs from the jars
//! `scripts/install-brokers` brings through Maven), and MirrorMaker 2 beside them.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`KafkaOptions`], [`KafkaSecurity`] and [`KafkaCluster`]: format, start, reach, stop |
//! | `node.rs` | [`KafkaNode`]: one JVM; stop, `kill -9`, pause and restart keeping its log directory |
//! | `props.rs` | the text of `server.properties` and `log4j2.properties` (pure, unit-tested) |
//! | `install.rs` | where java and the classpaths are ([`install::broker`], [`install::mm2`]) |
//! | `mm2.rs` | [`Mm2`]: a dedicated-mode MirrorMaker 2; [`mm2::translate_offsets`] runs MM2's own `RemoteClusterUtils` |
//!
//! Every node is broker and controller in one JVM, on free loopback ports, in a folder of
//! its own under the system temp dir. Nodes are killed when the cluster is dropped (a
//! watchdog kills them if the test process dies without running destructors); when a test
//! panics, the folder is kept and the log tails are printed.
//!
//! ```no_run
//! # fn main() -> strait_testkit::Result<()> {
//! use strait_testkit::kafka::{KafkaCluster, KafkaOptions};
//! let source = KafkaCluster::start(KafkaOptions::default())?;
//! strait_testkit::rdkafka::create_topic(&source.bootstrap(), "t", 3, &[])?;
//! # Ok(()) }
//! ```

pub mod install;
pub mod mm2;
mod node;
pub mod props;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;

pub use mm2::Mm2;
pub use node::KafkaNode;
use props::{NodeLayout, NodePorts, SecurePorts, TlsFiles};

use crate::broker::free_ports;
use crate::error::{Error, Result, io};
use crate::secure::TestPki;

/// How many times a start is tried on fresh ports when another process took one.
const PORT_ATTEMPTS: usize = 3;

/// How to start a [`KafkaCluster`]. `Default`: one node, PLAINTEXT only, no authorizer.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// Nodes (each broker and controller). 1, or 3 for replication factor 3 and leader moves.
    pub nodes: usize,
    /// SASL_SSL, SASL_PLAINTEXT and mutual-TLS listeners beside PLAINTEXT.
    pub security: Option<KafkaSecurity>,
    /// The StandardAuthorizer, with `User:admin` and `User:ANONYMOUS` (PLAINTEXT) as super users.
    pub authorizer: bool,
    /// Extra broker properties (`message.max.bytes`, ...), overriding the defaults.
    pub properties: Vec<(String, String)>,
    /// Each JVM's maximum heap, MiB. Default 384.
    pub heap_mb: u32,
    /// The JVM as Kafka's own scripts run it (G1, the optimising compiler) instead of the
    /// tests' light one (serial GC, the quick compiler only): for benchmarks, where the
    /// broker's cost per request should be a production broker's.
    pub production_jvm: bool,
    /// How long each node may take to start. Default 90 s (a cold JVM on a busy 2-core machine).
    pub startup_timeout: Duration,
}

impl Default for KafkaOptions {
    fn default() -> Self {
        Self {
            nodes: 1,
            security: None,
            authorizer: false,
            properties: Vec::new(),
            heap_mb: 384,
            production_jvm: false,
            startup_timeout: Duration::from_secs(90),
        }
    }
}

impl KafkaOptions {
    /// `n` nodes.
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }

    /// With the secure listeners.
    pub fn security(mut self, security: KafkaSecurity) -> Self {
        self.security = Some(security);
        self
    }

    /// With the StandardAuthorizer.
    pub fn authorizer(mut self) -> Self {
        self.authorizer = true;
        self
    }

    /// The JVM as Kafka's scripts run it, with a 1 GiB heap (see
    /// [`KafkaOptions::production_jvm`]).
    pub fn production_jvm(mut self) -> Self {
        self.production_jvm = true;
        self.heap_mb = self.heap_mb.max(1024);
        self
    }

    /// With one more broker property.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }
}

/// The secure listeners' certificates and users. Its `Debug` shows user names, never
/// passwords.
#[derive(Clone)]
pub struct KafkaSecurity {
    /// The CA that signed the server certificate and the client certificates the SSL
    /// listener accepts.
    pub ca: PathBuf,
    /// The server's private key (PKCS#8 PEM).
    pub server_key: PathBuf,
    /// The server's certificate chain (PEM).
    pub server_chain: PathBuf,
    /// `(name, password)`: SCRAM-SHA-256 and -512 credentials (created at format time) and
    /// PLAIN users.
    pub users: Vec<(String, String)>,
}

impl std::fmt::Debug for KafkaSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSecurity")
            .field("ca", &self.ca)
            .field("server_key", &self.server_key)
            .field("server_chain", &self.server_chain)
            .field(
                "users",
                &self
                    .users
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl KafkaSecurity {
    /// The test PKI's CA and server certificate, no users yet.
    pub fn new(pki: &TestPki) -> Self {
        Self {
            ca: pki.ca_cert.clone(),
            server_key: pki.server_key.clone(),
            server_chain: pki.server_chain.clone(),
            users: Vec::new(),
        }
    }

    /// Adds a user (SCRAM and PLAIN).
    pub fn user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.users.push((name.into(), password.into()));
        self
    }
}

/// A running KRaft cluster of [`KafkaNode`]s.
#[derive(Debug)]
pub struct KafkaCluster {
    nodes: Vec<KafkaNode>,
    cluster_id: String,
    version: String,
    /// Holds every node's folder; `None` once kept after a panic.
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl KafkaCluster {
    /// Formats and starts a cluster, and waits until every node serves.
    pub fn start(options: KafkaOptions) -> Result<Self> {
        if options.nodes == 0 {
            return Err(Error::Protocol(
                "a Kafka cluster needs at least one node".into(),
            ));
        }
        let install = install::broker()?;
        let version = install
            .jar_version("kafka_2.13")
            .unwrap_or_else(|| "unknown".into());
        let dir = tempfile::Builder::new()
            .prefix("strait-kafka-")
            .tempdir()
            .map_err(io("creating the Kafka cluster's folder"))?;
        let path = dir.path().to_owned();
        let tls = match &options.security {
            Some(s) => Some(write_keystore(&path, s)?),
            None => None,
        };
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS {
            let cluster_id = random_cluster_id()?;
            let mut cluster = Self {
                nodes: Vec::new(),
                cluster_id,
                version: version.clone(),
                dir: None,
                path: path.clone(),
            };
            match cluster.start_nodes(&install, &options, tls.as_ref()) {
                Ok(()) => {
                    cluster.dir = Some(dir);
                    return Ok(cluster);
                }
                Err(e) => {
                    let port_taken = cluster.nodes.iter().any(KafkaNode::port_taken);
                    drop(cluster);
                    if !port_taken {
                        let _ = dir.keep();
                        return Err(e);
                    }
                    last = Some(e);
                }
            }
        }
        let _ = dir.keep();
        Err(last.unwrap_or_else(|| Error::Protocol("no start attempt".into())))
    }

    /// Lays out, formats, spawns and waits for every node.
    fn start_nodes(
        &mut self,
        install: &install::JavaInstall,
        options: &KafkaOptions,
        tls: Option<&TlsFiles>,
    ) -> Result<()> {
        // Every port of every node at once, so no two listeners share one.
        let per_node = if options.security.is_some() { 5 } else { 2 };
        let mut free = free_ports(options.nodes * per_node)?.into_iter();
        let mut next = || {
            free.next()
                .ok_or_else(|| Error::Protocol("too few free ports".into()))
        };
        let ports = (0..options.nodes)
            .map(|_| -> Result<NodePorts> {
                Ok(NodePorts {
                    plaintext: next()?,
                    controller: next()?,
                    secure: match options.security {
                        Some(_) => Some(SecurePorts {
                            sasl_ssl: next()?,
                            sasl_plaintext: next()?,
                            ssl: next()?,
                        }),
                        None => None,
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let users = options
            .security
            .as_ref()
            .map(|s| s.users.clone())
            .unwrap_or_default();
        for (i, p) in ports.iter().enumerate() {
            let id = i + 1;
            let node_dir = self.path.join(format!("node-{id}"));
            // A retry starts from an empty folder.
            let _ = std::fs::remove_dir_all(&node_dir);
            std::fs::create_dir_all(node_dir.join("data")).map_err(io("node folder"))?;
            let text = props::server_properties(&NodeLayout {
                node_id: id,
                ports: &ports,
                log_dir: &node_dir.join("data"),
                tls,
                users: &users,
                authorizer: options.authorizer,
                extra: &options.properties,
            });
            std::fs::write(node_dir.join("server.properties"), text)
                .map_err(io("writing server.properties"))?;
            std::fs::write(
                node_dir.join("log4j2.properties"),
                props::log4j2_properties(&node_dir.join("server.log")),
            )
            .map_err(io("writing log4j2.properties"))?;
            self.nodes.push(KafkaNode {
                id,
                ports: *p,
                dir: node_dir,
                install: install.clone(),
                heap_mb: options.heap_mb,
                production_jvm: options.production_jvm,
                startup_timeout: options.startup_timeout,
                child: None,
                watchdog: None,
                log_start: 0,
            });
        }
        // Format every node at once (a JVM each, ~2 s).
        let scram = props::scram_format_args(&users);
        let formats: Vec<Result<()>> = thread::scope(|s| {
            let handles: Vec<_> = self
                .nodes
                .iter()
                .map(|n| s.spawn(|| format_node(n, &self.cluster_id, &scram)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Protocol("a format thread panicked".into())))
                })
                .collect()
        });
        formats.into_iter().collect::<Result<()>>()?;
        for node in &mut self.nodes {
            node.spawn()?;
        }
        let deadline = Instant::now() + options.startup_timeout;
        for node in &mut self.nodes {
            node.wait_ready(deadline)?;
        }
        Ok(())
    }

    /// Every node's PLAINTEXT `127.0.0.1:PORT`, comma-separated (for `bootstrap.servers`).
    pub fn bootstrap(&self) -> String {
        self.listener(|p| Some(p.plaintext))
    }

    /// The SASL_SSL listeners (SCRAM-SHA-256/512, PLAIN), comma-separated.
    pub fn sasl_ssl_bootstrap(&self) -> Option<String> {
        self.secure_listener(|s| s.sasl_ssl)
    }

    /// The SASL_PLAINTEXT listeners (PLAIN, SCRAM), comma-separated.
    pub fn sasl_plaintext_bootstrap(&self) -> Option<String> {
        self.secure_listener(|s| s.sasl_plaintext)
    }

    /// The SSL listeners (a client certificate signed by the CA is required).
    pub fn ssl_bootstrap(&self) -> Option<String> {
        self.secure_listener(|s| s.ssl)
    }

    fn secure_listener(&self, pick: impl Fn(SecurePorts) -> u16) -> Option<String> {
        self.nodes.first()?.ports.secure?;
        Some(self.listener(|p| p.secure.map(&pick)))
    }

    fn listener(&self, pick: impl Fn(&NodePorts) -> Option<u16>) -> String {
        self.nodes
            .iter()
            .filter_map(|n| pick(&n.ports))
            .map(|port| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The nodes, in id order.
    pub fn nodes(&self) -> &[KafkaNode] {
        &self.nodes
    }

    /// Node `i` (0-based index; its id is `i + 1`).
    pub fn node(&self, i: usize) -> &KafkaNode {
        &self.nodes[i]
    }

    /// Node `i`, mutably (to stop, kill, pause or restart it).
    pub fn node_mut(&mut self, i: usize) -> &mut KafkaNode {
        &mut self.nodes[i]
    }

    /// The cluster id it was formatted with.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The broker's version (from the `kafka_2.13` jar's name), e.g. `4.4.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The cluster's folder (one `node-N` folder per node).
    pub fn dir(&self) -> &Path {
        &self.path
    }
}

impl Drop for KafkaCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill9();
        }
        if thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let _ = dir.keep();
            }
            for node in &self.nodes {
                eprintln!(
                    "--- strait-testkit: Kafka node {} (127.0.0.1:{}) log tail, full log at {} ---\n{}\n--- end of log tail ---",
                    node.id,
                    node.ports.plaintext,
                    node.log_path().display(),
                    node.log_tail(30)
                );
            }
        }
    }
}

/// `StorageTool format` for one node, with the SCRAM users.
fn format_node(node: &KafkaNode, cluster_id: &str, scram: &[String]) -> Result<()> {
    let output = node
        .java_command()
        .arg("kafka.tools.StorageTool")
        .arg("format")
        .args(["-t", cluster_id])
        .arg("-c")
        .arg(node.dir.join("server.properties"))
        .args(scram)
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!(
            "running {} (StorageTool)",
            node.install.java.display()
        )))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::ServerStart {
        what: format!("StorageTool format for Kafka node {}", node.id),
        reason: output.status.to_string(),
        stderr: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    })
}

/// The server's key followed by its chain: Kafka's PEM keystore file.
fn write_keystore(dir: &Path, security: &KafkaSecurity) -> Result<TlsFiles> {
    let mut pem =
        std::fs::read_to_string(&security.server_key).map_err(io("reading the server key"))?;
    pem.push('\n');
    pem.push_str(
        &std::fs::read_to_string(&security.server_chain).map_err(io("reading the server chain"))?,
    );
    let keystore = dir.join("keystore.pem");
    std::fs::write(&keystore, pem).map_err(io("writing the keystore"))?;
    Ok(TlsFiles {
        keystore,
        truststore: security.ca.clone(),
    })
}

/// 16 random bytes, base64url without padding: a KRaft cluster id. Drawn again when it
/// starts with `-`, which StorageTool's argument parser would read as an option (1 in 64).
fn random_cluster_id() -> Result<String> {
    loop {
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(io("reading /dev/urandom"))?;
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        if !id.starts_with('-') {
            return Ok(id);
        }
    }
}
