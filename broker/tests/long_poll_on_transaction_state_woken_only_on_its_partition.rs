//! A transaction request writes the transactional id's state to one `__transaction_state`
//! partition, the id's (and a producer-id block to partition 0 when one runs out); in Kafka
//! that append completes the delayed fetches of that partition and no other. Here every
//! InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and WriteTxnMarkers woke every
//! long poll on every partition of `__transaction_state`, which re-read and slept again.
//! Wake-ups are counted through the notifier's test hook.

use crate::common;

use common::internal_topics::*;
use common::two_dir_broker::{add_partition, end_txn, init};
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::TRANSACTION_STATE_TOPIC;
use mirrorlog_index::TopicPartition;
use std::sync::Arc;

/// A broker with topic `orders` and a first producer id handed out (partition 0's producer-id
/// block is written); the state partition of `id` and another partition, neither 0.
fn broker_for(dir: &std::path::Path, id: &str) -> (Arc<Broker>, i32, i32) {
    let (b, _clock) = manual_broker_with_orders(dir);
    assert_eq!(init(&b, None).0, 0, "an idempotent producer id");
    let n = TxnConfig::default().transaction_state_partitions;
    let p = partition_for(id, n);
    assert_ne!(p, 0, "pick an id whose state partition is not 0");
    let other = (1..n).find(|q| *q != p).expect("two partitions besides 0");
    (b, p, other)
}

/// Parks long polls on `p` and `other`, runs `request` (which writes one state to `p`), and
/// checks that it woke the one on `p` alone.
fn wakes_only(b: &Arc<Broker>, p: i32, other: i32, request: impl FnOnce()) {
    let rx = park_long_poll(b, TRANSACTION_STATE_TOPIC, p);
    let rx_other = park_long_poll(b, TRANSACTION_STATE_TOPIC, other);
    let before = b.appends.wakeups();
    request();
    let caused = b.appends.wakeups() - before;
    let resp = end_and_answer(b, &rx);
    let resp_other = end_and_answer(b, &rx_other);
    assert_eq!(
        caused, 1,
        "the request's state write to {TRANSACTION_STATE_TOPIC}-{p} should wake its long poll alone, not the one on partition {other}"
    );
    assert!(answered_bytes(&resp) > 0, "{resp:?}");
    assert_eq!(answered_bytes(&resp_other), 0, "{resp_other:?}");
}

fn orders_0() -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition: 0,
    }
}

#[test]
fn init_producer_id_wakes_the_long_poll_on_its_state_partition_only() {
    let dir = tempfile::tempdir().unwrap();
    let id = "txn-watched";
    let (b, p, other) = broker_for(dir.path(), id);
    wakes_only(&b, p, other, || assert_eq!(init(&b, Some(id)).0, 0));
}

#[test]
fn add_partitions_to_txn_wakes_the_long_poll_on_its_state_partition_only() {
    let dir = tempfile::tempdir().unwrap();
    let id = "txn-watched";
    let (b, p, other) = broker_for(dir.path(), id);
    let (code, pid, epoch) = init(&b, Some(id));
    assert_eq!(code, 0);
    wakes_only(&b, p, other, || {
        assert_eq!(add_partition(&b, id, pid, epoch, &orders_0()), 0)
    });
}

#[test]
fn end_txn_wakes_no_long_poll_on_another_state_partition() {
    let dir = tempfile::tempdir().unwrap();
    let id = "txn-watched";
    let (b, p, other) = broker_for(dir.path(), id);
    let (code, pid, epoch) = init(&b, Some(id));
    assert_eq!(code, 0);
    assert_eq!(add_partition(&b, id, pid, epoch, &orders_0()), 0);
    // EndTxn writes two states to `p` (PrepareCommit, CompleteCommit): a long poll there may
    // re-arm between them and be woken twice, so only the other partition is watched, and
    // nothing may wake it (the marker goes to `orders`-0, where nobody waits).
    let rx_other = park_long_poll(&b, TRANSACTION_STATE_TOPIC, other);
    let before = b.appends.wakeups();
    assert_eq!(end_txn(&b, id, pid, epoch), 0);
    let caused = b.appends.wakeups() - before;
    let resp_other = end_and_answer(&b, &rx_other);
    assert_eq!(
        caused, 0,
        "EndTxn's state writes to {TRANSACTION_STATE_TOPIC}-{p} woke the long poll on partition {other}"
    );
    assert_eq!(answered_bytes(&resp_other), 0, "{resp_other:?}");
}
