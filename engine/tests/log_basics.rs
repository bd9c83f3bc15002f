//! Scenario: a partition log's everyday life — leader and follower appends, rolls, reads, offset
//! lookups, high watermark and LSO, truncation, retention, clean and unclean reopen.

use crate::common;

use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OffsetLookup, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, TimestampMs};
use mirrorlog_segment::Compression;

#[test]
fn leader_appends_assign_offsets_and_roll_segments() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..60 {
        let info = log
            .append_as_leader(
                client_batch(5, T0 + i),
                LeaderEpoch(3),
                LeaderOrigin::Client,
            )
            .unwrap();
        assert_eq!(info.first_offset, Offset(i * 5));
        assert_eq!(info.last_offset, Offset(i * 5 + 4));
    }
    assert_eq!(log.log_end_offset(), Offset(300));
    assert!(log.segment_count() > 1, "4 KiB segments must have rolled");
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(3)));
    let vals = values(&log, Offset(0));
    assert_eq!(vals.len(), 300);
    assert_eq!(vals[7], (7, "v2".to_string()));
    // Bounded by the high watermark.
    log.update_high_watermark(Offset(100));
    let r = log
        .read(Offset(95), 1 << 20, FetchIsolation::HighWatermark, false)
        .unwrap();
    let bytes = r.records.unwrap().slice.read_all().unwrap();
    let last = mirrorlog_segment::batch::Batches::new(bytes)
        .map(|b| b.unwrap().last_offset())
        .last()
        .unwrap();
    assert_eq!(last, Offset(99));
    assert!(
        log.read(Offset(100), 1 << 20, FetchIsolation::HighWatermark, false)
            .unwrap()
            .records
            .is_none()
    );
    assert!(matches!(
        log.read(Offset(301), 1, FetchIsolation::LogEnd, false),
        Err(EngineError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn client_batches_that_kafka_refuses_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let nonzero = replica_batch(5, 2, 0, Compression::None, T0);
    assert!(matches!(
        log.append_as_leader(nonzero, LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::InvalidRecord(_))
    ));
    let control = marker(1, 0, true, T0);
    assert!(matches!(
        log.append_as_leader(control, LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::InvalidRecord(_))
    ));
    let mut corrupt = client_batch(2, T0).to_vec();
    let n = corrupt.len();
    corrupt[n - 3] ^= 1;
    assert!(matches!(
        log.append_as_leader(corrupt.into(), LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::Corrupt(_))
    ));
    let future = client_batch(1, T0 + 2 * 3_600_000);
    assert!(matches!(
        log.append_as_leader(future, LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::InvalidTimestamp { .. })
    ));
    let mut cfg = small_config();
    cfg.max_message_bytes = 100;
    log.update_config(cfg).unwrap();
    assert!(matches!(
        log.append_as_leader(client_batch(20, T0), LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::RecordTooLarge { .. })
    ));
    assert_eq!(log.log_end_offset(), Offset(0));
}

#[test]
fn a_read_only_partition_refuses_clients_and_txn_markers_but_takes_mirror_and_coordinator_appends()
{
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = small_config();
    cfg.read_only = true;
    let mut log = open(dir.path(), cfg, clock(), Shutdown::Clean);
    assert!(matches!(
        log.append_as_leader(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::ReadOnly(_))
    ));
    log.append_as_follower(
        replica_batch(0, 3, 7, Compression::Zstd, T0),
        ReplicaOrigin::Mirror,
    )
    .unwrap();
    let reset = mirrorlog_segment::BatchBuilder::mirror_pid_reset(Some("src"), TimestampMs(T0))
        .build()
        .into_bytes();
    log.append_as_leader(reset, LeaderEpoch(8), LeaderOrigin::Coordinator)
        .unwrap();
    assert_eq!(log.log_end_offset(), Offset(4));
    // The transaction coordinator's markers are not the mirror's: refused like a client.
    let marker = mirrorlog_segment::BatchBuilder::end_txn_marker(
        ProducerId(9),
        ProducerEpoch(0),
        false,
        0,
        TimestampMs(T0),
    )
    .build()
    .into_bytes();
    assert!(matches!(
        log.append_as_leader(marker, LeaderEpoch(8), LeaderOrigin::TxnMarker),
        Err(EngineError::ReadOnly(_))
    ));
    assert_eq!(log.log_end_offset(), Offset(4));
    log.set_read_only(false);
    log.append_as_leader(client_batch(1, T0), LeaderEpoch(8), LeaderOrigin::Client)
        .unwrap();
}

#[test]
fn follower_appends_keep_offsets_bytes_and_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let mut all = vec![];
    let mut off = 0;
    for (i, codec) in [
        Compression::None,
        Compression::Gzip,
        Compression::Lz4,
        Compression::Snappy,
        Compression::Zstd,
    ]
    .iter()
    .cycle()
    .take(40)
    .enumerate()
    {
        let b = replica_batch(off, 4, (i / 10) as i32, *codec, T0);
        all.extend_from_slice(&b);
        off += 4;
    }
    // One call with everything: the log rolls as often as it needs to.
    let info = log
        .append_as_follower(all.clone().into(), ReplicaOrigin::Replication)
        .unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset, info.batch_count),
        (Offset(0), Offset(159), 40)
    );
    assert!(log.segment_count() > 1);
    // The bytes read back are exactly the bytes appended.
    let mut read = vec![];
    let mut at = Offset(0);
    while at < log.log_end_offset() {
        let d = log
            .read(at, 1 << 20, FetchIsolation::LogEnd, true)
            .unwrap()
            .records
            .unwrap();
        let bytes = d.slice.read_all().unwrap();
        at = mirrorlog_segment::batch::Batches::new(bytes.clone())
            .map(|b| b.unwrap().next_offset())
            .last()
            .unwrap();
        read.extend_from_slice(&bytes);
    }
    assert_eq!(read, all);
    let entries: Vec<(i32, i64)> = log
        .epoch_cache()
        .entries()
        .iter()
        .map(|e| (e.epoch.get(), e.start_offset.get()))
        .collect();
    assert_eq!(entries, vec![(0, 0), (1, 40), (2, 80), (3, 120)]);
    // A gap-free continuation is required to start at or after the log end.
    let again = replica_batch(150, 1, 3, Compression::None, T0);
    assert!(matches!(
        log.append_as_follower(again, ReplicaOrigin::Mirror),
        Err(EngineError::UnexpectedAppendOffset { .. })
    ));
}

#[test]
fn offsets_by_timestamp_earliest_latest_and_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    for i in 0..30 {
        log.append_as_follower(
            replica_batch(i * 3, 3, 0, Compression::None, T0 + i * 100),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.update_high_watermark(Offset(90));
    let get = |l| {
        log.fetch_offset(l)
            .unwrap()
            .map(|(o, ts, _)| (o.get(), ts.get()))
    };
    assert_eq!(get(OffsetLookup::Earliest), Some((0, -1)));
    assert_eq!(
        get(OffsetLookup::Latest(FetchIsolation::HighWatermark)),
        Some((90, -1))
    );
    assert_eq!(
        get(OffsetLookup::Timestamp(TimestampMs(T0 + 1001))),
        Some((31, T0 + 1001))
    );
    assert_eq!(
        get(OffsetLookup::Timestamp(TimestampMs(T0 + 1003))),
        Some((33, T0 + 1100))
    );
    assert_eq!(get(OffsetLookup::Timestamp(TimestampMs(T0 + 99_999))), None);
    assert_eq!(get(OffsetLookup::MaxTimestamp), Some((89, T0 + 2902)));
}

#[test]
fn truncation_removes_whole_batches_and_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    for i in 0..150 {
        log.append_as_follower(
            replica_batch(i * 4, 4, (i / 10) as i32, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.update_high_watermark(Offset(600));
    let segs = log.segment_count();
    assert!(segs > 2);
    // Into an early segment, mid-batch: the batch 40..43 goes whole.
    log.truncate_to(Offset(42)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(40));
    assert_eq!(log.high_watermark(), Offset(40));
    assert!(log.segment_count() < segs);
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(0)));
    assert_eq!(values(&log, Offset(0)).len(), 40);
    log.append_as_follower(
        replica_batch(40, 2, 9, Compression::None, T0),
        ReplicaOrigin::Replication,
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), Offset(42));
    // Below the first segment: start over there.
    log.truncate_fully_and_start_at(Offset(1000)).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.segment_count()
        ),
        (Offset(1000), Offset(1000), 1)
    );
    assert!(log.epoch_cache().is_empty());
}

/// A group commit takes its flush point, syncs outside the log lock, then marks the point. A
/// truncation and re-append of the same offsets in between rewrote bytes the sync may have
/// missed, so the mark must not lift the recovery point over them (a crash would then trust
/// unsynced bytes). Without the truncation the mark lands.
#[test]
fn a_truncation_between_flush_point_and_mark_voids_the_mark() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default(), clock(), Shutdown::Clean);
    let append = |log: &mut mirrorlog_engine::log::PartitionLog, base: i64, epoch: i32| {
        log.append_as_follower(
            replica_batch(base, 4, epoch, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    };
    for i in 0..10 {
        append(&mut log, i * 4, 0);
    }
    let point = log.flush_point(log.log_end_offset());
    assert_eq!(point.offset(), Offset(40));
    // Meanwhile (the sync is running): truncated and written again, unsynced.
    log.truncate_to(Offset(20)).unwrap();
    assert_eq!(log.recovery_point(), Offset(0));
    for i in 5..10 {
        append(&mut log, i * 4, 1);
    }
    assert_eq!(log.log_end_offset(), Offset(40));
    log.mark_flushed(point);
    assert_eq!(
        log.recovery_point(),
        Offset(0),
        "a point taken before a truncation moved the recovery point"
    );
    // A point taken after the truncation marks as before.
    let point = log.flush_point(Offset(36));
    log.mark_flushed(point);
    assert_eq!(log.recovery_point(), Offset(36));
    // Never beyond the log end, never backwards.
    log.mark_flushed(log.flush_point(Offset(99)));
    assert_eq!(log.recovery_point(), Offset(40));
    let stale = log.flush_point(Offset(8));
    log.mark_flushed(stale);
    assert_eq!(log.recovery_point(), Offset(40));
}

#[test]
fn retention_and_delete_records_move_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut cfg = small_config();
    cfg.retention_bytes = 6000;
    let mut log = open(dir.path(), cfg, clock.clone(), Shutdown::Clean);
    for i in 0..100 {
        log.append_as_follower(
            replica_batch(i * 4, 4, 0, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.update_high_watermark(Offset(400));
    let before = log.size_bytes();
    let deleted = log.delete_old_segments().unwrap();
    assert!(
        deleted > 0,
        "{before} bytes in {} segments",
        log.segment_count()
    );
    assert!(log.size_bytes() <= 6000 + 4096);
    assert!(log.log_start_offset() > Offset(0));
    assert_eq!(log.log_start_offset(), log.segment_base_offsets()[0]);
    // DeleteRecords: never beyond the high watermark.
    assert!(log.maybe_increment_log_start_offset(Offset(401)).is_err());
    log.maybe_increment_log_start_offset(Offset(390)).unwrap();
    assert_eq!(log.log_start_offset(), Offset(390));
    assert!(matches!(
        log.read(Offset(389), 100, FetchIsolation::LogEnd, false),
        Err(EngineError::OffsetOutOfRange { .. })
    ));
    assert_eq!(values(&log, Offset(390)).len(), 10);
}

#[test]
fn a_clean_reopen_trusts_the_files_and_an_unclean_one_rebuilds_them() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..40 {
        log.append_as_leader(
            producer_batch(7, 0, i * 2, 2, false, T0),
            LeaderEpoch(1),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    log.close().unwrap();
    let log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    assert_eq!(log.log_end_offset(), Offset(80));
    assert_eq!(
        log.producer_state()
            .entry(mirrorlog_index::ProducerId(7))
            .unwrap()
            .last_seq()
            .get(),
        79
    );
    drop(log);
    let (log, report) = mirrorlog_engine::log::PartitionLog::open(
        std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        dir.path(),
        "t-0",
        small_config(),
        clock,
        Shutdown::Unclean,
        Default::default(),
    )
    .unwrap();
    assert_eq!(report.segments_recovered, report.segments);
    assert_eq!(log.log_end_offset(), Offset(80));
    assert_eq!(
        log.producer_state()
            .entry(mirrorlog_index::ProducerId(7))
            .unwrap()
            .last_seq()
            .get(),
        79
    );
    assert_eq!(values(&log, Offset(0)).len(), 80);
}

#[test]
fn the_leader_epoch_is_raised_apart_from_the_cache_and_never_lowered() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    assert_eq!(log.leader_epoch(), LeaderEpoch::NONE, "a new log has none");
    // Mirrored batches carry the source's epochs; the cache keeps them.
    log.append_as_follower(
        replica_batch(0, 5, 4, Compression::None, T0),
        ReplicaOrigin::Mirror,
    )
    .unwrap();
    assert_eq!(log.leader_epoch(), LeaderEpoch(4), "the cache's latest");
    // A mirror's bump raises the leader epoch and leaves the cache alone.
    assert_eq!(log.raise_leader_epoch(LeaderEpoch(14)), LeaderEpoch(14));
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(4)));
    assert_eq!(
        log.raise_leader_epoch(LeaderEpoch(9)),
        LeaderEpoch(14),
        "never lowered"
    );
    // Batches below it append with their own epochs; one above it shows through.
    log.append_as_follower(
        replica_batch(5, 5, 6, Compression::None, T0),
        ReplicaOrigin::Mirror,
    )
    .unwrap();
    assert_eq!(log.leader_epoch(), LeaderEpoch(14));
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(6)));
    log.append_as_follower(
        replica_batch(10, 5, 20, Compression::None, T0),
        ReplicaOrigin::Mirror,
    )
    .unwrap();
    assert_eq!(log.leader_epoch(), LeaderEpoch(20));
    // Truncations trim the cache but keep the leader epoch (the controller's, not the data's).
    log.truncate_to(Offset(5)).unwrap();
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(4)));
    assert_eq!(log.leader_epoch(), LeaderEpoch(20));
    log.truncate_fully_and_start_at(Offset(0)).unwrap();
    assert_eq!(log.epoch_cache().latest_epoch(), None);
    assert_eq!(log.leader_epoch(), LeaderEpoch(20));
}
