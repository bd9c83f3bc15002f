//! A transaction open longer than its timeout: the transaction coordinator's tick aborts it,
//! writing PrepareAbort and CompleteAbort to the transactional id's `__transaction_state`
//! partition. In Kafka those appends complete the delayed fetches on the partition (a tool
//! reading the transaction log with its formatter sees them at once). Here the tick's state
//! writes woke no long poll: the fetch waited out its `max_wait_ms`. Wake-ups are counted
//! through the notifier's test hook; the clock is manual and the tick runs when the test says.

use crate::common;

use common::internal_topics::*;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, InitProducerIdRequest, ProducerId, RequestKind,
    ResponseKind, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::TRANSACTION_STATE_TOPIC;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[test]
fn a_timeout_abort_wakes_the_long_poll_on_its_transaction_state_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (b, clock) = manual_broker_with_orders(dir.path());
    let id = "txn-watched";
    let p = partition_for(id, TxnConfig::default().transaction_state_partitions);

    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s(id)));
    r.transaction_timeout_ms = 1_000;
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    let (pid, epoch) = match call(
        &b,
        ApiKey::InitProducerId,
        3,
        RequestKind::InitProducerId(r),
    ) {
        ResponseKind::InitProducerId(resp) => {
            assert_eq!(resp.error_code, 0, "{resp:?}");
            (resp.producer_id, resp.producer_epoch)
        }
        other => panic!("{other:?}"),
    };
    let mut t = AddPartitionsToTxnTopic::default();
    t.name = TopicName(s("orders"));
    t.partitions = vec![0];
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s(id));
    r.v3_and_below_producer_id = pid;
    r.v3_and_below_producer_epoch = epoch;
    r.v3_and_below_topics = vec![t];
    match call(
        &b,
        ApiKey::AddPartitionsToTxn,
        3,
        RequestKind::AddPartitionsToTxn(r),
    ) {
        ResponseKind::AddPartitionsToTxn(resp) => {
            let codes: Vec<i16> = resp
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| {
                    t.results_by_partition
                        .iter()
                        .map(|p| p.partition_error_code)
                })
                .collect();
            assert_eq!(codes, vec![0], "{resp:?}");
        }
        other => panic!("{other:?}"),
    }

    let rx = park_long_poll(&b, TRANSACTION_STATE_TOPIC, p);
    let end = log_end(&b, TRANSACTION_STATE_TOPIC, p);
    let before = b.appends.wakeups();
    // Past the transaction's timeout and the abort check's interval: the tick aborts it.
    clock.advance(TxnConfig::default().abort_timed_out_transaction_cleanup_interval_ms + 1_000);
    b.tick();
    let caused = b.appends.wakeups() - before;
    let wrote = log_end(&b, TRANSACTION_STATE_TOPIC, p) > end;
    let resp = end_and_answer(&b, &rx);
    assert!(
        wrote,
        "the tick wrote nothing to {TRANSACTION_STATE_TOPIC}-{p}"
    );
    assert!(
        caused >= 1,
        "the tick's writes to {TRANSACTION_STATE_TOPIC}-{p} did not wake the long poll there"
    );
    assert!(answered_bytes(&resp) > 0, "{resp:?}");
}
