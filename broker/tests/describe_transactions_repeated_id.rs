//! Bug: DescribeTransactions (API 65) answered a transactional id once per time the request
//! named it, each answer with the transaction's whole partition list: a request repeating the
//! id of a transaction over many partitions made a response many times its size. Each id is
//! now answered once.

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

#[test]
fn a_repeated_transactional_id_is_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), 1_700_000_000_000);
    for p in 0..4 {
        let tp = TopicPartition {
            topic: "orders".into(),
            partition: p,
        };
        logs.create(&tp, TopicId([3; 16]), LogConfig::default())
            .unwrap();
    }
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();
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
    t.partitions = vec![0, 1, 2, 3];
    r.v3_and_below_topics = vec![t];
    txn.handle(3, RequestKind::AddPartitionsToTxn(r));

    let ids = ["tx", "tx", "other", "tx", "other"]
        .iter()
        .map(|i| TransactionalId(s(i)))
        .collect();
    let r = DescribeTransactionsRequest::default().with_transactional_ids(ids);
    let ResponseKind::DescribeTransactions(resp) =
        txn.handle(0, RequestKind::DescribeTransactions(r))
    else {
        panic!("not a DescribeTransactions response");
    };
    let answered: Vec<(String, usize)> = resp
        .transaction_states
        .iter()
        .map(|t| {
            (
                t.transactional_id.0.to_string(),
                t.topics.iter().map(|x| x.partitions.len()).sum(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [("tx".to_string(), 4), ("other".to_string(), 0)],
        "each id once, in request order"
    );
}
