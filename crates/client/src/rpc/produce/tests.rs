use super::*;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest as KpProduce, TopicName, TransactionalId};
use kafka_protocol::protocol::{Encodable, StrBytes};

fn reference(version: i16, req: &ProduceRequest) -> Vec<u8> {
    let kp = KpProduce::default()
        .with_transactional_id(
            req.transactional_id
                .clone()
                .map(|s| TransactionalId(StrBytes::from_string(s))),
        )
        .with_acks(req.acks.code())
        .with_timeout_ms(req.timeout.as_millis() as i32)
        .with_topic_data(
            req.topics
                .iter()
                .map(|t| {
                    TopicProduceData::default()
                        .with_name(TopicName(StrBytes::from_string(t.topic.clone())))
                        .with_partition_data(
                            t.partitions
                                .iter()
                                .map(|(p, b)| {
                                    let mut all = Vec::new();
                                    for x in &b.parts {
                                        all.extend_from_slice(x);
                                    }
                                    PartitionProduceData::default()
                                        .with_index(*p)
                                        .with_records(Some(Bytes::from(all)))
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let mut buf = BytesMut::new();
    kp.encode(&mut buf, version).unwrap();
    assert_eq!(buf.len(), kp.compute_size(version).unwrap());
    buf.to_vec()
}

fn sample(txn: Option<&str>, acks: Acks) -> ProduceRequest {
    let mut r = ProduceRequest::new(acks);
    r.transactional_id = txn.map(str::to_string);
    r.timeout = Duration::from_millis(1234);
    let hdr = Bytes::from(vec![1u8; 61]);
    let payload = Bytes::from((0..200u8).collect::<Vec<_>>());
    r.push(
        "alpha",
        0,
        RawBatch::from_parts(vec![hdr.clone(), payload.clone()]),
    );
    r.push("alpha", 7, RawBatch::new(Bytes::from(vec![9u8; 300])));
    // A topic name long enough for a multi-byte varint length is not needed, but a batch
    // long enough for a 2-byte varint is.
    r.push(
        "beta",
        2,
        RawBatch::from_parts(vec![hdr, payload, Bytes::new()]),
    );
    r
}

#[test]
fn hand_encoding_matches_kafka_protocol() {
    for version in 3..=12 {
        for (txn, acks) in [
            (None, Acks::All),
            (Some("tx-1"), Acks::Leader),
            (None, Acks::None),
        ] {
            let req = sample(txn, acks);
            let parts = encode_body(version, &req).unwrap();
            let mut ours = Vec::new();
            for p in &parts {
                ours.extend_from_slice(p);
            }
            assert_eq!(
                ours,
                reference(version, &req),
                "v{version} {txn:?} {acks:?}"
            );
        }
    }
}

#[test]
fn batch_parts_are_not_copied() {
    let req = sample(None, Acks::All);
    let parts = encode_body(9, &req).unwrap();
    let payload = &req.topics[0].partitions[0].1.parts[1];
    assert!(
        parts
            .iter()
            .any(|p| p.as_ptr() == payload.as_ptr() && p.len() == payload.len()),
        "the payload must be passed through as the same allocation"
    );
}

#[test]
fn rejects_two_batches_for_one_partition() {
    let mut r = ProduceRequest::new(Acks::All);
    r.push("t", 0, RawBatch::new(Bytes::from_static(b"x")));
    r.push("t", 0, RawBatch::new(Bytes::from_static(b"y")));
    assert!(r.validate().is_err());
}
