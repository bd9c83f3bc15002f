//! DescribeTransactions (API 65) and ListTransactions (API 66), what the Java AdminClient's
//! `describeTransactions` and `listTransactions` send, on the transaction coordinator over a
//! real log manager with a manual clock: an open transaction's state, producer, timeout, start
//! time and partitions by topic; an Empty one; unknown and empty ids; the list filtered by
//! state (an unknown state name answered back), producer id and running time.

use crate::common;

use common::txn::{NoGroups, manual_logs};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn init(txn: &TxnCoordinator, id: &str, timeout_ms: i32) -> i64 {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s(id)));
    r.transaction_timeout_ms = timeout_ms;
    r.producer_id = (-1).into();
    r.producer_epoch = -1;
    match txn.handle(5, RequestKind::InitProducerId(r)) {
        ResponseKind::InitProducerId(x) => {
            assert_eq!(x.error_code, 0);
            x.producer_id.0
        }
        other => panic!("{other:?}"),
    }
}

fn add(txn: &TxnCoordinator, id: &str, producer_id: i64, partitions: &[(&str, i32)]) {
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s(id));
    r.v3_and_below_producer_id = producer_id.into();
    r.v3_and_below_producer_epoch = 0;
    for (topic, p) in partitions {
        let mut t = AddPartitionsToTxnTopic::default();
        t.name = TopicName(s(topic));
        t.partitions = vec![*p];
        r.v3_and_below_topics.push(t);
    }
    match txn.handle(3, RequestKind::AddPartitionsToTxn(r)) {
        ResponseKind::AddPartitionsToTxn(x) => {
            for t in &x.results_by_topic_v3_and_below {
                for p in &t.results_by_partition {
                    assert_eq!(p.partition_error_code, 0, "{x:?}");
                }
            }
        }
        other => panic!("{other:?}"),
    }
}

/// (transactional id, producer id, state) of a ListTransactions answer, and its unknown states.
fn list(
    txn: &TxnCoordinator,
    version: i16,
    states: &[&str],
    producers: &[i64],
    duration_ms: i64,
) -> (Vec<(String, i64, String)>, Vec<String>) {
    let r = ListTransactionsRequest::default()
        .with_state_filters(states.iter().map(|x| s(x)).collect())
        .with_producer_id_filters(producers.iter().map(|p| (*p).into()).collect())
        .with_duration_filter(duration_ms);
    match txn.handle(version, RequestKind::ListTransactions(r)) {
        ResponseKind::ListTransactions(x) => {
            assert_eq!(x.error_code, 0);
            (
                x.transaction_states
                    .iter()
                    .map(|t| {
                        (
                            t.transactional_id.0.to_string(),
                            t.producer_id.0,
                            t.transaction_state.to_string(),
                        )
                    })
                    .collect(),
                x.unknown_state_filters
                    .iter()
                    .map(|u| u.to_string())
                    .collect(),
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn describe_and_list_transactions_report_the_coordinators_state() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), T0);
    for (topic, n) in [("orders", 2), ("payments", 1)] {
        for partition in 0..n {
            let tp = TopicPartition {
                topic: topic.into(),
                partition,
            };
            logs.create(&tp, TopicId([3; 16]), LogConfig::default())
                .unwrap();
        }
    }
    let txn = TxnCoordinator::open(
        logs,
        Arc::new(NoGroups),
        clock.clone(),
        TxnConfig::default(),
    )
    .unwrap();
    let a = init(&txn, "a", 45_000);
    let b = init(&txn, "b", 60_000);
    clock.advance(1_000);
    add(
        &txn,
        "a",
        a,
        &[("orders", 1), ("payments", 0), ("orders", 0)],
    );
    clock.advance(5_000);

    let r = DescribeTransactionsRequest::default().with_transactional_ids(
        ["a", "b", "nope", ""]
            .iter()
            .map(|i| TransactionalId(s(i)))
            .collect(),
    );
    let resp = match txn.handle(0, RequestKind::DescribeTransactions(r)) {
        ResponseKind::DescribeTransactions(x) => x,
        other => panic!("{other:?}"),
    };
    let got: Vec<_> = resp
        .transaction_states
        .iter()
        .map(|t| {
            (
                t.transactional_id.0.to_string(),
                t.error_code,
                t.transaction_state.to_string(),
                t.producer_id.0,
                t.producer_epoch,
                t.transaction_timeout_ms,
                t.transaction_start_time_ms,
                t.topics
                    .iter()
                    .map(|d| (d.topic.0.to_string(), d.partitions.clone()))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    // An error leaves the other fields at the schema's defaults (0), as Kafka's answer does.
    let ongoing = vec![
        ("orders".to_string(), vec![0, 1]),
        ("payments".to_string(), vec![0]),
    ];
    assert_eq!(
        got,
        [
            (
                "a".into(),
                0,
                "Ongoing".into(),
                a,
                0,
                45_000,
                T0 + 1_000,
                ongoing
            ),
            ("b".into(), 0, "Empty".into(), b, 0, 60_000, -1, vec![]),
            (
                "nope".into(),
                ResponseError::TransactionalIdNotFound.code(),
                String::new(),
                0,
                0,
                0,
                0,
                vec![]
            ),
            (
                String::new(),
                ResponseError::InvalidRequest.code(),
                String::new(),
                0,
                0,
                0,
                0,
                vec![]
            ),
        ]
    );

    let both = vec![
        ("a".to_string(), a, "Ongoing".to_string()),
        ("b".to_string(), b, "Empty".to_string()),
    ];
    assert_eq!(list(&txn, 1, &[], &[], -1), (both.clone(), vec![]));
    assert_eq!(
        list(&txn, 0, &["Ongoing", "Bogus"], &[], -1),
        (vec![both[0].clone()], vec!["Bogus".to_string()])
    );
    assert_eq!(
        list(&txn, 1, &[], &[b], -1),
        (vec![both[1].clone()], vec![])
    );
    // Running for more than 4 s: `a` (5 s) and `b` (no transaction: start −1, as in Kafka).
    assert_eq!(list(&txn, 1, &[], &[], 4_000), (both.clone(), vec![]));
    assert_eq!(
        list(&txn, 1, &["Ongoing"], &[], 5_000),
        (vec![], vec![]),
        "not running for more than 5 s"
    );
}
