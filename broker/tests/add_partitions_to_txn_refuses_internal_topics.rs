//! Bug: AddPartitionsToTxn (v0–3, what clients send) added partitions of the internal topics
//! `__consumer_offsets`, `__transaction_state` and `__mirror_state` to a transaction, and EndTxn
//! then wrote its COMMIT or ABORT marker into them — into the transaction coordinator's own log
//! and the mirror state store's (which WriteTxnMarkers already refuses). Kafka's `KafkaApis`
//! answers a client's internal partition TOPIC_AUTHORIZATION_FAILED (the others of the request
//! OPERATION_NOT_ATTEMPTED) and adds nothing; the broker-to-broker versions (v4+) skip that
//! check, as in Kafka, but never take `__mirror_state`, which no Kafka broker knows.

use crate::common;

use common::txn::{NoGroups, PartitionResults, flatten, manual_logs};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest, RequestKind, ResponseKind,
    TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::state_log::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnState};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;
use std::sync::Arc;

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn topics(partitions: &[(&str, i32)]) -> Vec<AddPartitionsToTxnTopic> {
    partitions
        .iter()
        .map(|(topic, p)| {
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(vec![*p])
        })
        .collect()
}

/// AddPartitionsToTxn at `version` for one transaction: its partitions' results.
fn add(
    txn: &TxnCoordinator,
    version: i16,
    producer: (i64, i16),
    partitions: &[(&str, i32)],
) -> PartitionResults {
    let mut r = AddPartitionsToTxnRequest::default();
    if version <= 3 {
        r.v3_and_below_transactional_id = TransactionalId(s("tx"));
        r.v3_and_below_producer_id = producer.0.into();
        r.v3_and_below_producer_epoch = producer.1;
        r.v3_and_below_topics = topics(partitions);
    } else {
        r.transactions = vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_producer_id(producer.0.into())
                .with_producer_epoch(producer.1)
                .with_topics(topics(partitions)),
        ];
    }
    match txn.handle(version, RequestKind::AddPartitionsToTxn(r)) {
        ResponseKind::AddPartitionsToTxn(x) if version <= 3 => {
            flatten(&x.results_by_topic_v3_and_below)
        }
        ResponseKind::AddPartitionsToTxn(x) => flatten(&x.results_by_transaction[0].topic_results),
        other => panic!("{other:?}"),
    }
}

fn end_txn(txn: &TxnCoordinator, producer: (i64, i16), commit: bool) -> i16 {
    let r = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s("tx")))
        .with_producer_id(producer.0.into())
        .with_producer_epoch(producer.1)
        .with_committed(commit);
    match txn.handle(3, RequestKind::EndTxn(r)) {
        ResponseKind::EndTxn(x) => x.error_code,
        other => panic!("{other:?}"),
    }
}

fn log_end(logs: &LogManager, tp: &TopicPartition) -> Offset {
    logs.get(tp).unwrap().read().log_end_offset()
}

#[test]
fn a_client_cannot_add_an_internal_partition_to_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), 1_700_000_000_000);
    for (topic, id) in [("orders", 1u8), (OFFSETS_TOPIC, 2), (MIRROR_STATE_TOPIC, 3)] {
        logs.create(&tp(topic, 0), TopicId([id; 16]), LogConfig::default())
            .unwrap();
    }
    let txn = TxnCoordinator::open(
        logs.clone(),
        Arc::new(NoGroups),
        clock,
        TxnConfig::default(),
    )
    .unwrap();
    let mut r = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s("tx"))))
        .with_transaction_timeout_ms(60_000);
    r.producer_id = (-1).into();
    r.producer_epoch = -1;
    let producer = match txn.handle(3, RequestKind::InitProducerId(r)) {
        ResponseKind::InitProducerId(x) => {
            assert_eq!(x.error_code, 0);
            (x.producer_id.0, x.producer_epoch)
        }
        other => panic!("{other:?}"),
    };
    let internal = [
        tp(OFFSETS_TOPIC, 0),
        tp(TRANSACTION_STATE_TOPIC, 0),
        tp(MIRROR_STATE_TOPIC, 0),
    ];
    let ends: Vec<Offset> = internal.iter().map(|t| log_end(&logs, t)).collect();
    let denied = ResponseError::TopicAuthorizationFailed.code();
    let not_attempted = ResponseError::OperationNotAttempted.code();

    for version in 0..=3 {
        assert_eq!(
            add(
                &txn,
                version,
                producer,
                &[
                    ("orders", 0),
                    (OFFSETS_TOPIC, 0),
                    (TRANSACTION_STATE_TOPIC, 0),
                    (MIRROR_STATE_TOPIC, 0),
                ],
            ),
            vec![
                ("orders".into(), 0, not_attempted),
                (OFFSETS_TOPIC.into(), 0, denied),
                (TRANSACTION_STATE_TOPIC.into(), 0, denied),
                (MIRROR_STATE_TOPIC.into(), 0, denied),
            ],
            "v{version}"
        );
        assert_eq!(txn.transaction("tx").unwrap().state, TxnState::Empty);
    }
    // Only an internal partition: refused too; nothing joins.
    assert_eq!(
        add(&txn, 3, producer, &[(TRANSACTION_STATE_TOPIC, 0)]),
        vec![(TRANSACTION_STATE_TOPIC.into(), 0, denied)]
    );
    // The broker-to-broker form never takes `__mirror_state`.
    assert_eq!(
        add(&txn, 4, producer, &[("orders", 0), (MIRROR_STATE_TOPIC, 0)]),
        vec![
            ("orders".into(), 0, not_attempted),
            (MIRROR_STATE_TOPIC.into(), 0, denied),
        ]
    );
    assert_eq!(txn.transaction("tx").unwrap().state, TxnState::Empty);

    // A transaction of the topic alone commits; no internal partition got a marker.
    assert_eq!(
        add(&txn, 3, producer, &[("orders", 0)]),
        vec![("orders".into(), 0, 0)]
    );
    assert_eq!(end_txn(&txn, producer, true), 0);
    assert_eq!(
        txn.transaction("tx").unwrap().state,
        TxnState::CompleteCommit
    );
    assert_eq!(log_end(&logs, &tp("orders", 0)), Offset(1), "its marker");
    let after: Vec<Offset> = internal.iter().map(|t| log_end(&logs, t)).collect();
    // `__transaction_state-0` may hold the coordinator's own records; none is a marker.
    assert_eq!(after[0], ends[0]);
    assert_eq!(after[2], ends[2]);
    let h = logs.get(&tp(TRANSACTION_STATE_TOPIC, 0)).unwrap();
    assert!(
        h.read().producer_state().producers().next().is_none(),
        "no transaction marker in {TRANSACTION_STATE_TOPIC}"
    );
}
