//! Bug: ListTransactions (API 66) whose state filters were all unknown names (a typo such as
//! `--state Ongiong`, or a state a newer client knows) listed every transaction, as if no
//! filter had been given. Kafka filters whenever state names are given
//! (`filterStateNames.nonEmpty`): the unknown names are answered back and match nothing, so
//! the list is empty.

use crate::common;

use common::txn::{NoGroups, manual_logs};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use std::sync::Arc;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// (transactional ids listed, unknown state filters).
fn list(txn: &TxnCoordinator, states: &[&str]) -> (Vec<String>, Vec<String>) {
    let r = ListTransactionsRequest::default()
        .with_state_filters(states.iter().map(|x| s(x)).collect())
        .with_duration_filter(-1);
    match txn.handle(1, RequestKind::ListTransactions(r)) {
        ResponseKind::ListTransactions(x) => (
            x.transaction_states
                .iter()
                .map(|t| t.transactional_id.0.to_string())
                .collect(),
            x.unknown_state_filters
                .iter()
                .map(|u| u.to_string())
                .collect(),
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_unknown_state_filters_list_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), 1_700_000_000_000);
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    logs.create(&tp, TopicId([3; 16]), LogConfig::default())
        .unwrap();
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();

    // One open transaction.
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s("tx")));
    r.transaction_timeout_ms = 60_000;
    r.producer_id = (-1).into();
    r.producer_epoch = -1;
    let ResponseKind::InitProducerId(init) = txn.handle(5, RequestKind::InitProducerId(r)) else {
        panic!("not an InitProducerId response");
    };
    assert_eq!(init.error_code, 0);
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s("tx"));
    r.v3_and_below_producer_id = init.producer_id;
    r.v3_and_below_producer_epoch = init.producer_epoch;
    let mut t = AddPartitionsToTxnTopic::default();
    t.name = TopicName(s("orders"));
    t.partitions = vec![0];
    r.v3_and_below_topics = vec![t];
    txn.handle(3, RequestKind::AddPartitionsToTxn(r));

    assert_eq!(list(&txn, &[]), (vec!["tx".to_string()], vec![]));
    assert_eq!(list(&txn, &["Ongoing"]), (vec!["tx".to_string()], vec![]));
    assert_eq!(
        list(&txn, &["Ongiong"]),
        (vec![], vec!["Ongiong".to_string()]),
        "an unknown state name matches no transaction"
    );
    assert_eq!(
        list(&txn, &["Ongiong", "Ongoing"]),
        (vec!["tx".to_string()], vec!["Ongiong".to_string()])
    );
}
