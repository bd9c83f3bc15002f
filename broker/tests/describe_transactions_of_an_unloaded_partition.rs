//! Bug: DescribeTransactions of a transactional id whose `__transaction_state` partition is in
//! an offline data directory (not loaded) answered TRANSACTIONAL_ID_NOT_FOUND, so
//! `kafka-transactions.sh describe` told the operator a transaction left open there did not
//! exist. Kafka answers NOT_COORDINATOR for an id whose coordinator partition it does not lead
//! (`getTransactionState`), as this broker's other transaction APIs do for such an id; the ids
//! of loaded partitions are described as before.

use crate::common;

use common::two_dir_broker::{add_partition, call, close, open, s, state_tp};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::*;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

fn init(b: &Broker, txn_id: &str) -> (i64, i16) {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s(txn_id)));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(resp) = call(b, ApiKey::InitProducerId, 4, r.into()) else {
        panic!("not an InitProducerId response");
    };
    assert_eq!(resp.error_code, 0);
    (resp.producer_id.0, resp.producer_epoch)
}

/// DescribeTransactions v0 of one id: (error, state).
fn describe(b: &Broker, txn_id: &str) -> (i16, String) {
    let r = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(s(txn_id))]);
    let ResponseKind::DescribeTransactions(resp) =
        call(b, ApiKey::DescribeTransactions, 0, r.into())
    else {
        panic!("not a DescribeTransactions response");
    };
    let t = &resp.transaction_states[0];
    (t.error_code, t.transaction_state.to_string())
}

#[test]
fn describe_transactions_of_an_id_in_an_offline_state_partition_is_not_coordinator() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let clock = ManualClock::new(1_700_000_000_000);
    let parts = TxnConfig::default().transaction_state_partitions;

    let b = open(d1.path(), d2.path(), &sim, &clock);
    b.topics
        .create(&b.logs, "t", 2, LogConfig::default(), None)
        .unwrap();
    let dir_of = |b: &Broker, tp: &TopicPartition| b.logs.get(tp).unwrap().data_dir().to_path_buf();
    // The directory to fail is the one without partition 0 (the producer-id blocks).
    let good = dir_of(&b, &state_tp(0));
    let bad = if good == d1.path() {
        d2.path()
    } else {
        d1.path()
    }
    .to_path_buf();
    let id_in = |dir: &Path| {
        (0..1000)
            .map(|i| format!("tx-{i}"))
            .find(|id| dir_of(&b, &state_tp(partition_for(id, parts))) == dir)
            .expect("an id hashing into that dir")
    };
    let (off_id, on_id) = (id_in(&bad), id_in(&good));
    let off_tp = state_tp(partition_for(&off_id, parts));
    let t_good = (0..2)
        .map(|p| TopicPartition {
            topic: "t".into(),
            partition: p,
        })
        .find(|tp| dir_of(&b, tp) == good)
        .unwrap();
    // A transaction left open in the partition that goes offline, another in a healthy one.
    for id in [&off_id, &on_id] {
        let (pid, epoch) = init(&b, id);
        assert_eq!(add_partition(&b, id, pid, epoch, &t_good), 0);
        assert_eq!(describe(&b, id), (0, "Ongoing".to_string()));
    }
    close(b);

    let fault_path = bad.join(off_tp.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault_path.to_str().unwrap()));
    let b = open(d1.path(), d2.path(), &sim, &clock);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));

    assert_eq!(
        describe(&b, &off_id).0,
        E::NotCoordinator.code(),
        "its state is not loaded here, not absent"
    );
    assert_eq!(describe(&b, &on_id), (0, "Ongoing".to_string()));
    assert_eq!(
        describe(&b, "never-seen").0,
        E::TransactionalIdNotFound.code()
    );
    close(b);
}
