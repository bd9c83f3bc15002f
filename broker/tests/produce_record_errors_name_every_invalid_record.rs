//! Produce v8+ `record_errors` (KIP-467): Kafka's `LogValidator` checks the timestamp of every
//! record of a batch and answers one `BatchIndexAndErrorMessage` per invalid record
//! (`processRecordErrors`), so the producer fails each bad record with its own
//! InvalidTimestampException and only the others with the generic "part of a batch with invalid
//! records". Listing only the first bad record mislabels the rest. The messages are Kafka's:
//! the partition's `error_message` that of its `InvalidTimestampException`, each record's
//! `validateTimestamp`'s, with the accepted range `[now − before.max.ms, now + after.max.ms]`.

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::produce;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

const NOW: i64 = 1_700_000_000_000;
const INVALID_TIMESTAMP: i16 = 32;

#[test]
fn every_record_with_an_invalid_timestamp_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    // Records 1 and 2 lie 10 hours in the future (past message.timestamp.after.max.ms).
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(NOW), None, Some(b"ok"), &[]);
    bb.append(TimestampMs(NOW + 36_000_000), None, Some(b"bad-1"), &[]);
    bb.append(TimestampMs(NOW + 36_000_000), None, Some(b"bad-2"), &[]);
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(bb.build().into_bytes());
    let mut t = TopicProduceData::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    t.partition_data = vec![pd];
    let mut r = ProduceRequest::default();
    r.acks = 1;
    r.timeout_ms = 30_000;
    r.topic_data = vec![t];

    let resp = produce::handle(&b, r, 9).unwrap();
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, INVALID_TIMESTAMP);
    let named: Vec<i32> = p.record_errors.iter().map(|e| e.batch_index).collect();
    assert_eq!(named, vec![1, 2], "one record error per invalid record");
    assert_eq!(
        p.error_message.as_deref().map(|m| m.to_string()),
        Some("One or more records have been rejected due to invalid timestamp".to_string())
    );
    // `message.timestamp.before.max.ms` is Long.MAX_VALUE, `after` one hour.
    let (from, to) = (NOW - i64::MAX, NOW + 3_600_000);
    let messages: Vec<String> = p
        .record_errors
        .iter()
        .map(|e| e.batch_index_error_message.as_deref().unwrap().to_string())
        .collect();
    assert_eq!(
        messages,
        [1, 2].map(|i| format!(
            "Timestamp {} of message with offset {i} is out of range. \
             The timestamp should be within [{from}, {to}]",
            NOW + 36_000_000
        ))
    );
}
