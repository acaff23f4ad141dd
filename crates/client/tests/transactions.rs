//! The transactional producer against Tansu, checked with librdkafka (read_committed and
//! read_uncommitted) and with the raw log (markers, producer ids, sequences).
//!
//! What Tansu 0.6 does differently from Kafka (docs/compatibility.md): it stores aborted
//! batches and their ABORT marker but sends no aborted-transaction list, so librdkafka's
//! read_committed shows aborted records there. The tests therefore check the markers in
//! the log, and check what librdkafka shows against what the broker's own Fetch reports.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::txn::*;
use common::*;
use strait_client::producer::transaction::Phase;
use strait_client::*;
use strait_records::{Compression, ControlRecordType, Limits};
use strait_testkit::TestRecord;
use strait_testkit::rdkafka::{self, Isolation, ProduceOptions};

#[tokio::test]
async fn forwarded_batches_and_state_records_commit_together_exactly_once() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "src", 1).await;
    create(&c, "data", 2).await;
    create(&c, "state", 1).await;
    // A source written by librdkafka's idempotent producer: its batches carry its own
    // producer id, which the forwarded copies must not.
    let src: Vec<TestRecord> = (0..30)
        .map(|i| TestRecord::new(format!("s{i}"), format!("source-{i}")).with_partition(0))
        .collect();
    let bootstrap = b.bootstrap();
    let opts = ProduceOptions {
        idempotence: true,
        batch_num_messages: Some(10),
        ..ProduceOptions::default()
    };
    tokio::task::spawn_blocking(move || rdkafka::produce(&bootstrap, "src", &src, &opts))
        .await
        .unwrap()
        .unwrap();
    let leader = c.leader_for("src", 0).await.unwrap().0;
    let fetched = c
        .fetch(
            leader,
            &[FetchPosition::new("src", 0, 0)],
            &FetchOptions {
                max_wait: Duration::from_millis(50),
                ..FetchOptions::default()
            },
        )
        .await
        .unwrap();
    let source = strait_records::split(fetched.partitions[0].records.clone(), &Limits::default())
        .unwrap()
        .batches;
    let source_pid = source[0].header().producer_id;
    assert!(source_pid >= 0);

    let p = TransactionalProducer::new(c.clone(), txn_config("eos-commit"))
        .await
        .unwrap();
    let id = p.identity().unwrap();
    assert_ne!(id.id, source_pid);
    p.begin().unwrap();
    let mut acks = Vec::new();
    for bt in &source {
        acks.push(p.send("data", 0, bt.clone()).await.unwrap());
    }
    acks.push(
        p.send("data", 1, batch(5, 1_700_000_000_000, Compression::Lz4))
            .await
            .unwrap(),
    );
    acks.extend(
        p.send_records("state", 0, &records("pos", 2))
            .await
            .unwrap(),
    );
    acked(acks).await;
    // Written, not committed: read_committed sees nothing of it yet.
    assert_eq!(consume(&b, "data", Isolation::ReadCommitted).await.len(), 0);
    assert_eq!(
        consume(&b, "state", Isolation::ReadCommitted).await.len(),
        0
    );
    assert_eq!(
        consume(&b, "data", Isolation::ReadUncommitted).await.len(),
        35
    );
    p.commit().await.unwrap();
    assert_eq!(p.phase(), Phase::Ready);

    let data = consume(&b, "data", Isolation::ReadCommitted).await;
    let mut want: Vec<String> = (0..30).map(|i| format!("0:s{i}=source-{i}")).collect();
    want.extend((0..5).map(|i| format!("1:k{i}=v{i}")));
    assert_eq!(data, want, "every record once, in order");
    assert_eq!(
        consume(&b, "state", Isolation::ReadCommitted).await,
        expected(0, "pos", 2)
    );
    // The log: our producer id and epoch, the transactional bit, sequences from 0, and a
    // COMMIT marker after the data in every partition of the transaction.
    let d0 = log(&c, "data", 0).await.batches;
    assert_eq!(d0.len(), source.len() + 1);
    let mut seq = 0;
    for (l, s) in d0.iter().zip(&source) {
        assert!(l.transactional && l.control.is_none(), "{l:?}");
        assert_eq!(l.producer, (id.id, id.epoch));
        assert_eq!(l.base_sequence, seq);
        assert_eq!(l.records, s.header().last_offset_delta + 1);
        seq += l.records;
    }
    for (topic, part) in [("data", 0), ("data", 1), ("state", 0)] {
        let last = log(&c, topic, part).await.batches.pop().unwrap();
        assert_eq!(
            last.control,
            Some(ControlRecordType::Commit),
            "{topic}-{part}"
        );
        assert_eq!(last.producer, (id.id, id.epoch));
    }
    let (stats, _) = p.stats();
    assert_eq!((stats.committed, stats.aborted), (1, 0));
}

#[tokio::test]
async fn an_aborted_transaction_leaves_an_abort_marker_and_the_next_one_commits() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "t", 1).await;
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-abort"))
        .await
        .unwrap();
    let id = p.identity().unwrap();
    p.begin().unwrap();
    acked(p.send_records("t", 0, &records("gone", 4)).await.unwrap()).await;
    acked(
        p.send_records("t", 0, &records("gone-too", 2))
            .await
            .unwrap(),
    )
    .await;
    p.abort().await.unwrap();
    assert_eq!(p.phase(), Phase::Ready);
    p.begin().unwrap();
    acked(p.send_records("t", 0, &records("kept", 3)).await.unwrap()).await;
    p.commit().await.unwrap();
    assert_eq!(p.identity(), Some(id), "a plain abort needs no new epoch");

    let l = log(&c, "t", 0).await;
    let shape: Vec<(i64, Option<ControlRecordType>, i32)> = l
        .batches
        .iter()
        .map(|x| (x.base_offset, x.control, x.base_sequence))
        .collect();
    assert_eq!(
        shape,
        vec![
            (0, None, 0),
            (4, None, 4),
            (6, Some(ControlRecordType::Abort), -1),
            (7, None, 6), // the sequence goes on across transactions
            (10, Some(ControlRecordType::Commit), -1),
        ]
    );
    assert!(l.batches.iter().all(|x| x.producer == (id.id, id.epoch)));
    let visible = consume(&b, "t", Isolation::ReadCommitted).await;
    let kept = expected(0, "kept", 3);
    let mut aborted = expected(0, "gone", 4);
    aborted.extend(expected(0, "gone-too", 2));
    if l.aborted_listed.contains(&id.id) {
        // Kafka: the aborted transaction is listed, read_committed skips it.
        assert_eq!(visible, kept);
    } else {
        // Tansu: no aborted list, so librdkafka shows the aborted records too.
        assert_eq!(visible, [aborted.clone(), kept.clone()].concat());
    }
    let all = consume(&b, "t", Isolation::ReadUncommitted).await;
    assert_eq!(all, [aborted, kept].concat());
    let (stats, _) = p.stats();
    assert_eq!((stats.committed, stats.aborted), (1, 1));
}

#[tokio::test]
async fn a_second_producer_with_the_same_id_fences_the_first() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "f", 2).await;
    let first = TransactionalProducer::new(c.clone(), txn_config("eos-fence"))
        .await
        .unwrap();
    let old = first.identity().unwrap();
    first.begin().unwrap();
    acked(
        first
            .send_records("f", 0, &records("zombie", 3))
            .await
            .unwrap(),
    )
    .await;

    // The replacement: same transactional id, a newer epoch; the coordinator aborts the
    // open transaction of the first.
    let second = TransactionalProducer::new(c.clone(), txn_config("eos-fence"))
        .await
        .unwrap();
    let new = second.identity().unwrap();
    assert_eq!(new.id, old.id);
    assert!(new.epoch > old.epoch);
    let l = log(&c, "f", 0).await;
    let last = l.batches.last().unwrap();
    assert_eq!(last.control, Some(ControlRecordType::Abort));
    assert_eq!(last.producer, (old.id, old.epoch));

    // The first learns it was fenced from its next batch, and stays fenced.
    let ack = first
        .send_records("f", 0, &records("late", 1))
        .await
        .unwrap();
    let e = ack.into_iter().next().unwrap().wait().await.unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert_eq!(first.phase(), Phase::Fenced);
    let e = first.commit().await.unwrap_err();
    assert!(e.is_fenced() && e.is_transaction_fatal(), "{e}");
    assert!(matches!(e.kind(), ErrorKind::Fenced(_)), "{e:?}");
    assert!(first.begin().unwrap_err().is_fenced());
    assert!(first.abort().await.unwrap_err().is_fenced());

    // The second works, and is fenced in turn by a third, this time at AddPartitionsToTxn.
    second.begin().unwrap();
    acked(
        second
            .send_records("f", 0, &records("owner", 2))
            .await
            .unwrap(),
    )
    .await;
    second.commit().await.unwrap();
    second.begin().unwrap();
    let third = TransactionalProducer::new(c.clone(), txn_config("eos-fence"))
        .await
        .unwrap();
    let e = second
        .send_records("f", 1, &records("x", 1))
        .await
        .unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert!(third.identity().unwrap().epoch > new.epoch);

    let visible = consume(&b, "f", Isolation::ReadCommitted).await;
    let owner = expected(0, "owner", 2);
    if l.aborted_listed.contains(&old.id) {
        assert_eq!(visible, owner);
    } else {
        // Tansu lists no aborted transactions: the fenced records stay visible to
        // librdkafka, though the log holds the coordinator's ABORT marker after them.
        assert_eq!(visible, [expected(0, "zombie", 3), owner].concat());
    }
    let late = visible.iter().filter(|v| v.contains("late")).count();
    assert_eq!(late, 0, "nothing of the fenced producer after the fence");
}

#[tokio::test]
async fn partitions_wanted_together_share_one_add_partitions_request() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "many", 8).await;
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-adds"))
        .await
        .unwrap();
    p.begin().unwrap();
    // Spawned on the test's single-threaded runtime: each runs up to its first wait, in
    // order, before any answer comes in.
    let sends: Vec<_> = (0..8)
        .map(|part| {
            let p = p.clone();
            tokio::spawn(async move { p.send_records("many", part, &records("r", 2)).await })
        })
        .collect();
    let mut acks = Vec::new();
    for s in sends {
        acks.extend(s.await.unwrap().unwrap());
    }
    acked(acks).await;
    // The first partition's request went alone; the 7 others waited for it and went
    // together.
    assert_eq!(p.stats().0.partition_adds, 2);
    p.commit().await.unwrap();
    let mut per: BTreeMap<i32, usize> = BTreeMap::new();
    for v in consume(&b, "many", Isolation::ReadCommitted).await {
        *per.entry(v[..1].parse().unwrap()).or_default() += 1;
    }
    assert_eq!(per, (0..8).map(|p| (p, 2)).collect());
    // Every partition got its COMMIT marker.
    for part in 0..8 {
        let last = log(&c, "many", part).await.batches.pop().unwrap();
        assert_eq!(last.control, Some(ControlRecordType::Commit));
    }
}

#[tokio::test]
async fn a_failed_batch_makes_the_transaction_abortable_and_tansu_refuses_the_epoch_bump() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "ok", 1).await;
    let mut cfg = txn_config("eos-fail");
    cfg.producer.delivery_timeout = Duration::from_secs(2);
    let p = TransactionalProducer::new(c.clone(), cfg.clone())
        .await
        .unwrap();
    p.begin().unwrap();
    acked(p.send_records("ok", 0, &records("a", 2)).await.unwrap()).await;
    // A topic that does not exist: Tansu adds it to the transaction, but the batch finds
    // no leader until its delivery deadline and fails for good.
    let acks = p
        .send_records("missing", 0, &records("b", 1))
        .await
        .unwrap();
    let e = acks.into_iter().next().unwrap().wait().await.unwrap_err();
    assert!(!e.is_fenced(), "{e}");
    let e = p.commit().await.unwrap_err();
    assert!(e.is_transaction_abortable(), "{e}");
    assert_eq!(p.phase(), Phase::Abortable);
    // The abort goes through; the broken sequence then needs a KIP-360 epoch bump, which
    // Tansu answers with UNKNOWN_SERVER_ERROR: fatal, never a fresh InitProducerId.
    let e = p.abort().await.unwrap_err();
    assert!(e.is_transaction_fatal() && !e.is_fenced(), "{e}");
    assert!(e.to_string().contains("KIP-360"), "{e}");
    assert_eq!(p.phase(), Phase::Fatal);
    let l = log(&c, "ok", 0).await;
    assert_eq!(
        l.batches.last().unwrap().control,
        Some(ControlRecordType::Abort)
    );
    // What a caller does then: a new producer for the same id (a new epoch) goes on.
    let again = TransactionalProducer::new(c.clone(), cfg).await.unwrap();
    again.begin().unwrap();
    acked(again.send_records("ok", 0, &records("c", 2)).await.unwrap()).await;
    again.commit().await.unwrap();
    let all = consume(&b, "ok", Isolation::ReadUncommitted).await;
    assert_eq!(all, [expected(0, "a", 2), expected(0, "c", 2)].concat());
}

#[tokio::test]
async fn a_commit_whose_answer_is_lost_is_sent_again_and_lands_once() {
    let (b, proxy) =
        strait_testkit::TansuBroker::start_behind_proxy(strait_testkit::BrokerOptions::default())
            .unwrap();
    let c = Client::connect(
        ClientConfig::new([proxy.bootstrap()])
            .with_request_timeout(Duration::from_secs(10))
            .with_retry_timeout(Duration::from_secs(20)),
    )
    .await
    .unwrap();
    create(&c, "lost", 1).await;
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-lost"))
        .await
        .unwrap();
    let id = p.identity().unwrap();
    p.begin().unwrap();
    acked(
        p.send_records("lost", 0, &records("once", 3))
            .await
            .unwrap(),
    )
    .await;
    // Answers are held back, then every connection is cut: the EndTxn(commit) most likely
    // took effect, but its answer never arrives, so the outcome is unknown and the
    // producer sends it again on a new connection.
    proxy.set_delay(
        strait_testkit::Direction::Downstream,
        Duration::from_secs(3),
    );
    let commit = {
        let p = p.clone();
        tokio::spawn(async move { p.commit().await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.cut();
    proxy.set_delay(strait_testkit::Direction::Downstream, Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.uncut();
    commit.await.unwrap().unwrap();
    assert_eq!(p.phase(), Phase::Ready);
    let l = log(&c, "lost", 0).await;
    let markers: Vec<_> = l.batches.iter().filter_map(|x| x.control).collect();
    assert_eq!(markers, vec![ControlRecordType::Commit], "one commit");
    assert!(l.batches.iter().all(|x| x.producer == (id.id, id.epoch)));
    assert_eq!(
        consume(&b, "lost", Isolation::ReadCommitted).await,
        expected(0, "once", 3)
    );
    // The next transaction goes on under the same epoch.
    p.begin().unwrap();
    acked(
        p.send_records("lost", 0, &records("next", 1))
            .await
            .unwrap(),
    )
    .await;
    p.commit().await.unwrap();
    assert_eq!(p.identity(), Some(id));
}

#[tokio::test]
async fn batches_whose_answers_are_lost_are_retried_with_their_sequence_and_commit_once() {
    let (b, proxy) =
        strait_testkit::TansuBroker::start_behind_proxy(strait_testkit::BrokerOptions::default())
            .unwrap();
    let c = Client::connect(
        ClientConfig::new([proxy.bootstrap()])
            .with_request_timeout(Duration::from_secs(10))
            .with_retry_timeout(Duration::from_secs(20)),
    )
    .await
    .unwrap();
    create(&c, "retried", 2).await;
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-retried"))
        .await
        .unwrap();
    p.begin().unwrap();
    // Both partitions are in the transaction before the fault.
    acked(
        p.send_records("retried", 0, &records("a", 1))
            .await
            .unwrap(),
    )
    .await;
    acked(
        p.send_records("retried", 1, &records("b", 1))
            .await
            .unwrap(),
    )
    .await;
    // Answers held back, then every connection cut: the batches were most likely written,
    // and are sent again with the same sequences on new connections.
    proxy.set_delay(
        strait_testkit::Direction::Downstream,
        Duration::from_secs(3),
    );
    let mut acks = Vec::new();
    for part in 0..2 {
        for round in 0..3 {
            let tag = format!("r{part}{round}-");
            acks.extend(
                p.send_records("retried", part, &records(&tag, 4))
                    .await
                    .unwrap(),
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.cut();
    proxy.set_delay(strait_testkit::Direction::Downstream, Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.uncut();
    acked(acks).await;
    p.commit().await.unwrap();
    let mut want = expected(0, "a", 1);
    for round in 0..3 {
        want.extend(expected(0, &format!("r0{round}-"), 4));
    }
    want.extend(expected(1, "b", 1));
    for round in 0..3 {
        want.extend(expected(1, &format!("r1{round}-"), 4));
    }
    assert_eq!(
        consume(&b, "retried", Isolation::ReadCommitted).await,
        want,
        "every record once, in order"
    );
    for part in 0..2 {
        let l = log(&c, "retried", part).await;
        let data: Vec<i32> = l
            .batches
            .iter()
            .filter(|x| x.control.is_none())
            .map(|x| x.base_sequence)
            .collect();
        assert_eq!(data, vec![0, 1, 5, 9], "no batch written twice");
    }
}

#[tokio::test]
async fn group_offsets_commit_with_the_transaction_and_not_with_an_abort() {
    let b = broker();
    let c = client(&b).await;
    create(&c, "g-data", 1).await;
    let p = TransactionalProducer::new(c.clone(), txn_config("eos-offsets"))
        .await
        .unwrap();
    let member = GroupMember::standalone();
    p.begin().unwrap();
    acked(p.send_records("g-data", 0, &records("o", 3)).await.unwrap()).await;
    p.send_offsets("eos-group", &member, &[CommitOffset::new("g-data", 0, 3)])
        .await
        .unwrap();
    p.commit().await.unwrap();
    let committed = |c: Client| async move {
        c.offset_fetch("eos-group", Some(&[("g-data", &[0])]))
            .await
            .unwrap()[0]
            .offset
    };
    assert_eq!(committed(c.clone()).await, 3);

    // Offsets of an aborted transaction never become the group's.
    p.begin().unwrap();
    p.send_offsets("eos-group", &member, &[CommitOffset::new("g-data", 0, 99)])
        .await
        .unwrap();
    p.abort().await.unwrap();
    assert_eq!(committed(c.clone()).await, 3);
    p.begin().unwrap();
    acked(p.send_records("g-data", 0, &records("q", 1)).await.unwrap()).await;
    p.send_offsets("eos-group", &member, &[CommitOffset::new("g-data", 0, 4)])
        .await
        .unwrap();
    p.commit().await.unwrap();
    assert_eq!(committed(c).await, 4);
    assert_eq!(p.stats().0.committed, 2);
}
