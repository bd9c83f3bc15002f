//! Client appends checked against Kafka's LogValidator (found in review): the header's
//! maxTimestamp is set from the records, a record without a timestamp passes the bounds, a
//! duplicate on a LogAppendTime topic reports the append time, recompression of client bytes
//! with wrapping timestamps does not panic; plus recompression and producer-state rebuild
//! checks that passed.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, LogAppendInfo, Shutdown};
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::{BatchBuilder, BatchHeaderMut, Batches, RecordBatch, TimestampType};

/// A client batch whose records are all at `T0` but whose header claims `forged_max`.
fn forged_max_timestamp_batch(forged_max: i64) -> Bytes {
    let b = BatchBuilder::new()
        .record(TimestampMs(T0), Some(b"k"), Some(b"v"))
        .build()
        .into_bytes();
    let mut buf = bytes::BytesMut::from(&b[..]);
    {
        let mut h = BatchHeaderMut::new(&mut buf).unwrap();
        h.set_max_timestamp(TimestampType::CreateTime, TimestampMs(forged_max));
    }
    let out = buf.freeze();
    RecordBatch::new(out.clone()).unwrap().validate().unwrap();
    out
}

/// Kafka's LogValidator rewrites a CreateTime batch's maxTimestamp with the largest record
/// timestamp (`batch.setMaxTimestamp(timestampType, maxBatchTimestamp)`), so the header can
/// never claim a time the records (which passed the timestamp bounds) do not hold.
#[test]
fn a_forged_header_max_timestamp_is_replaced_by_the_records_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let ten_years = 10 * 365 * 24 * 3600 * 1000i64;
    let info = log
        .append_as_leader(
            forged_max_timestamp_batch(T0 + ten_years),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .expect("Kafka accepts it (and rewrites the max timestamp)");
    let data = log
        .read(info.first_offset, 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let stored: Vec<i64> = Batches::new(data.records.unwrap().slice.read_all().unwrap())
        .map(|b| b.unwrap().max_timestamp().get())
        .collect();
    assert_eq!(
        (info.max_timestamp.get(), stored),
        (T0, vec![T0]),
        "header maxTimestamp must be the records' max (after.max.ms = 1h was bypassed)"
    );
}

/// Kafka skips the timestamp bounds for a record with NO_TIMESTAMP (-1).
#[test]
fn a_record_without_timestamp_passes_the_before_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.timestamp_before_max_ms = 7 * 24 * 3600 * 1000;
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    let r = log.append_as_leader(client_batch(1, -1), LeaderEpoch(0), LeaderOrigin::Client);
    assert!(r.is_ok(), "{r:?}");
}

/// A producer's batch appended, then its retry: the two answers.
fn first_and_retry(c: mirrorlog_engine::config::LogConfig) -> [LogAppendInfo; 2] {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    [(); 2].map(|()| {
        log.append_as_leader(
            producer_batch(7, 0, 0, 2, false, T0 - 5),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap()
    })
}

/// Kafka answers a duplicate with `logAppendTime = duplicate.timestamp`; on a LogAppendTime
/// topic the original answer carried the append time, the retried one must too.
#[test]
fn a_duplicate_on_a_log_append_time_topic_reports_the_append_time() {
    let mut c = small_config();
    c.timestamp_type = TimestampType::LogAppendTime;
    let [first, dup] = first_and_retry(c);
    assert!(dup.duplicate);
    assert_eq!(first.log_append_time, Some(TimestampMs(T0)));
    assert_eq!(dup.log_append_time, first.log_append_time);
}

/// Kafka's `UnifiedLog.append` answers a duplicate with `logAppendTime = duplicate.timestamp`
/// on a CreateTime topic too: the original batch's max timestamp, which the Java producer then
/// reports as each record's timestamp (`FutureRecordMetadata` takes a log append time other
/// than −1 over the record's own). It answered none (−1).
#[test]
fn a_duplicate_on_a_create_time_topic_reports_the_original_max_timestamp() {
    let [first, dup] = first_and_retry(small_config());
    assert!(dup.duplicate);
    assert_eq!(first.log_append_time, None);
    assert_eq!(dup.log_append_time, Some(first.max_timestamp));
}

fn stored_batches(
    log: &mirrorlog_engine::log::PartitionLog,
    from: mirrorlog_index::Offset,
) -> Vec<RecordBatch> {
    let data = log
        .read(from, 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    Batches::new(data.records.unwrap().slice.read_all().unwrap())
        .map(|b| b.unwrap())
        .collect()
}

#[test]
fn recompression_keeps_offsets_timestamps_and_producer_fields() {
    use mirrorlog_engine::config::CompressionConfig;
    use mirrorlog_index::{Offset, ProducerEpoch, ProducerId, Sequence};
    use mirrorlog_segment::Compression;
    for (src, topic, lat) in [
        (Compression::None, CompressionConfig::Gzip, false),
        (Compression::Gzip, CompressionConfig::Uncompressed, false),
        (Compression::Lz4, CompressionConfig::Zstd, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = small_config();
        c.compression = topic;
        if lat {
            c.timestamp_type = TimestampType::LogAppendTime;
        }
        let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
        log.append_as_leader(client_batch(2, T0), LeaderEpoch(3), LeaderOrigin::Client)
            .unwrap();
        let mut b = BatchBuilder::new()
            .compression(src)
            .producer(ProducerId(5), ProducerEpoch(1), Sequence(i32::MAX - 1))
            .transactional(true);
        b.append(TimestampMs(T0 - 2), Some(b"a"), None, &[(b"h", Some(b"x"))]);
        b.append(TimestampMs(T0 - 9), None, Some(b"b"), &[]);
        b.append(TimestampMs(T0 - 1), Some(b"c"), Some(b"c"), &[]);
        let info = log
            .append_as_leader(b.build().into_bytes(), LeaderEpoch(3), LeaderOrigin::Client)
            .unwrap();
        assert_eq!(
            (info.first_offset, info.last_offset),
            (Offset(2), Offset(4))
        );
        let bs = stored_batches(&log, Offset(2));
        let s = bs.iter().find(|b| b.base_offset() == Offset(2)).unwrap();
        s.validate().unwrap();
        assert_eq!(s.partition_leader_epoch(), LeaderEpoch(3));
        assert_eq!(s.producer_id(), ProducerId(5));
        assert_eq!(s.producer_epoch(), ProducerEpoch(1));
        assert_eq!(s.base_sequence(), Sequence(i32::MAX - 1));
        assert_eq!(s.last_sequence(), Sequence(0));
        assert!(s.is_transactional());
        assert_eq!(s.records_count(), 3);
        assert_eq!(s.last_offset(), Offset(4));
        let recs: Vec<_> = s.records().unwrap().map(|r| r.unwrap()).collect();
        let offs: Vec<i64> = recs.iter().map(|r| r.offset.get()).collect();
        assert_eq!(offs, vec![2, 3, 4]);
        if lat {
            assert_eq!(s.timestamp_type(), TimestampType::LogAppendTime);
            assert_eq!(s.max_timestamp().get(), T0);
            assert!(recs.iter().all(|r| r.timestamp.get() == T0));
        } else {
            let ts: Vec<i64> = recs.iter().map(|r| r.timestamp.get()).collect();
            assert_eq!(ts, vec![T0 - 2, T0 - 9, T0 - 1]);
            assert_eq!(s.max_timestamp().get(), T0 - 1);
        }
        assert_eq!(recs[0].headers.len(), 1);
        assert!(recs[0].value.is_none());
        // The retried batch is a duplicate with the original offsets.
        let mut b = BatchBuilder::new()
            .compression(src)
            .producer(ProducerId(5), ProducerEpoch(1), Sequence(i32::MAX - 1))
            .transactional(true);
        b.append(TimestampMs(T0 - 2), Some(b"a"), None, &[(b"h", Some(b"x"))]);
        b.append(TimestampMs(T0 - 9), None, Some(b"b"), &[]);
        b.append(TimestampMs(T0 - 1), Some(b"c"), Some(b"c"), &[]);
        let dup = log
            .append_as_leader(b.build().into_bytes(), LeaderEpoch(3), LeaderOrigin::Client)
            .unwrap();
        assert!(dup.duplicate);
        assert_eq!((dup.first_offset, dup.last_offset), (Offset(2), Offset(4)));
        // The wrapped sequence continues at 1.
        let next = log
            .append_as_leader(
                producer_batch(5, 1, 1, 1, true, T0),
                LeaderEpoch(3),
                LeaderOrigin::Client,
            )
            .unwrap();
        assert_eq!(next.first_offset, Offset(5));
    }
}

fn summary(log: &mirrorlog_engine::log::PartitionLog) -> Vec<String> {
    let mut v: Vec<String> = log
        .producer_state()
        .producers()
        .map(|e| {
            format!(
                "{:?} ep={:?} ce={} txn={:?} lastseq={:?} lastoff={:?} ts={:?}",
                e.producer_id,
                e.producer_epoch,
                e.coordinator_epoch,
                e.current_txn_first_offset,
                e.last_seq(),
                e.last_data_offset(),
                e.last_timestamp
            )
        })
        .collect();
    v.sort();
    let mut t: Vec<String> = log
        .producer_state()
        .ongoing_txns()
        .map(|t| format!("{t:?}"))
        .collect();
    t.sort();
    v.extend(t);
    v.push(format!(
        "lso-ish first_unstable={:?}",
        log.producer_state().first_unstable_offset()
    ));
    v
}

#[test]
fn restart_and_truncation_rebuild_the_same_producer_state() {
    use mirrorlog_engine::log::OpenOffsets;
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut log = open(dir.path(), small_config(), clk.clone(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    let mut seqs = [0i32; 4];
    let mut epochs = [0i16; 4];
    let mut open_txn = [false; 4];
    for round in 0..400 {
        let p = round % 4;
        let pid = 100 + p as i64;
        let txn = p % 2 == 0;
        if txn && open_txn[p] && round % 3 == 0 {
            log.append_as_leader(
                marker(pid, epochs[p], round % 2 == 0, T0 + round as i64),
                e,
                LeaderOrigin::Coordinator,
            )
            .unwrap();
            open_txn[p] = false;
            continue;
        }
        if !txn && round % 11 == 0 {
            epochs[p] += 1;
            seqs[p] = 0;
        }
        log.append_as_leader(
            producer_batch(
                pid,
                epochs[p],
                seqs[p],
                1 + round % 3,
                txn,
                T0 + round as i64,
            ),
            e,
            LeaderOrigin::Client,
        )
        .unwrap();
        seqs[p] += 1 + (round % 3) as i32;
        if txn {
            open_txn[p] = true;
        }
    }
    // A marker for a producer this partition never saw.
    log.append_as_leader(
        marker(999, 4, false, T0 + 100),
        e,
        LeaderOrigin::Coordinator,
    )
    .unwrap();
    let hw = log.log_end_offset();
    log.update_high_watermark(hw);
    let before = summary(&log);
    assert!(log.segment_count() > 2);
    let leo = log.log_end_offset();
    log.close().unwrap();
    let offs = OpenOffsets {
        log_start_offset: mirrorlog_index::Offset(0),
        recovery_point: mirrorlog_index::Offset(0),
        high_watermark: hw,
    };
    let log2 = open_with(
        std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        dir.path(),
        small_config(),
        clk.clone(),
        Shutdown::Clean,
        offs,
    );
    assert_eq!(summary(&log2), before, "clean restart");
    drop(log2);
    let (log3, _) = reopen_unclean(dir.path(), clk.clone(), offs);
    assert_eq!(log3.log_end_offset(), leo);
    assert_eq!(summary(&log3), before, "unclean restart");
    // Truncate into the middle and compare with a log that only ever had that prefix.
    let mut log3 = log3;
    let cut = mirrorlog_index::Offset(leo.get() / 2);
    log3.truncate_to(cut).unwrap();
    let after_trunc = summary(&log3);
    log3.close().unwrap();
    let log4 = open(dir.path(), small_config(), clk.clone(), Shutdown::Clean);
    assert_eq!(summary(&log4), after_trunc, "restart after truncation");
}

/// LogAppendTime topic that recompresses: the record timestamps are never bounded, and the
/// re-encoding subtracts them (`ts - base_ts`) in the builder.
#[test]
fn recompressing_wrapped_record_timestamps_does_not_panic() {
    use mirrorlog_engine::config::CompressionConfig;
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.compression = CompressionConfig::Gzip;
    c.timestamp_type = TimestampType::LogAppendTime;
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    let b = BatchBuilder::new()
        .record(TimestampMs(0), None, Some(b"a"))
        .record(TimestampMs(5), None, Some(b"b"))
        .build()
        .into_bytes();
    let mut buf = bytes::BytesMut::from(&b[..]);
    buf[27..35].copy_from_slice(&i64::MAX.to_be_bytes()); // baseTimestamp
    BatchHeaderMut::new(&mut buf).unwrap().update_crc();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        log.append_as_leader(buf.freeze(), LeaderEpoch(0), LeaderOrigin::Client)
    }));
    assert!(r.is_ok(), "a client's bytes panicked the append");
}

/// Consequence of the unchecked header maxTimestamp: one forged batch pins time retention.
#[test]
fn a_forged_max_timestamp_does_not_pin_time_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.retention_ms = 60_000;
    let mut log = open(dir.path(), c, clk.clone(), Shutdown::Clean);
    let ten_years = 10 * 365 * 24 * 3600 * 1000i64;
    log.append_as_leader(
        forged_max_timestamp_batch(T0 + ten_years),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    for _ in 0..200 {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let segs = log.segment_count();
    assert!(segs > 3);
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    clk.advance(24 * 3600 * 1000);
    let deleted = log.delete_old_segments().unwrap();
    assert_eq!(
        deleted, segs,
        "records are a day old, retention is a minute: every segment goes, the active one rolled"
    );
}
