//! Kafka answers a Produce partition with the first check it fails, in this order:
//! `handleProduceRequest` (existence, `validateRecords`), `ReplicaManager.handleProduceAppend`
//! (one transactional producer per request, then the transaction verification),
//! `appendRecords` (`acks`), `appendToLocalLog` (internal topics, then the partition's log). A
//! partition whose data directory is offline since start is in Kafka's metadata, so only its
//! log append fails `KAFKA_STORAGE_ERROR`. mirrorlog checked `acks` before the verification
//! (a transactional batch outside its transaction was answered `INVALID_REQUIRED_ACKS`), and
//! answered an offline partition `KAFKA_STORAGE_ERROR` before every other check (an invalid
//! batch, bad `acks`, a second transactional producer that fails the whole request).

use crate::common;

use common::offline_partition::topic_t_with_partition_offline;
use common::produce::{
    answered, batch, request, running_with_partition_0_in_transaction, send, txn_batch,
};
use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::produce;

const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
const INVALID_REQUIRED_ACKS: i16 = ResponseError::InvalidRequiredAcks.code();
const STORAGE: i16 = ResponseError::KafkaStorageError.code();

#[test]
fn the_transaction_verification_comes_before_acks() {
    let dir = tempfile::tempdir().unwrap();
    let (running, pid, epoch) = running_with_partition_0_in_transaction(dir.path());
    // Partition 1 is not in the transaction: the verification answers it; partition 0 passes
    // and gets the bad acks.
    let mut r = request(
        2,
        vec![
            ("t", 0, Some(txn_batch(pid, epoch, 0))),
            ("t", 1, Some(txn_batch(pid, epoch, 0))),
        ],
    );
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    let resp = send(running.addr, 9, &r);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    let not_in_txn = ResponseError::InvalidTxnState.code();
    assert_eq!(
        answered(&resp),
        vec![t(0, INVALID_REQUIRED_ACKS), t(1, not_in_txn)]
    );
    assert_eq!(
        resp.responses[0].partition_responses[1]
            .error_message
            .as_deref(),
        Some("Partition was not added to the transaction")
    );
    let end = |p| {
        let h = running.broker.partition("t", p).unwrap();
        h.read().log_end_offset().get()
    };
    assert_eq!((end(0), end(1)), (0, 0));
    running.shutdown().unwrap();
}

#[test]
fn a_partition_offline_since_start_fails_only_at_its_append() {
    let w = topic_t_with_partition_offline(0, &[]);
    let b = &w.broker;
    let codes = |r| {
        let resp = produce::handle(b, r, 9).unwrap();
        answered(&resp).into_iter().map(|a| a.2).collect::<Vec<_>>()
    };
    // A batch Kafka's `validateRecords` refuses (magic 1).
    let mut legacy = batch(b"v").to_vec();
    legacy[16] = 1;
    let r = request(1, vec![("t", 0, Some(legacy.into())), ("t", 1, None)]);
    assert_eq!(codes(r), vec![INVALID_RECORD, INVALID_RECORD]);
    // Bad acks.
    let r = request(2, vec![("t", 0, Some(batch(b"v")))]);
    assert_eq!(codes(r), vec![INVALID_REQUIRED_ACKS]);
    // Transactional batches of two producers fail the whole request, the offline partition's
    // counted too.
    let mut r = request(
        1,
        vec![
            ("t", 0, Some(txn_batch(1000, 0, 0))),
            ("t", 1, Some(txn_batch(2000, 0, 0))),
        ],
    );
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    let mapping = ResponseError::InvalidProducerIdMapping.code();
    assert_eq!(codes(r), vec![mapping, mapping]);
    // Past every check: the storage error, beside an append to the other partition.
    let r = request(
        1,
        vec![("t", 0, Some(batch(b"v"))), ("t", 1, Some(batch(b"v")))],
    );
    assert_eq!(codes(r), vec![STORAGE, 0]);
    let r = request(-1, vec![("t", 0, Some(batch(b"v")))]);
    assert_eq!(codes(r), vec![STORAGE]);
    w.broker.shutdown().unwrap();
}
