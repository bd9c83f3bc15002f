//! Kafka's `handleProduceRequest` begins with `RequestUtils.hasTransactionalRecords`, which
//! frames the first batch of every partition in the request (Kafka 4's `RequestUtils.flag`,
//! until the first transactional one). A first batch its iterator finds corrupt (a
//! length below 14, a magic above 2) throws there, so the whole request fails:
//! `ProduceRequest.getErrorResponse` answers every partition `CORRUPT_MESSAGE` with the
//! exception's message, nothing is appended, and with `acks = 0` the connection is closed.
//! mirrorlog failed only that partition (without a message; an unknown topic's as unknown) and
//! appended the others. The same scan decides "transactional records without a transactional
//! id": only a whole v2 first batch counts, so a partial or legacy first batch whose bytes at
//! the v2 attributes' place carry the flag is the partition's `INVALID_RECORD`, where mirrorlog
//! failed the whole request `TRANSACTIONAL_ID_AUTHORIZATION_FAILED`.

use crate::common;

use bytes::Bytes;
use common::produce::{
    answered, batch, request, running_with_partition_0_in_transaction, running_with_topic, send,
    txn_batch,
};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::running::RunningBroker;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const CORRUPT: i16 = ResponseError::CorruptMessage.code();
const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();

/// A plain batch whose length field is `length` (the rest as built).
fn with_length(length: i32) -> Bytes {
    let mut b = batch(b"v").to_vec();
    b[8..12].copy_from_slice(&length.to_be_bytes());
    Bytes::from(b)
}

/// A plain batch of magic `magic`.
fn with_magic(magic: u8) -> Bytes {
    let mut b = batch(b"v").to_vec();
    b[16] = magic;
    Bytes::from(b)
}

fn log_end(running: &RunningBroker, topic: &str, p: i32) -> i64 {
    let h = running.broker.partition(topic, p).unwrap();
    h.read().log_end_offset().get()
}

#[test]
fn a_corrupt_first_batch_fails_every_partition_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    for (corrupt, message) in [
        (
            with_length(13),
            "Record size 13 is less than the minimum record overhead (14)",
        ),
        (with_magic(7), "Invalid magic found in record: 7"),
        (with_magic(0xff), "Invalid magic found in record: -1"),
    ] {
        let r = request(
            1,
            vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(corrupt.clone()))],
        );
        let resp = send(running.addr, 9, &r);
        assert_eq!(
            answered(&resp),
            vec![t(0, CORRUPT), t(1, CORRUPT)],
            "{message}"
        );
        for p in &resp.responses[0].partition_responses {
            assert_eq!(p.error_message.as_deref(), Some(message));
            assert_eq!(
                (p.base_offset, p.log_append_time_ms, p.log_start_offset),
                (-1, -1, -1)
            );
        }
        // Produce v7 has no error_message.
        let resp = send(running.addr, 7, &r);
        assert_eq!(answered(&resp), vec![t(0, CORRUPT), t(1, CORRUPT)]);
    }
    // Named for a topic that does not exist, it fails the request all the same.
    let r = request(
        1,
        vec![
            ("t", 0, Some(batch(b"a"))),
            ("nope", 0, Some(with_length(2))),
        ],
    );
    assert_eq!(
        answered(&send(running.addr, 9, &r)),
        vec![t(0, CORRUPT), ("nope".to_string(), 0, CORRUPT)]
    );
    assert_eq!(
        (log_end(&running, "t", 0), log_end(&running, "t", 1)),
        (0, 0)
    );

    // A corrupt batch after a whole first one is the partition's own error, as before.
    let second = [batch(b"a"), with_length(13)].concat();
    let r = request(
        1,
        vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(second.into()))],
    );
    let resp = send(running.addr, 9, &r);
    assert_eq!(answered(&resp), vec![t(0, 0), t(1, CORRUPT)]);
    assert_eq!(resp.responses[0].partition_responses[1].error_message, None);
    running.shutdown().unwrap();
}

#[test]
fn the_scan_stops_at_the_first_transactional_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (running, pid, epoch) = running_with_partition_0_in_transaction(dir.path());
    // Kafka's scan ends at the transactional batch, so the corrupt one after it reaches
    // `validateRecords`: that partition's error alone, without a message. Kafka 4's scan reads
    // no producer id, so a transactional batch without one ends it too (mirrorlog's scan went on
    // until it had also seen a producer id, and failed the whole request on the corrupt batch).
    for (i, first) in [txn_batch(pid, epoch, 0), txn_batch(-1, -1, -1)]
        .into_iter()
        .enumerate()
    {
        let mut r = request(
            1,
            vec![("t", 0, Some(first)), ("t", 1, Some(with_length(13)))],
        );
        r.transactional_id = Some(StrBytes::from_static_str("tx").into());
        let resp = send(running.addr, 9, &r);
        let t = |p: i32, code: i16| ("t".to_string(), p, code);
        assert_eq!(answered(&resp), vec![t(0, 0), t(1, CORRUPT)], "case {i}");
        assert_eq!(resp.responses[0].partition_responses[1].error_message, None);
        assert_eq!(log_end(&running, "t", 0), i as i64 + 1);
    }
    running.shutdown().unwrap();
}

#[test]
fn only_a_whole_v2_first_batch_makes_a_request_transactional() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    // The transactional flag of a v2 batch cut short, and a magic 1 entry whose timestamp has
    // that bit where a v2 batch keeps its attributes: no transactional records to Kafka.
    let partial = txn_batch(1000, 0, 0).slice(..30);
    let mut legacy = with_magic(1).to_vec();
    legacy[22] |= 0x10;
    for records in [partial, Bytes::from(legacy)] {
        let r = request(
            1,
            vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(records))],
        );
        assert_eq!(
            answered(&send(running.addr, 9, &r)),
            vec![t(0, 0), t(1, INVALID_RECORD)]
        );
    }
    // A whole transactional first batch without a transactional id still fails the request.
    let r = request(
        1,
        vec![
            ("t", 0, Some(batch(b"a"))),
            ("t", 1, Some(txn_batch(1000, 0, 0))),
        ],
    );
    let refused = ResponseError::TransactionalIdAuthorizationFailed.code();
    assert_eq!(
        answered(&send(running.addr, 9, &r)),
        vec![t(0, refused), t(1, refused)]
    );
    assert_eq!(log_end(&running, "t", 0), 2);
    running.shutdown().unwrap();
}

#[test]
fn an_acks0_request_with_a_corrupt_first_batch_appends_nothing_and_closes() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let r = request(
        0,
        vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(with_length(13)))],
    );
    let mut s = TcpStream::connect(running.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&common::wire::frame(ApiKey::Produce, 9, 1, &r))
        .unwrap();
    let mut buf = [0u8; 4];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("connection not closed: {other:?}"),
    }
    assert_eq!(log_end(&running, "t", 0), 0);
    running.shutdown().unwrap();
}
