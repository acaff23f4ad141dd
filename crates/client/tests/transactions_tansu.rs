//! What Tansu 0.6 implements of the transactional APIs where it differs from Kafka
//! (docs/compatibility.md), through the transactional producer and raw requests.

mod common;

use std::time::Duration;

use common::txn::*;
use common::*;
use strait_client::producer::transaction::Phase;
use strait_client::*;
use strait_records::ControlRecordType;
use strait_testkit::rdkafka::Isolation;

#[tokio::test]
async fn a_fenced_producer_that_only_commits_is_not_told_so_by_tansu() {
    let b = broker();
    let c = Client::connect(
        ClientConfig::new([b.bootstrap()])
            .with_request_timeout(Duration::from_secs(5))
            .with_retry_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    create(&c, "quiet", 1).await;
    let first = TransactionalProducer::new(c.clone(), txn_config("eos-quiet"))
        .await
        .unwrap();
    first.begin().unwrap();
    acked(
        first
            .send_records("quiet", 0, &records("z", 1))
            .await
            .unwrap(),
    )
    .await;
    let _second = TransactionalProducer::new(c.clone(), txn_config("eos-quiet"))
        .await
        .unwrap();
    // Kafka answers EndTxn from a fenced epoch with PRODUCER_FENCED. Tansu drops the
    // connection instead, so the commit fails retriably with its outcome unknown (the
    // producer stays Committing); its next batch would learn of the fence.
    let e = first.commit().await.unwrap_err();
    eprintln!("commit from a fenced epoch: {e}");
    if e.is_fenced() {
        assert_eq!(first.phase(), Phase::Fenced);
    } else {
        assert!(e.is_network(), "{e}");
        assert_eq!(first.phase(), Phase::Committing);
    }
    // Nothing of it was committed: the coordinator aborted it when the second arrived.
    let l = log(&c, "quiet", 0).await;
    let markers: Vec<_> = l.batches.iter().filter_map(|x| x.control).collect();
    assert_eq!(markers, vec![ControlRecordType::Abort]);
}

/// What Tansu does with raw transactional requests the producer itself never sends
/// (docs/compatibility.md): a batch for a partition not added to the transaction, and a
/// transaction left open past its timeout.
#[tokio::test]
async fn tansu_accepts_unadded_partitions_and_enforces_no_transaction_timeout() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "added", 1).await;
    create(&c, "unadded", 1).await;
    let txn = "raw-probe";
    let id = c
        .init_producer_id(Some(txn), Duration::from_millis(1500), None)
        .await
        .unwrap();
    c.add_partitions_to_txn(txn, id, &[("added", &[0])])
        .await
        .unwrap();
    let r = produce_raw(&c, txn, "added", stamped(2, id, 0)).await;
    assert!(r.error().is_none(), "{r:?}");
    // Kafka (KIP-890 verification) refuses a batch for a partition not in the
    // transaction; Tansu writes it.
    let r = produce_raw(&c, txn, "unadded", stamped(1, id, 0)).await;
    assert!(r.error().is_none(), "{r:?}");
    // Past the 1.5 s timeout Kafka would have aborted the transaction (and fenced the
    // epoch); Tansu still commits it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    c.end_txn(txn, id, true).await.unwrap();
    assert_eq!(
        consume(&b, "added", Isolation::ReadCommitted).await.len(),
        2
    );
    assert_eq!(
        consume(&b, "unadded", Isolation::ReadCommitted).await.len(),
        1
    );
    let markers = |l: Log| {
        l.batches
            .iter()
            .filter_map(|x| x.control)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        markers(log(&c, "added", 0).await),
        vec![ControlRecordType::Commit]
    );
    assert_eq!(
        markers(log(&c, "unadded", 0).await),
        vec![ControlRecordType::Commit]
    );
    // A KIP-360 bump of a transactional id: UNKNOWN_SERVER_ERROR.
    let e = c
        .init_producer_id(Some(txn), Duration::from_secs(30), Some(id))
        .await
        .unwrap_err();
    assert_eq!(e.kafka_code(), Some(-1), "{e}");
}

/// Tansu applies the offsets of a transaction that wrote no data only in a producer's first
/// transaction (docs/compatibility.md); Kafka applies them at every commit.
#[tokio::test]
async fn tansu_applies_offsets_only_transactions_once_per_producer() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "od", 1).await;
    let member = GroupMember::standalone();
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-offsets-only"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    for offset in [5, 6] {
        p.begin().unwrap();
        p.send_offsets("og", &member, &[CommitOffset::new("od", 0, offset)])
            .await
            .unwrap();
        p.commit().await.unwrap();
        let got = c.offset_fetch("og", Some(&[("od", &[0])])).await.unwrap();
        seen.push(got[0].offset);
    }
    assert_eq!(seen, vec![5, 5], "Kafka: [5, 6]");
    assert_eq!(
        p.stats().0.committed,
        2,
        "both ended with an EndTxn(commit)"
    );
}
