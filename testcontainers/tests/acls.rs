//! Topic ACL sync against Kafka's StandardAuthorizer on both clusters, as
//! docs/configuration.md ("[flows.sync]") promises: ALLOW READ is copied, ALLOW WRITE is
//! dropped (only Strait writes replicas), ALLOW ALL becomes ALLOW READ, DENY is copied as
//! it is; names go through the `prefix` policy: LITERAL `orders` → LITERAL `src.orders`,
//! PREFIXED `billing-` → PREFIXED `src.billing-`, the literal `*` → PREFIXED `src.`. With
//! `delete_topic_acls`, ACLs Strait created whose source ACL was deleted are deleted on the
//! target; an identical ACL that was on the target before (so not Strait's) is kept. The
//! target's authorizer enforces them: alice (SCRAM) reads the replica with the synced READ
//! and is refused once it is deleted. The replicated topics' data is read back with
//! librdkafka at the end.

use std::collections::BTreeSet;
use std::time::Duration;

use strait_client::rpc::authz::AclOperation;
use strait_client::{
    AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource, Client, ClientConfig,
};
use strait_kafka_scenarios::kafka::{compare, wait_caught_up};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, runtime, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::kafka::{KafkaOptions, KafkaSecurity};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestPki};

const ALICE_PASSWORD: &str = "Al1ce-S3cret";

/// Reads `topic` as alice through the target's SASL_PLAINTEXT listener: the records, or
/// the error the authorizer's refusal gives.
fn read_as_alice(listener: &str, topic: &str, n: usize) -> Result<usize, String> {
    let client = rdkafka::ClientConfig::new()
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "SCRAM-SHA-256")
        .set("sasl.username", "alice")
        .set("sasl.password", ALICE_PASSWORD)
        .fail_fast();
    rdkafka::consume(
        listener,
        topic,
        &ConsumeOptions {
            client,
            max_time: Duration::from_secs(15),
            ..ConsumeOptions::count(n)
        },
    )
    .map(|r| r.len())
    .map_err(|e| e.to_string())
}

fn binding(
    principal: &str,
    name: &str,
    pattern: AclPattern,
    operation: AclBindingOp,
    permission: AclPermission,
) -> AclBinding {
    AclBinding {
        resource: AclResource::Topic,
        name: name.into(),
        pattern,
        principal: format!("User:{principal}"),
        host: "*".into(),
        operation,
        permission,
    }
}

const READ: AclBindingOp = AclBindingOp::Op(AclOperation::Read);
const WRITE: AclBindingOp = AclBindingOp::Op(AclOperation::Write);
use AclPattern::{Literal, Prefixed};
use AclPermission::{Allow, Deny};

async fn client(bootstrap: &str) -> Client {
    Client::connect(ClientConfig::new([bootstrap]))
        .await
        .expect("connect")
}

fn create(bootstrap: &str, bindings: &[AclBinding]) {
    let results = runtime()
        .block_on(async { client(bootstrap).await.create_acls(bindings).await })
        .expect("create acls");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

fn delete(bootstrap: &str, bindings: &[AclBinding]) {
    let results = runtime()
        .block_on(async { client(bootstrap).await.delete_acls(bindings).await })
        .expect("delete acls");
    assert!(
        results.iter().all(|r| matches!(r, Ok(1))),
        "each filter deletes its one ACL: {results:?}"
    );
}

/// Every topic ACL the cluster's authorizer holds.
fn topic_acls(bootstrap: &str) -> BTreeSet<AclBinding> {
    runtime()
        .block_on(async {
            client(bootstrap)
                .await
                .describe_acls(AclResource::Topic)
                .await
        })
        .expect("describe acls")
        .into_iter()
        .collect()
}

#[test]
fn topic_acls_are_mapped_created_and_deleted_on_the_target_as_documented() {
    // The target has a SASL listener for alice, whose access the synced ACLs decide.
    let pki = TestPki::generate_temp().expect("pki");
    let (source, target) = std::thread::scope(|s| {
        let a = s.spawn(|| Kafka::start_with(KafkaOptions::default().authorizer()));
        let b = s.spawn(|| {
            Kafka::start_with(
                KafkaOptions::default()
                    .authorizer()
                    .security(KafkaSecurity::new(&pki).user("alice", ALICE_PASSWORD)),
            )
        });
        (a.join().expect("source"), b.join().expect("target"))
    });
    let alice_listener = target
        .cluster()
        .and_then(|c| c.sasl_plaintext_bootstrap())
        .expect("the target's SASL_PLAINTEXT listener");
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    for topic in ["orders", "billing-eu"] {
        rdkafka::create_topic(&src, topic, 2, &[]).expect("topic");
    }

    let alice_read = binding("alice", "orders", Literal, READ, Allow);
    let alice_write = binding("alice", "orders", Literal, WRITE, Allow);
    let bob_all = binding("bob", "orders", Literal, AclBindingOp::All, Allow);
    let mallory_deny = binding("mallory", "orders", Literal, READ, Deny);
    let carol_prefix = binding("carol", "billing-", Prefixed, READ, Allow);
    let dave_any = binding("dave", "*", Literal, READ, Allow);
    let frank_read = binding("frank", "orders", Literal, READ, Allow);
    create(
        &src,
        &[
            alice_read.clone(),
            alice_write.clone(),
            bob_all.clone(),
            mallory_deny.clone(),
            carol_prefix.clone(),
            dave_any.clone(),
            frank_read.clone(),
        ],
    );
    for (seed, topic) in ["orders", "billing-eu"].into_iter().enumerate() {
        let records = DataGen::new(seed as u64 + 1).records(100, &RecordSpec::default());
        let delivered =
            rdkafka::produce(&src, topic, &records, &ProduceOptions::default()).expect("produce");
        assert!(delivered.iter().all(|d| d.error.is_none()));
    }
    // librdkafka's consumer looks up its (random) group: alice may use any group. A group
    // ACL, which topic ACL sync neither reads nor touches.
    create(
        &dst,
        &[AclBinding {
            resource: AclResource::Group,
            ..binding("alice", "*", Literal, READ, Allow)
        }],
    );
    // frank's mapped ACL is on the target before Strait runs: not Strait's, never deleted.
    let frank_on_target = binding("frank", "src.orders", Literal, READ, Allow);
    create(&dst, std::slice::from_ref(&frank_on_target));

    let want: BTreeSet<AclBinding> = [
        binding("alice", "src.orders", Literal, READ, Allow),
        binding("bob", "src.orders", Literal, READ, Allow),
        binding("mallory", "src.orders", Literal, READ, Deny),
        binding("carol", "src.billing-", Prefixed, READ, Allow),
        binding("dave", "src.", Prefixed, READ, Allow),
        frank_on_target.clone(),
    ]
    .into_iter()
    .collect();

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["orders", "billing-eu"]
{SYNC_OFF}topic_acls = true
delete_topic_acls = true
[flows.intervals]
topic_acl_sync = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait::until(
        "the mapped ACLs on the target",
        Duration::from_secs(45),
        || {
            strait.assert_running();
            topic_acls(&dst) == want
        },
        || format!("target holds {:#?}\n{}", topic_acls(&dst), log_tail(&log)),
    );
    for topic in ["orders", "billing-eu"] {
        wait_caught_up(
            (&src, topic),
            (&dst, &format!("src.{topic}")),
            2,
            Duration::from_secs(60),
            || log_tail(&log),
        );
    }
    // The real authorizer applies the copied READ: alice reads the replica.
    assert_eq!(
        read_as_alice(&alice_listener, "src.orders", 100),
        Ok(100),
        "alice reads src.orders with the synced ACL"
    );
    // No WRITE for anyone on the target: alice's source WRITE was dropped.
    assert!(
        !topic_acls(&dst).iter().any(|b| b.operation == WRITE),
        "a WRITE ACL was copied"
    );

    // Deleted on the source: alice's READ, carol's prefix and frank's. Strait deletes the two
    // it created and keeps frank's, which was there before it.
    delete(
        &src,
        &[alice_read.clone(), carol_prefix.clone(), frank_read.clone()],
    );
    let after: BTreeSet<AclBinding> = [
        binding("bob", "src.orders", Literal, READ, Allow),
        binding("mallory", "src.orders", Literal, READ, Deny),
        binding("dave", "src.", Prefixed, READ, Allow),
        frank_on_target,
    ]
    .into_iter()
    .collect();
    wait::until(
        "the deleted ACLs gone from the target",
        Duration::from_secs(45),
        || {
            strait.assert_running();
            topic_acls(&dst) == after
        },
        || format!("target holds {:#?}\n{}", topic_acls(&dst), log_tail(&log)),
    );

    // With her ACL deleted on the source and so on the target, alice is refused.
    let refused = read_as_alice(&alice_listener, "src.orders", 1);
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("TOPIC_AUTHORIZATION_FAILED")),
        "alice still reads src.orders: {refused:?}"
    );
    let _ = process::stop(&mut strait, Duration::from_secs(30));
    for topic in ["orders", "billing-eu"] {
        let report = compare((&src, topic), (&dst, &format!("src.{topic}")), 2, 100);
        assert!(
            report.problems(0).is_empty(),
            "{topic}: {:?}",
            report.problems(0)
        );
    }
}
