//! Kafka's `ReplicaManager.handleProduceAppend` verifies, and counts toward "one producer per
//! request", only the transactional batches that have a producer id (`batch.hasProducerId &&
//! batch.isTransactional`); its log has no producer state for one without (−1) and appends it.
//! mirrorlog verified such a batch as producer −1 and refused it `INVALID_PRODUCER_ID_MAPPING`,
//! and counted it as a second producer beside a real one, failing the whole request. Without a
//! transactional id the request still fails as a whole, as Kafka's `hasTransactionalRecords`
//! needs one whatever the producer id.

use crate::common;

use common::produce::{
    answered, request, running_with_partition_0_in_transaction, send, txn_batch,
};
use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;

#[test]
fn a_transactional_batch_without_a_producer_id_is_appended_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let (running, pid, epoch) = running_with_partition_0_in_transaction(dir.path());
    let without_pid = || txn_batch(-1, -1, -1);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);

    // Beside a verified batch of the transaction's producer: not a second producer.
    let mut r = request(
        1,
        vec![
            ("t", 0, Some(txn_batch(pid, epoch, 0))),
            ("t", 1, Some(without_pid())),
        ],
    );
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    assert_eq!(answered(&send(running.addr, 9, &r)), vec![t(0, 0), t(1, 0)]);
    // On its own.
    let mut r = request(1, vec![("t", 1, Some(without_pid()))]);
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    assert_eq!(answered(&send(running.addr, 9, &r)), vec![t(1, 0)]);
    let b = &running.broker;
    let end = |p| b.partition("t", p).unwrap().read().log_end_offset().get();
    assert_eq!((end(0), end(1)), (1, 2));

    // Without a transactional id: refused as a whole.
    let r = request(1, vec![("t", 1, Some(without_pid()))]);
    let refused = ResponseError::TransactionalIdAuthorizationFailed.code();
    assert_eq!(answered(&send(running.addr, 9, &r)), vec![t(1, refused)]);
    assert_eq!(end(1), 2);
    running.shutdown().unwrap();
}
