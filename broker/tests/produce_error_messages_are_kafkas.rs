//! Produce v8+ `error_message` as Kafka answers it. Kafka's `LogAppendResult.errorMessage` is
//! set only for a `RecordValidationException` (invalid timestamps: see
//! `produce_record_errors_name_every_invalid_record.rs`) and for the transaction-verification
//! errors `ReplicaManager` translates ("Partition was not added to the transaction", "Unable to
//! verify …"); the per-partition errors of `KafkaApis` (unknown topic, `validateRecords`) and
//! of the log (`INVALID_RECORD`, …) carry none, and a whole-request error carries its
//! exception's message unless that is the error's default (see
//! `produce_of_two_transactional_producers_is_refused.rs`). mirrorlog answered a message for
//! every error, its own wording.

use crate::common;

use bytes::Bytes;
use common::produce::{batch, request, running_with_topic, send, txn_batch, with_control_bit};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::ProduceResponse;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::client::Client;

/// Every answered partition as `(partition, error code, error message)`.
fn answers(resp: &ProduceResponse) -> Vec<(i32, i16, Option<String>)> {
    resp.responses
        .iter()
        .flat_map(|t| &t.partition_responses)
        .map(|p| {
            (
                p.index,
                p.error_code,
                p.error_message.as_deref().map(|m| m.to_string()),
            )
        })
        .collect()
}

#[test]
fn only_the_errors_kafka_explains_carry_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 3);
    let mut c = Client::connect(&running.addr.to_string()).unwrap();
    let code = |e: ResponseError| e.code();

    // Log and request-level refusals: no message.
    let r = request(
        1,
        vec![
            ("t", 0, Some(with_control_bit(batch(b"v")))),
            ("t", 1, Some(Bytes::from_static(&[0; 5]))),
            ("t", 7, Some(batch(b"v"))),
            ("t", 2, Some(batch(b"v"))),
        ],
    );
    assert_eq!(
        answers(&send(running.addr, 9, &r)),
        vec![
            (0, code(ResponseError::InvalidRecord), None),
            (1, code(ResponseError::InvalidRecord), None),
            (7, code(ResponseError::UnknownTopicOrPartition), None),
            (2, 0, None),
        ]
    );

    // Verification: INVALID_TXN_STATE with ReplicaManager's message before v11, the
    // coordinator's TRANSACTION_ABORTABLE as it is from v11.
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    let mut r = request(1, vec![("t", 0, Some(txn_batch(pid, epoch, 0)))]);
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    assert_eq!(
        answers(&send(running.addr, 10, &r)),
        vec![(
            0,
            code(ResponseError::InvalidTxnState),
            Some("Partition was not added to the transaction".to_string())
        )]
    );
    assert_eq!(
        answers(&send(running.addr, 11, &r)),
        vec![(0, code(ResponseError::TransactionAbortable), None)]
    );

    running.shutdown().unwrap();
}
