//! KIP-890 part 1: a transactional write to a partition that is not in the producer's open
//! transaction is refused. Kafka's `AddPartitionsToTxnManager` answers it with
//! TRANSACTION_ABORTABLE (120) to the clients that know it — Produce v11+, TxnOffsetCommit v4+
//! (`produceRequestVersionToTransactionSupportedOperation`,
//! `txnOffsetCommitRequestVersionToTransactionSupportedOperation`: `GENERIC_ERROR_SUPPORTED`) —
//! and INVALID_TXN_STATE (48) only to older ones (`DEFAULT_ERROR`). This broker advertises
//! Produce up to v11 and TxnOffsetCommit up to v5, so it must answer 120 at those versions.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{ProducerEpoch, ProducerId as Pid, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

const NOW: i64 = 1_700_000_000_000;
const INVALID_TXN_STATE: i16 = 48;
const TRANSACTION_ABORTABLE: i16 = 120;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

fn broker() -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("c".into());
    let b = Arc::new(
        Broker::open(
            config,
            Arc::new(PwriteStorage::new()),
            ManualClock::new(NOW),
        )
        .unwrap(),
    );
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b).unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    (dir, b)
}

fn call(b: &Broker, api: ApiKey, v: i16, req: RequestKind) -> ResponseKind {
    let ctx = RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some("test".into()),
        api_key: api,
        api_version: v,
        correlation_id: 1,
    };
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(v);
    b.handle(&ctx, &header, req).expect("a response")
}

fn init_producer(b: &Broker, txn_id: &str) -> (i64, i16) {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s(txn_id)));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(resp) = call(b, ApiKey::InitProducerId, 4, r.into()) else {
        panic!("not an InitProducerId response");
    };
    assert_eq!(resp.error_code, 0);
    (resp.producer_id.0, resp.producer_epoch)
}

fn txn_batch(pid: i64, epoch: i16) -> Bytes {
    let mut bb = BatchBuilder::new()
        .producer(Pid(pid), ProducerEpoch(epoch), Sequence(0))
        .transactional(true);
    bb.append(TimestampMs(NOW), None, Some(b"v"), &[]);
    bb.build().into_bytes()
}

fn produce_code(b: &Broker, v: i16, txn_id: &str, records: Bytes) -> i16 {
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = TopicName(s("t"));
    t.partition_data = vec![pd];
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 30_000;
    r.transactional_id = Some(TransactionalId(s(txn_id)));
    r.topic_data = vec![t];
    let ResponseKind::Produce(resp) = call(b, ApiKey::Produce, v, r.into()) else {
        panic!("not a Produce response");
    };
    resp.responses[0].partition_responses[0].error_code
}

fn txn_offset_commit_code(b: &Broker, v: i16, txn_id: &str, pid: i64, epoch: i16) -> i16 {
    let mut p = TxnOffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 0;
    let mut t = TxnOffsetCommitRequestTopic::default();
    t.name = TopicName(s("t"));
    t.partitions = vec![p];
    let mut r = TxnOffsetCommitRequest::default();
    r.transactional_id = TransactionalId(s(txn_id));
    r.group_id = GroupId(s("g"));
    r.producer_id = ProducerId(pid);
    r.producer_epoch = epoch;
    r.generation_id = -1;
    r.member_id = s("");
    r.topics = vec![t];
    let ResponseKind::TxnOffsetCommit(resp) = call(b, ApiKey::TxnOffsetCommit, v, r.into()) else {
        panic!("not a TxnOffsetCommit response");
    };
    resp.topics[0].partitions[0].error_code
}

#[test]
fn produce_outside_the_transaction_is_transaction_abortable_from_v11() {
    let (_dir, b) = broker();
    let (pid, epoch) = init_producer(&b, "tx");
    // The partition was never added (no AddPartitionsToTxn): refused at every version.
    assert_eq!(
        produce_code(&b, 10, "tx", txn_batch(pid, epoch)),
        INVALID_TXN_STATE,
        "Produce v10 does not know TRANSACTION_ABORTABLE"
    );
    assert_eq!(
        produce_code(&b, 11, "tx", txn_batch(pid, epoch)),
        TRANSACTION_ABORTABLE,
        "Produce v11 is answered TRANSACTION_ABORTABLE, as Kafka does"
    );
    assert_eq!(
        ResponseError::try_from_code(TRANSACTION_ABORTABLE),
        Some(ResponseError::TransactionAbortable)
    );
}

#[test]
fn txn_offset_commit_outside_the_transaction_is_transaction_abortable_from_v4() {
    let (_dir, b) = broker();
    let (pid, epoch) = init_producer(&b, "tx");
    // The group's offsets partition was never added (no AddOffsetsToTxn).
    assert_eq!(
        txn_offset_commit_code(&b, 3, "tx", pid, epoch),
        INVALID_TXN_STATE,
        "TxnOffsetCommit v3 does not know TRANSACTION_ABORTABLE"
    );
    assert_eq!(
        txn_offset_commit_code(&b, 4, "tx", pid, epoch),
        TRANSACTION_ABORTABLE,
        "TxnOffsetCommit v4 is answered TRANSACTION_ABORTABLE, as Kafka does"
    );
}
