//! Kafka's batch iterator frames a v2 batch from a length field of 14 (26 bytes), shorter than
//! the 61-byte header. Kafka 4's `hasTransactionalRecords` reads only its attributes, and
//! `validateRecords` its magic, so such a batch reaches `ReplicaManager.handleProduceAppend`,
//! which reads every batch's producer id (`hasProducerId`), and for a transactional one with a
//! producer id also its epoch and base sequence: a batch cut before what is read (under 51
//! bytes; a transactional one with a producer id under 57) throws `IndexOutOfBoundsException`
//! out of the handler, failing the whole request `UNKNOWN_SERVER_ERROR` with nothing appended.
//! A longer one reaches the log, whose CRC check (`isValid`, false below the header's size)
//! answers its partition `CORRUPT_MESSAGE` — unless its base offset is not 0, which
//! `analyzeAndValidateRecords` checks first (`INVALID_RECORD`). mirrorlog answered every such
//! batch its partition's `CORRUPT_MESSAGE` and appended the others, and then still answered
//! `CORRUPT_MESSAGE` for one whose base offset was not 0.

use crate::common;

use bytes::Bytes;
use common::produce::{
    answered, batch, request, running_with_partition_0_in_transaction, running_with_topic, send,
    txn_batch,
};
use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::running::RunningBroker;

const UNKNOWN: i16 = ResponseError::UnknownServerError.code();
const CORRUPT: i16 = ResponseError::CorruptMessage.code();
const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();

/// The first `size` bytes of `records`, its length field saying so.
fn cut(records: Bytes, size: usize) -> Bytes {
    let mut b = records[..size].to_vec();
    b[8..12].copy_from_slice(&(size as i32 - 12).to_be_bytes());
    Bytes::from(b)
}

/// The log end of t-`p`.
fn log_end(running: &RunningBroker, p: i32) -> i64 {
    common::internal_topics::log_end(&running.broker, "t", p)
}

#[test]
fn a_batch_cut_before_its_producer_id_fails_the_whole_request() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    for size in [26, 27, 40, 50] {
        for version in [3, 9] {
            let r = request(
                1,
                vec![
                    ("t", 0, Some(batch(b"a"))),
                    ("t", 1, Some(cut(batch(b"v"), size))),
                ],
            );
            let resp = send(running.addr, version, &r);
            assert_eq!(
                answered(&resp),
                vec![t(0, UNKNOWN), t(1, UNKNOWN)],
                "{size} bytes, v{version}"
            );
            for p in &resp.responses[0].partition_responses {
                assert_eq!(
                    (
                        p.base_offset,
                        p.log_start_offset,
                        p.error_message.as_deref()
                    ),
                    (-1, -1, None)
                );
            }
        }
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (0, 0));
    // From the producer id on, the log answers it: its partition's CORRUPT_MESSAGE.
    for size in [51, 56, 60] {
        let r = request(
            1,
            vec![
                ("t", 0, Some(batch(b"a"))),
                ("t", 1, Some(cut(batch(b"v"), size))),
            ],
        );
        assert_eq!(
            answered(&send(running.addr, 9, &r)),
            vec![t(0, 0), t(1, CORRUPT)],
            "{size} bytes"
        );
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (3, 0));
    // Its base offset is checked before its CRC.
    for size in [51, 56, 60] {
        let mut at_5 = batch(b"v").to_vec();
        at_5[..8].copy_from_slice(&5i64.to_be_bytes());
        let r = request(
            1,
            vec![
                ("t", 0, Some(batch(b"a"))),
                ("t", 1, Some(cut(Bytes::from(at_5), size))),
            ],
        );
        assert_eq!(
            answered(&send(running.addr, 9, &r)),
            vec![t(0, 0), t(1, INVALID_RECORD)],
            "{size} bytes, base offset 5"
        );
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (6, 0));
    running.shutdown().unwrap();
}

#[test]
fn a_transactional_batch_cut_before_its_base_sequence_fails_the_whole_request() {
    let dir = tempfile::tempdir().unwrap();
    let (running, pid, epoch) = running_with_partition_0_in_transaction(dir.path());
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    let send_txn = |records: Bytes| {
        let mut r = request(
            1,
            vec![("t", 0, Some(records)), ("t", 1, Some(batch(b"a")))],
        );
        r.transactional_id = Some(StrBytes::from_static_str("tx").into());
        answered(&send(running.addr, 9, &r))
    };
    for size in [51, 53, 56] {
        assert_eq!(
            send_txn(cut(txn_batch(pid, epoch, 0), size)),
            vec![t(0, UNKNOWN), t(1, UNKNOWN)],
            "{size} bytes"
        );
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (0, 0));
    // With its base sequence, it is verified (partition 0 is in the transaction), then the log
    // finds it corrupt.
    assert_eq!(
        send_txn(cut(txn_batch(pid, epoch, 0), 57)),
        vec![t(0, CORRUPT), t(1, 0)]
    );
    // Without a producer id, only the id is read.
    assert_eq!(
        send_txn(cut(txn_batch(-1, -1, -1), 51)),
        vec![t(0, CORRUPT), t(1, 0)]
    );
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (0, 2));
    running.shutdown().unwrap();
}
