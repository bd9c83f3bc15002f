//! Kafka's Produce checks count a batch as transactional by its flag alone, control or not:
//! `hasTransactionalRecords` (without a transactional id the whole request fails
//! `TRANSACTIONAL_ID_AUTHORIZATION_FAILED`) and `handleProduceAppend`'s verification (a
//! partition not in the producer's transaction is `INVALID_TXN_STATE` before the log sees the
//! batch); only then does the log refuse a client's control batch, `INVALID_RECORD`. mirrorlog
//! left control batches out of both, so such a batch reached the log unverified.

use crate::common;

use common::produce::{
    answered, batch, request, running_with_topic, send, txn_batch, with_control_bit,
};
use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::client::Client;

#[test]
fn a_transactional_control_batch_is_checked_as_transactional_first() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let mut c = Client::connect(&running.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    let control = || with_control_bit(txn_batch(pid, epoch, 0));
    let t = |p: i32, e: ResponseError| ("t".to_string(), p, e.code());

    // No transactional id: the whole request.
    let r = request(
        1,
        vec![("t", 0, Some(control())), ("t", 1, Some(batch(b"v")))],
    );
    let refused = ResponseError::TransactionalIdAuthorizationFailed;
    assert_eq!(
        answered(&send(running.addr, 9, &r)),
        vec![t(0, refused), t(1, refused)]
    );
    // Not in the transaction: refused by the verification.
    let mut r = request(1, vec![("t", 0, Some(control()))]);
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    assert_eq!(
        answered(&send(running.addr, 10, &r)),
        vec![t(0, ResponseError::InvalidTxnState)]
    );
    // In it: the log refuses a client's control batch.
    c.add_partitions_to_txn("tx", pid, epoch, "t", &[0])
        .unwrap();
    assert_eq!(
        answered(&send(running.addr, 10, &r)),
        vec![t(0, ResponseError::InvalidRecord)]
    );
    running.shutdown().unwrap();
}
