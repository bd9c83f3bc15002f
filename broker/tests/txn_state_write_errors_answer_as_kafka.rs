//! Bug: every failure to write `__transaction_state` was answered NOT_COORDINATOR, so a state
//! record too large for the log (a transaction of many partitions with long topic names, past
//! `max.message.bytes`) sent the client looking for another coordinator, and back to this one,
//! for ever. Kafka's `TransactionStateManager` maps the append's error: MESSAGE_TOO_LARGE and
//! RECORD_LIST_TOO_LARGE become UNKNOWN_SERVER_ERROR, NOT_LEADER_OR_FOLLOWER and
//! KAFKA_STORAGE_ERROR NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (and the replication errors)
//! COORDINATOR_NOT_AVAILABLE, any other error is answered as it is. The failed write changes
//! nothing: a smaller request still succeeds.

use crate::common;

use common::txn::{NoGroups, PartitionResults, flatten};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, InitProducerIdRequest, RequestKind, ResponseKind, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnState};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;
/// The broker's `message.max.bytes` here, which `__transaction_state` takes too.
const MAX_MESSAGE_BYTES: i32 = 2_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// AddPartitionsToTxn v3 of partition 0 of each of `topics` to the transaction of `producer`.
fn add(txn: &TxnCoordinator, producer: (i64, i16), topics: &[String]) -> PartitionResults {
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s("tx"));
    r.v3_and_below_producer_id = producer.0.into();
    r.v3_and_below_producer_epoch = producer.1;
    r.v3_and_below_topics = topics
        .iter()
        .map(|t| {
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s(t)))
                .with_partitions(vec![0])
        })
        .collect();
    match txn.handle(3, RequestKind::AddPartitionsToTxn(r)) {
        ResponseKind::AddPartitionsToTxn(x) => flatten(&x.results_by_topic_v3_and_below),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_oversized_state_record_is_an_unknown_server_error_not_a_coordinator_move() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogManagerConfig::new(dir.path());
    config.default_log_config.max_message_bytes = MAX_MESSAGE_BYTES;
    let (logs, _) =
        LogManager::open(config, Arc::new(PwriteStorage::new()), ManualClock::new(T0)).unwrap();
    let logs = Arc::new(logs);
    // Twelve topics of 200-byte names: a state record naming them all is past 2,000 bytes.
    let long: Vec<String> = (0..12).map(|i| format!("{i:0>200}")).collect();
    for t in long.iter().chain([&"short".to_string()]) {
        let tp = TopicPartition {
            topic: t.clone(),
            partition: 0,
        };
        logs.create(&tp, TopicId([7; 16]), LogConfig::default())
            .unwrap();
    }
    let txn = TxnCoordinator::open(
        logs,
        Arc::new(NoGroups),
        ManualClock::new(T0),
        TxnConfig::default(),
    )
    .unwrap();
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s("tx")));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(init) = txn.handle(4, RequestKind::InitProducerId(r)) else {
        panic!("not an InitProducerId response");
    };
    assert_eq!(init.error_code, 0);
    let producer = (init.producer_id.0, init.producer_epoch);

    let codes: Vec<i16> = add(&txn, producer, &long).iter().map(|r| r.2).collect();
    assert_eq!(
        codes,
        vec![ResponseError::UnknownServerError.code(); long.len()],
        "Kafka answers an append too large for __transaction_state UNKNOWN_SERVER_ERROR \
         (NOT_COORDINATOR would send the client to find the same coordinator again)"
    );
    // Nothing was changed by the failed write.
    assert_eq!(txn.transaction("tx").unwrap().state, TxnState::Empty);
    assert_eq!(
        add(&txn, producer, &["short".to_string()]),
        vec![("short".to_string(), 0, 0)]
    );
    assert_eq!(txn.transaction("tx").unwrap().state, TxnState::Ongoing);
}
