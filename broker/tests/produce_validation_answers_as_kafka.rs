//! Three client batches mirrorlog answered otherwise than Kafka's `LogValidator` and
//! `UnifiedLog.append` (Produce v9, over the wire):
//! - records whose offset deltas are not 0, 1, 2, … under a consistent header were refused
//!   `INVALID_RECORD`; Kafka takes them (in place uncompressed, rebuilt compressed);
//! - a batch flagged LogAppendTime was refused `INVALID_RECORD`; on a LogAppendTime topic Kafka
//!   answers `INVALID_TIMESTAMP` with one record error per record, in `validateTimestamp`'s
//!   words naming the record as its iterator prints it;
//! - a duplicate on a CreateTime topic was answered `log_append_time_ms` −1; Kafka answers the
//!   original batch's max timestamp, which the Java producer reports as each record's timestamp.

use crate::common;

use bytes::{Bytes, BytesMut};
use common::produce::{request, send};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::batch::field;
use mirrorlog_segment::{BatchBuilder, BatchHeaderMut, TimestampType};

const T: i64 = 1_700_000_000_000;

fn broker_with_topic(dir: &std::path::Path, config: LogConfig) -> RunningBroker {
    let running = RunningBroker::start_local(dir, 1).unwrap();
    let b = &running.broker;
    b.topics.create(&b.logs, "t", 1, config, None).unwrap();
    running
}

fn produce(running: &RunningBroker, records: Bytes) -> PartitionProduceResponse {
    let resp = send(running.addr, 9, &request(1, vec![("t", 0, Some(records))]));
    resp.responses[0].partition_responses[0].clone()
}

/// Three records at deltas 0, 3 and 7 and `timestamps` under a header saying 3 records,
/// `lastOffsetDelta` 2.
fn gapped_batch(timestamps: [i64; 3]) -> Bytes {
    let mut b = BatchBuilder::new();
    for (delta, ts) in [0, 3, 7].into_iter().zip(timestamps) {
        b.append_at(Offset(delta), TimestampMs(ts), None, Some(b"v"), &[]);
    }
    let mut buf = BytesMut::from(&b.build().into_bytes()[..]);
    buf[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]
        .copy_from_slice(&2i32.to_be_bytes());
    BatchHeaderMut::new(&mut buf).unwrap().update_crc();
    buf.freeze()
}

#[test]
fn records_with_gapped_offset_deltas_are_taken() {
    let dir = tempfile::tempdir().unwrap();
    let running = broker_with_topic(dir.path(), LogConfig::default());
    let p = produce(&running, gapped_batch([T; 3]));
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let p = produce(&running, common::produce::batch(b"next"));
    assert_eq!((p.error_code, p.base_offset), (0, 3));
    // A record out of the timestamp bounds is named by its index and, in the message, by its
    // offset in the batch (Kafka's `record.offset()`), here not its index.
    // Ten hours after the broker's (system) clock, past `message.timestamp.after.max.ms`.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let far = now + 36_000_000;
    let p = produce(&running, gapped_batch([T, far, T]));
    assert_eq!(p.error_code, ResponseError::InvalidTimestamp.code());
    let e = &p.record_errors[..];
    assert_eq!((e.len(), e[0].batch_index), (1, 1));
    let m = e[0]
        .batch_index_error_message
        .as_deref()
        .unwrap()
        .to_string();
    assert!(
        m.starts_with(&format!(
            "Timestamp {far} of message with offset 3 is out of range."
        )),
        "{m}"
    );
}

#[test]
fn a_batch_flagged_log_append_time_names_every_record_on_a_log_append_time_topic() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let running = broker_with_topic(dir.path(), config);
    let mut b = BatchBuilder::new().log_append_time(TimestampMs(T + 5));
    b.append(TimestampMs(T), Some(b"key"), Some(b"value"), &[]);
    b.append(TimestampMs(T), None, None, &[]);
    let p = produce(&running, b.build().into_bytes());
    assert_eq!(p.error_code, ResponseError::InvalidTimestamp.code());
    assert_eq!(
        p.error_message.as_deref().map(|m| m.to_string()),
        Some("One or more records have been rejected due to invalid timestamp".to_string())
    );
    let errors: Vec<(i32, String)> = p
        .record_errors
        .iter()
        .map(|e| {
            let m = e.batch_index_error_message.as_deref().unwrap().to_string();
            (e.batch_index, m)
        })
        .collect();
    let message = |offset, key, value| {
        format!(
            "Invalid timestamp type in message DefaultRecord(offset={offset}, timestamp={}, \
             key={key} bytes, value={value} bytes). Producer should not set timestamp type to \
             LogAppendTime.",
            T + 5
        )
    };
    assert_eq!(errors, vec![(0, message(0, 3, 5)), (1, message(1, 0, 0))]);
}

#[test]
fn a_duplicate_on_a_create_time_topic_answers_the_original_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let running = broker_with_topic(dir.path(), LogConfig::default());
    let batch = || {
        let mut b = BatchBuilder::new().producer(ProducerId(9), ProducerEpoch(0), Sequence(0));
        b.append(TimestampMs(T - 7), None, Some(b"a"), &[]);
        b.append(TimestampMs(T - 3), None, Some(b"b"), &[]);
        b.build().into_bytes()
    };
    let first = produce(&running, batch());
    assert_eq!((first.error_code, first.log_append_time_ms), (0, -1));
    let dup = produce(&running, batch());
    assert_eq!(
        (dup.error_code, dup.base_offset, dup.log_append_time_ms),
        (0, 0, T - 3)
    );
}
