//! Producer ids and transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
//! EndTxn, TxnOffsetCommit.

use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, EndTxnRequest, GroupId,
    InitProducerIdRequest, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{Client, CoordinatorType};
use crate::error::{Error, Result};
use crate::rpc::offsets::{CommitOffset, GroupMember};

/// A producer id and epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerIdentity {
    /// Producer id.
    pub id: i64,
    /// Producer epoch.
    pub epoch: i16,
}

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

impl Client {
    /// InitProducerId. With `transactional_id` it goes to the transaction coordinator;
    /// without, to any broker (an idempotent producer id). Pass `current` to bump the epoch
    /// of an existing id (KIP-360). Uses v3+ (Tansu fails v0-2).
    pub async fn init_producer_id(
        &self,
        transactional_id: Option<&str>,
        transaction_timeout: Duration,
        current: Option<ProducerIdentity>,
    ) -> Result<ProducerIdentity> {
        let tmo = i32::try_from(transaction_timeout.as_millis()).unwrap_or(i32::MAX);
        let build = |_v: i16| {
            let cur = current.unwrap_or(ProducerIdentity { id: -1, epoch: -1 });
            Ok(InitProducerIdRequest::default()
                .with_transactional_id(transactional_id.map(|t| TransactionalId(s(t))))
                .with_transaction_timeout_ms(tmo)
                .with_producer_id(ProducerId(cur.id))
                .with_producer_epoch(cur.epoch))
        };
        let check =
            |code: i16| Error::check_code(code, None).map_err(|e| e.api(ApiKey::InitProducerId));
        let resp = match transactional_id {
            Some(t) => {
                self.send_to_coordinator(
                    CoordinatorType::Transaction,
                    t,
                    Duration::ZERO,
                    build,
                    |r| check(r.error_code),
                )
                .await?
            }
            None => {
                self.with_retries("init_producer_id", || async {
                    let (_, _, r) = self.send_any(build).await?;
                    check(r.error_code)?;
                    Ok(r)
                })
                .await?
            }
        };
        Ok(ProducerIdentity {
            id: resp.producer_id.0,
            epoch: resp.producer_epoch,
        })
    }

    /// Adds partitions to the ongoing transaction (client form, v0-3).
    pub async fn add_partitions_to_txn(
        &self,
        transactional_id: &str,
        producer: ProducerIdentity,
        partitions: &[(&str, &[i32])],
    ) -> Result<()> {
        let resp = self
            .send_to_coordinator(
                CoordinatorType::Transaction,
                transactional_id,
                Duration::ZERO,
                |_| {
                    Ok(AddPartitionsToTxnRequest::default()
                        .with_v3_and_below_transactional_id(TransactionalId(s(transactional_id)))
                        .with_v3_and_below_producer_id(ProducerId(producer.id))
                        .with_v3_and_below_producer_epoch(producer.epoch)
                        .with_v3_and_below_topics(
                            partitions
                                .iter()
                                .map(|(t, ps)| {
                                    AddPartitionsToTxnTopic::default()
                                        .with_name(TopicName(s(t)))
                                        .with_partitions(ps.to_vec())
                                })
                                .collect(),
                        ))
                },
                |r| {
                    // A moved coordinator is reported per partition in the v0-3 form.
                    for t in &r.results_by_topic_v3_and_below {
                        for p in &t.results_by_partition {
                            if matches!(p.partition_error_code, 14..=16) {
                                return Error::check_code(p.partition_error_code, None);
                            }
                        }
                    }
                    Ok(())
                },
            )
            .await?;
        // When one partition fails, the others answer OPERATION_NOT_ATTEMPTED (55): report
        // the failure that caused it.
        let mut first: Option<Error> = None;
        for t in resp.results_by_topic_v3_and_below {
            for p in t.results_by_partition {
                if let Err(e) = Error::check_code(p.partition_error_code, None) {
                    let e = e
                        .api(ApiKey::AddPartitionsToTxn)
                        .topic(t.name.0.to_string())
                        .partition(p.partition_index);
                    if p.partition_error_code != 55 {
                        return Err(e);
                    }
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Adds a group's offsets to the ongoing transaction.
    pub async fn add_offsets_to_txn(
        &self,
        transactional_id: &str,
        producer: ProducerIdentity,
        group: &str,
    ) -> Result<()> {
        self.send_to_coordinator(
            CoordinatorType::Transaction,
            transactional_id,
            Duration::ZERO,
            |_| {
                Ok(AddOffsetsToTxnRequest::default()
                    .with_transactional_id(TransactionalId(s(transactional_id)))
                    .with_producer_id(ProducerId(producer.id))
                    .with_producer_epoch(producer.epoch)
                    .with_group_id(GroupId(s(group))))
            },
            |r| Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::AddOffsetsToTxn)),
        )
        .await
        .map(|_| ())
    }

    /// Commits (`commit = true`) or aborts the ongoing transaction.
    pub async fn end_txn(
        &self,
        transactional_id: &str,
        producer: ProducerIdentity,
        commit: bool,
    ) -> Result<()> {
        self.send_to_coordinator(
            CoordinatorType::Transaction,
            transactional_id,
            Duration::ZERO,
            |_| {
                Ok(EndTxnRequest::default()
                    .with_transactional_id(TransactionalId(s(transactional_id)))
                    .with_producer_id(ProducerId(producer.id))
                    .with_producer_epoch(producer.epoch)
                    .with_committed(commit))
            },
            |r| Error::check_code(r.error_code, None).map_err(|e| e.api(ApiKey::EndTxn)),
        )
        .await
        .map(|_| ())
    }

    /// Commits group offsets inside the transaction (sent to the group coordinator, after
    /// [`Client::add_offsets_to_txn`]).
    pub async fn txn_offset_commit(
        &self,
        transactional_id: &str,
        group: &str,
        producer: ProducerIdentity,
        member: &GroupMember,
        offsets: &[CommitOffset],
    ) -> Result<()> {
        let build = |v: i16| {
            let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
            for o in offsets {
                let p = TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(o.partition)
                    .with_committed_offset(o.offset)
                    .with_committed_leader_epoch(if v >= 2 { o.leader_epoch } else { -1 })
                    .with_committed_metadata(Some(s(o.metadata.as_deref().unwrap_or(""))));
                match topics.iter_mut().find(|t| *t.name.0 == *o.topic) {
                    Some(t) => t.partitions.push(p),
                    None => topics.push(
                        TxnOffsetCommitRequestTopic::default()
                            .with_name(TopicName(s(&o.topic)))
                            .with_partitions(vec![p]),
                    ),
                }
            }
            let mut r = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(s(transactional_id)))
                .with_group_id(GroupId(s(group)))
                .with_producer_id(ProducerId(producer.id))
                .with_producer_epoch(producer.epoch)
                .with_topics(topics);
            if v >= 3 {
                r.generation_id = member.generation_id;
                r.member_id = s(&member.member_id);
                r.group_instance_id = member.group_instance_id.as_deref().map(s);
            }
            Ok(r)
        };
        self.send_to_coordinator(CoordinatorType::Group, group, Duration::ZERO, build, |r| {
            for t in &r.topics {
                for p in &t.partitions {
                    Error::check_code(p.error_code, None).map_err(|e| {
                        e.api(ApiKey::TxnOffsetCommit)
                            .topic(t.name.0.to_string())
                            .partition(p.partition_index)
                    })?;
                }
            }
            Ok(())
        })
        .await
        .map(|_| ())
    }
}
