//! The sink driver against a real Tansu broker and a hung one.
//!
//! A single Tansu process is a one-broker cluster, so a cluster where one broker leads
//! some partitions and hangs is built by hand: the client's metadata cache gets a second
//! broker id whose address is a [`FaultProxy`] that accepts connections and stalls them
//! (never answering ApiVersions), leading a second topic. That is why this test lives in
//! the crate (it needs `Client::set_metadata_for_test`) and not in `tests/`.

use std::time::Duration;

use strait_records::{BatchBuilder, Compression};
use strait_testkit::{FaultProxy, TansuBroker};

use crate::client::{Client, ClientConfig};
use crate::metadata::BrokerMeta;
use crate::producer::idempotent::IdempotentProducer;
use crate::producer::state::ProducerConfig;
use crate::rpc::admin::NewTopic;

fn batch(i: usize) -> strait_records::Batch {
    let mut b = BatchBuilder::new(Compression::None);
    b.push(
        1_700_000_000_000,
        Some(b"k"),
        Some(format!("v{i}").as_bytes()),
        &[],
    )
    .expect("record");
    b.build().expect("batch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_broker_delays_only_the_partitions_it_leads() {
    let tansu = TansuBroker::start().expect("start tansu (run scripts/install-brokers)");
    // Long enough that connecting to the hung broker cannot give up during the test.
    let long = Duration::from_secs(120);
    let cfg = ClientConfig::new([tansu.bootstrap()])
        .with_request_timeout(long)
        .with_connect_timeout(long)
        .with_retry_timeout(Duration::from_secs(10));
    let client = Client::connect(cfg).await.expect("connect");
    client
        .create_topics(&[NewTopic::new("healthy", 1)], Duration::from_secs(5))
        .await
        .expect("create");
    let real = client.metadata(Some(&["healthy"])).await.expect("metadata");
    // The producer id comes from the real broker, before the hung one is known.
    let producer = IdempotentProducer::new(client.clone(), ProducerConfig::default())
        .await
        .expect("producer");

    let hung = FaultProxy::start(tansu.addr()).expect("proxy");
    hung.stall();
    let mut meta = (*real).clone();
    let hung_id = meta.brokers.keys().max().copied().unwrap_or(0) + 1;
    meta.brokers.insert(
        hung_id,
        BrokerMeta {
            id: hung_id,
            host: "127.0.0.1".into(),
            port: i32::from(hung.addr().port()),
            rack: None,
        },
    );
    let mut behind = meta.topics["healthy"].clone();
    behind.name = "behind-hung".into();
    for p in behind.partitions.values_mut() {
        p.leader = hung_id;
    }
    meta.topics.insert(behind.name.clone(), behind);
    client.set_metadata_for_test(meta);

    let stuck = producer
        .send("behind-hung", 0, batch(0))
        .await
        .expect("queued");
    let stuck = tokio::spawn(stuck.wait());
    // Production to the healthy broker goes on while the driver connects to the hung one.
    for i in 0..20 {
        let ack = producer.send("healthy", 0, batch(i)).await.expect("queued");
        let ack = tokio::time::timeout(Duration::from_secs(20), ack.wait())
            .await
            .expect("not held up by the hung broker")
            .expect("acknowledged");
        assert_eq!(ack.base_offset, i as i64);
    }
    assert!(
        hung.connections_accepted() >= 1,
        "the driver was connecting to the hung broker meanwhile"
    );
    assert!(
        !stuck.is_finished(),
        "the hung broker's batch is still waiting for its connection"
    );
    producer.abort("test over");
    stuck.abort();
}
