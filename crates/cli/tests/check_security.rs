//! `strait check`'s security and authorization lines, against real Tansu brokers.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strait_client::rpc::authz::AuthorizedOps;
use strait_client::{Client, ClientConfig};
use strait_testkit::{TansuBroker, TansuCluster, rdkafka};

mod common;

use common::command::{strait, text, write};

/// A self-signed CA (never used to verify anything here: the peer speaks no TLS).
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBlTCCATugAwIBAgIUVNhJt/9bDmWpLsusSLE1nFzB3L8wCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUU3RyYWl0IGNoZWNrIHRlc3QgQ0EwIBcNMjYxMjAxMTMwNTMx
WhgPMjEyNjExMDcxMzA1MzFaMB8xHTAbBgNVBAMMFFN0cmFpdCBjaGVjayB0ZXN0
IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEKJbsSZC8XCrR13EGSfpHjJco
hKuUDLB52RRcyBdqwFjmBfQL/grtFLxwMd1lMng6ht955aKXFY7DopI/RR6c3qNT
MFEwHQYDVR0OBBYEFEetUXX2nS9S3tKpsbQ5S7dWKNLfMB8GA1UdIwQYMBaAFEet
UXX2nS9S3tKpsbQ5S7dWKNLfMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SAAwRQIgf/6WvbKQJQdcwqEEPndvcz3k0MfjBF+5jvU5KgVX13oCIQDPuoIXoMr6
IG34E3chUKQgNexRVaGyv+E2nQSqRlACnQ==
-----END CERTIFICATE-----
";

/// Two clusters `a` → `b`, with group sync; `extra` is appended to cluster `a`'s table.
fn config(dir: &Path, source: &str, target: &str, extra: &str) -> PathBuf {
    write(
        dir,
        "check.toml",
        &format!(
            "[clusters.a]\nbootstrap_servers = \"{source}\"\nconnect_timeout = \"1s\"\n\
             request_timeout = \"2s\"\n{extra}\n[clusters.b]\nbootstrap_servers = \"{target}\"\n\
             connect_timeout = \"1s\"\nrequest_timeout = \"2s\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n[flows.sync]\ngroup_offsets = true\n\
             [metrics]\nenabled = false\n"
        ),
    )
}

/// What Tansu answers to the KIP-430 requests, asked through the client directly. Tansu 0.6
/// (no authorizer) answers Metadata v12's `topic_authorized_operations` and DescribeCluster's
/// `cluster_authorized_operations` with INT32 MIN (not reported), and DescribeGroups v5's
/// `authorized_operations` with -1 (every bit, UNKNOWN and ANY included), which the client
/// also reads as "not reported".
#[test]
fn tansu_does_not_report_authorized_operations() {
    let broker = TansuBroker::start().expect("broker");
    rdkafka::create_topic(&broker.bootstrap(), "orders", 1, &[]).expect("topic");
    rdkafka::commit_group_offsets(&broker.bootstrap(), "g", "orders", &[(0, 0)]).expect("commit");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = Client::connect(
            ClientConfig::new([broker.bootstrap()]).with_retry_timeout(Duration::from_secs(5)),
        )
        .await
        .expect("connect");
        let topics = client
            .topic_authorized_operations(&["orders"])
            .await
            .expect("metadata");
        let cluster = client
            .cluster_authorized_operations()
            .await
            .expect("cluster");
        let groups = client
            .group_authorized_operations(&["g"])
            .await
            .expect("groups");
        assert_eq!(
            topics.get("orders"),
            Some(&None::<AuthorizedOps>),
            "{topics:?}"
        );
        assert_eq!(
            cluster,
            (None, true),
            "DescribeCluster answered, ops not reported"
        );
        assert_eq!(groups.get("g"), Some(&None::<AuthorizedOps>), "{groups:?}");
    });
}

#[test]
fn check_shows_security_and_unreported_authorization_against_tansu() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "orders", 1, &[]).expect("topic");
    rdkafka::commit_group_offsets(&src, "g", "orders", &[(0, 0)]).expect("commit");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &src, &dst, "");
    let out = strait(&["check", "-c", cfg.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout.matches("✓ security: PLAINTEXT").count(),
        2,
        "{stdout}"
    );
    assert!(!stdout.contains("TLS"), "no TLS configured: {stdout}");
    assert!(!stdout.contains("SASL"), "no SASL configured: {stdout}");
    assert!(
        stdout.contains(
            "! authorization (Describe, Read, DescribeConfigs) on 1 source topic(s): not reported by the broker"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("! authorization (Create, IdempotentWrite) on the cluster: not reported"),
        "{stdout}"
    );
    assert!(
        stdout.contains("! authorization (Describe) on 1 source group(s): not reported"),
        "{stdout}"
    );
    assert!(!stdout.contains('✗'), "{stdout}");
}

#[test]
fn tls_to_a_plaintext_port_fails_fast_and_skips_the_cluster() {
    let broker = TansuBroker::start().expect("broker");
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", CA_PEM);
    let tls = format!(
        "[clusters.a.security]\nprotocol = \"ssl\"\n[clusters.a.security.tls]\nca_file = \"{}\"\n",
        ca.display()
    );
    let cfg = config(dir.path(), &broker.bootstrap(), &broker.bootstrap(), &tls);
    let started = Instant::now();
    let out = strait(&["check", "-c", cfg.to_str().unwrap()]);
    let elapsed = started.elapsed();
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(
        elapsed < Duration::from_secs(8),
        "took {elapsed:?}: {stdout}"
    );
    assert!(stdout.contains("✓ security: SSL"), "{stdout}");
    assert!(
        stdout.contains("✗ TLS: ") && stdout.contains("is this a TLS listener"),
        "{stdout}"
    );
    let a = stdout
        .split("cluster b")
        .next()
        .expect("cluster a's section");
    assert!(
        !a.contains("reachable") && !a.contains("API versions"),
        "the rest of cluster a is skipped: {stdout}"
    );
    assert!(stdout.contains("1 check(s) failed"), "{stdout}");
}
