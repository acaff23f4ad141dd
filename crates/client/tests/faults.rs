//! Broker failures: requests in flight when the broker dies fail retriably and nothing
//! hangs; after a restart the same client (and producer) recovers by itself.

mod common;

use std::time::{Duration, Instant};

use common::*;
use strait_client::*;
use strait_records::Compression;

#[tokio::test]
async fn broker_killed_with_requests_in_flight_then_restarted() {
    let mut b = broker();
    let c = client(&b).await;
    create(&c, "f", 1).await;
    let leader = c.leader_for("f", 0).await.unwrap().0;
    let producer = IdempotentProducer::new(c.clone(), ProducerConfig::default())
        .await
        .unwrap();
    producer
        .send("f", 0, batch(3, 1_700_000_000_000, Compression::None))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();

    // A long poll on the fetch connection and a few produce requests in flight.
    let long = FetchOptions {
        max_wait: Duration::from_secs(5),
        ..Default::default()
    };
    let mut inflight = Vec::new();
    for _ in 0..3 {
        let c2 = c.clone();
        inflight.push(tokio::spawn(async move {
            c2.fetch(leader, &[FetchPosition::new("f", 0, 3)], &long)
                .await
                .map(|_| ())
        }));
    }
    for _ in 0..3 {
        let c2 = c.clone();
        inflight.push(tokio::spawn(async move {
            c2.produce_to(leader, &{
                let mut r = ProduceRequest::new(Acks::All);
                r.push("f", 0, raw(1));
                r
            })
            .await
            .map(|_| ())
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let t = Instant::now();
    b.kill();
    for h in inflight {
        let r = tokio::time::timeout(Duration::from_secs(5), h)
            .await
            .expect("a request hung after the broker died")
            .unwrap();
        if let Err(e) = r {
            assert!(e.is_retriable(), "{e}");
        }
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    // While the broker is down: a retriable error within the retry deadline, no hang.
    let short = ClientConfig::new([b.bootstrap()])
        .with_retry_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_millis(300));
    let e = Client::connect(short).await.unwrap_err();
    assert!(e.is_retriable(), "{e}");
    let e = c
        .fetch(leader, &[FetchPosition::new("f", 0, 0)], &long)
        .await
        .unwrap_err();
    assert!(e.is_retriable(), "{e}");

    // Restart (memory storage: empty) and recover with the same client and producer.
    b.restart().unwrap();
    create(&c, "f", 1).await;
    let ack = tokio::time::timeout(Duration::from_secs(20), async {
        producer
            .send("f", 0, batch(4, 1_700_000_000_000, Compression::None))
            .await?
            .wait()
            .await
    })
    .await
    .expect("producer recovery hung")
    .unwrap();
    println!(
        "producer after restart: {:?}, ack {ack:?}",
        producer.identity()
    );
    assert_eq!(ack.base_offset, 0);
    let opts = FetchOptions {
        max_wait: Duration::from_millis(50),
        ..Default::default()
    };
    let r = c
        .fetch(leader, &[FetchPosition::new("f", 0, 0)], &opts)
        .await
        .unwrap();
    assert_eq!(r.partitions[0].high_watermark, 4);
}

#[tokio::test]
async fn losing_the_bootstrap_address_does_not_matter_once_brokers_are_known() {
    let b = broker();
    let proxy = strait_testkit::FaultProxy::start(b.addr()).unwrap();
    let cfg = ClientConfig::new([proxy.bootstrap()])
        .with_request_timeout(Duration::from_millis(500))
        .with_retry_timeout(Duration::from_secs(2));
    let c = Client::connect(cfg).await.unwrap();
    proxy.cut();
    // Metadata advertised the broker itself; calls are routed there, not to the proxy.
    create(&c, "s", 1).await;
    c.produce("s", 0, raw(2), Acks::All).await.unwrap();
    assert!(c.refresh_metadata().await.is_ok());
}

#[tokio::test]
async fn stalled_broker_times_out_retriably_and_the_client_reconnects() {
    let (b, proxy) =
        strait_testkit::TansuBroker::start_behind_proxy(strait_testkit::BrokerOptions::default())
            .unwrap();
    let cfg = ClientConfig::new([proxy.bootstrap()])
        .with_request_timeout(Duration::from_millis(400))
        .with_retry_timeout(Duration::from_millis(600));
    let c = Client::connect(cfg).await.unwrap();
    create(&c, "st", 1).await;
    let leader = c.leader_for("st", 0).await.unwrap().0;
    let mut req = ProduceRequest::new(Acks::All);
    // The client waits request_timeout + the broker-side produce timeout.
    req.timeout = Duration::from_millis(200);
    req.push("st", 0, raw(1));
    c.produce_to(leader, &req).await.unwrap();

    proxy.stall();
    let t = Instant::now();
    let e = c.produce_to(leader, &req).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Timeout, "{e}");
    assert!(e.is_retriable());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

    // The timed-out connection was closed; after the stall the next call uses a new one.
    proxy.unstall();
    let opts = FetchOptions {
        max_wait: Duration::from_millis(50),
        ..Default::default()
    };
    let r = c
        .fetch(leader, &[FetchPosition::new("st", 0, 0)], &opts)
        .await
        .unwrap();
    // The stalled request may or may not have been written before the stall.
    assert!(r.partitions[0].high_watermark >= 1);
    c.produce_to(leader, &req).await.unwrap();
    drop(b);
}
