//! A client batch flagged LogAppendTime was refused `INVALID_RECORD`. Kafka's `LogValidator`
//! reads each of its records at the header's max timestamp (`DefaultRecordBatch`'s iterator)
//! and `validateTimestamp` then: on a CreateTime topic checks that time against the bounds and
//! the append clears the flag (`setMaxTimestamp(CREATE_TIME, max)`, or the rebuild writes each
//! record at that time); on a LogAppendTime topic, or with no max timestamp (−1), refuses every
//! record with `INVALID_TIMESTAMP`, one record error each.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::config::CompressionConfig;
use mirrorlog_engine::error::{EngineError, FlaggedRecord};
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::{BatchBuilder, Batches, Compression, RecordBatch, TimestampType};

/// Three records at `T0 − 100`, `T0 − 50` and `T0 − 60` (the second without a key, the third
/// without a value), flagged LogAppendTime at `max`.
fn flagged_batch(codec: Compression, max: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .compression(codec)
        .log_append_time(TimestampMs(max));
    b.append(TimestampMs(T0 - 100), Some(b"k0"), Some(b"v0"), &[]);
    b.append(TimestampMs(T0 - 50), None, Some(b"value"), &[]);
    b.append(TimestampMs(T0 - 60), Some(b"key2"), None, &[]);
    b.build().into_bytes()
}

fn config(ts: TimestampType, topic: CompressionConfig) -> mirrorlog_engine::config::LogConfig {
    let mut c = small_config();
    c.timestamp_type = ts;
    c.compression = topic;
    c
}

fn stored(log: &mirrorlog_engine::log::PartitionLog) -> RecordBatch {
    let data = log
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let b = Batches::new(data.records.unwrap().slice.read_all().unwrap())
        .next()
        .unwrap()
        .unwrap();
    b.validate().unwrap();
    b
}

fn timestamps(b: &RecordBatch) -> Vec<i64> {
    b.records()
        .unwrap()
        .map(|r| r.unwrap().timestamp.get())
        .collect()
}

#[test]
fn on_a_create_time_topic_it_is_taken_with_the_flag_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(TimestampType::CreateTime, CompressionConfig::Producer);
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    let info = log
        .append_as_leader(
            flagged_batch(Compression::None, T0 - 5),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .expect("Kafka accepts it: its records read as T0 − 5, within the bounds");
    assert_eq!(info.max_timestamp, TimestampMs(T0 - 5));
    assert_eq!(info.log_append_time, None);
    let b = stored(&log);
    assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(b.max_timestamp(), TimestampMs(T0 - 5));
    // In place: the records keep their own deltas, which now count.
    assert_eq!(timestamps(&b), vec![T0 - 100, T0 - 50, T0 - 60]);
}

#[test]
fn rebuilt_for_its_topic_each_record_takes_the_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(TimestampType::CreateTime, CompressionConfig::Uncompressed);
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    log.append_as_leader(
        flagged_batch(Compression::Gzip, T0 - 5),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    let b = stored(&log);
    assert_eq!(b.compression().unwrap(), Compression::None);
    assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(timestamps(&b), vec![T0 - 5; 3]);
}

#[test]
fn on_a_create_time_topic_its_max_timestamp_is_checked_for_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(TimestampType::CreateTime, CompressionConfig::Producer);
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    let ten_hours = 36_000_000;
    match log.append_as_leader(
        flagged_batch(Compression::None, T0 + ten_hours),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    ) {
        Err(EngineError::InvalidTimestamp { invalid, .. }) => {
            let got: Vec<(u32, i32, i64)> = invalid
                .iter()
                .map(|r| (r.index, r.offset_delta, r.timestamp))
                .collect();
            assert_eq!(
                got,
                (0..3)
                    .map(|i| (i, i as i32, T0 + ten_hours))
                    .collect::<Vec<_>>()
            );
        }
        other => panic!("{other:?}"),
    }
}

fn flagged_records() -> Vec<FlaggedRecord> {
    [(2, 2), (-1, 5), (4, -1)]
        .into_iter()
        .enumerate()
        .map(|(i, (key_bytes, value_bytes))| FlaggedRecord {
            offset_delta: i as i32,
            key_bytes,
            value_bytes,
        })
        .collect()
}

#[test]
fn on_a_log_append_time_topic_every_record_is_refused() {
    // (batch codec, topic codec, whether Kafka walks it with its key-skipping iterator)
    for (codec, topic, partial) in [
        (Compression::None, CompressionConfig::Producer, false),
        (Compression::Gzip, CompressionConfig::Producer, true),
        (Compression::Gzip, CompressionConfig::Gzip, true),
        (Compression::Gzip, CompressionConfig::Uncompressed, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let c = config(TimestampType::LogAppendTime, topic);
        let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
        match log.append_as_leader(
            flagged_batch(codec, T0 - 5),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        ) {
            Err(EngineError::LogAppendTimeSet {
                timestamp,
                records,
                partial: p,
            }) => {
                assert_eq!(
                    (timestamp, records, p),
                    (T0 - 5, flagged_records(), partial),
                    "{codec:?} {topic:?}"
                );
            }
            other => panic!("{codec:?} {topic:?}: {other:?}"),
        }
        assert_eq!(log.log_end_offset(), Offset(0));
    }
}

#[test]
fn without_a_max_timestamp_every_record_is_refused_on_a_create_time_topic() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(TimestampType::CreateTime, CompressionConfig::Producer);
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    let r = log.append_as_leader(
        flagged_batch(Compression::None, -1),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    );
    assert!(
        matches!(&r, Err(EngineError::LogAppendTimeSet { timestamp: -1, records, partial: false })
            if *records == flagged_records()),
        "{r:?}"
    );
}
