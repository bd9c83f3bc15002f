//! Scenario: one mirror partition's data path between two engines — byte-identical copies at
//! identical offsets, failover in the middle of a transaction (ABORT + MIRROR_PID_RESET, no
//! partial transaction visible), the review thread's AS30 (a late COMMIT after the stop changes
//! nothing), divergence after an unclean election on the source, a fetch below the source's log
//! start, and a corrupt batch from the source.

use crate::common;

use bytes::Bytes;
use common::log_bytes;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_mirror::partition::{
    FetchOutcome, align_to_last_mirror_epoch, apply_fetched, fetch_position, stop_partition,
};
use mirrorlog_mirror::source::PartitionData;
use mirrorlog_segment::io::PwriteStorage;
use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

struct Side {
    _dir: tempfile::TempDir,
    _mgr: LogManager,
}

fn side(read_only: bool) -> (Side, Arc<PartitionHandle>) {
    let dir = tempfile::tempdir().unwrap();
    let (mgr, _) = LogManager::open(
        LogManagerConfig::new(dir.path()),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(T0),
    )
    .unwrap();
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    let cfg = LogConfig {
        read_only,
        ..LogConfig::default()
    };
    let h = mgr.create(&tp, TopicId([1; 16]), cfg).unwrap();
    (
        Side {
            _dir: dir,
            _mgr: mgr,
        },
        h,
    )
}

fn produce(src: &PartitionHandle, b: Bytes, epoch: i32, origin: LeaderOrigin) {
    let mut log = src.write();
    log.append_as_leader(b, LeaderEpoch(epoch), origin).unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn data(n: usize, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..n {
        b.append(
            TimestampMs(T0 + i as i64),
            Some(b"k"),
            Some(format!("v{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

fn txn(pid: i64, seq: i32, n: usize) -> Bytes {
    let mut b = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(0), Sequence(seq))
        .transactional(true);
    for i in 0..n {
        b.append(
            TimestampMs(T0),
            None,
            Some(format!("t{pid}-{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

fn marker(pid: i64, commit: bool, coordinator_epoch: i32) -> Bytes {
    BatchBuilder::end_txn_marker(
        ProducerId(pid),
        ProducerEpoch(0),
        commit,
        coordinator_epoch,
        TimestampMs(T0),
    )
    .build()
    .into_bytes()
}

/// What a source broker would answer to a fetch from `dest`'s position.
fn fetch(src: &PartitionHandle, dest: &PartitionHandle) -> (Offset, PartitionData) {
    let (offset, last_epoch) = fetch_position(dest);
    let log = src.read();
    let mut d = PartitionData {
        current_leader: None,
        topic: "t".into(),
        partition: 0,
        error: 0,
        high_watermark: log.high_watermark(),
        log_start_offset: log.log_start_offset(),
        diverging_epoch: None,
        records: Bytes::new(),
    };
    if last_epoch.get() >= 0 {
        let (e, end) = log
            .epoch_cache()
            .end_offset_for(last_epoch, log.log_end_offset());
        if end < offset || e < last_epoch {
            d.diverging_epoch = Some((e, end));
            return (offset, d);
        }
    }
    match log.read(offset, 1 << 20, FetchIsolation::HighWatermark, true) {
        Ok(r) => {
            d.records = r
                .records
                .map(|r| r.slice.read_all().unwrap())
                .unwrap_or_default()
        }
        Err(_) => d.error = 1,
    }
    (offset, d)
}

fn sync(src: &PartitionHandle, dest: &PartitionHandle) {
    for _ in 0..100 {
        let (offset, d) = fetch(src, dest);
        match apply_fetched(dest, offset, &d).unwrap() {
            FetchOutcome::Empty { .. } => return,
            FetchOutcome::Appended { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("did not converge");
}

#[test]
fn mirrored_batches_are_byte_identical_at_identical_offsets() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    for (i, codec) in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ]
    .into_iter()
    .enumerate()
    {
        produce(&src, data(10 + i, codec), i as i32, LeaderOrigin::Client);
    }
    produce(&src, txn(7, 0, 3), 5, LeaderOrigin::Client);
    produce(&src, marker(7, true, 3), 5, LeaderOrigin::Coordinator);
    sync(&src, &dest);
    assert_eq!(log_bytes(&dest), log_bytes(&src));
    let (s, d) = (src.read(), dest.read());
    assert_eq!(d.log_end_offset(), s.log_end_offset());
    assert_eq!(
        d.epoch_cache().entries(),
        s.epoch_cache().entries(),
        "epochs follow the source's batches"
    );
    assert_eq!(d.last_stable_offset(), s.last_stable_offset());
}

#[test]
fn failover_mid_transaction_aborts_it_and_forgets_mirrored_producers() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, data(5, Compression::None), 2, LeaderOrigin::Client); // 0..4
    produce(&src, txn(7, 0, 3), 2, LeaderOrigin::Client); // 5..7, left open
    produce(&src, txn(8, 0, 2), 3, LeaderOrigin::Client); // 8..9, left open
    sync(&src, &dest);
    assert_eq!(dest.read().last_stable_offset(), Offset(5));
    let report = stop_partition(&dest, "source-cluster", T0).unwrap();
    assert_eq!(report.last_mirror_epoch, LeaderEpoch(3));
    // Above the leader epoch the fetch bumped the destination to (its highest batch epoch, 3,
    // plus 10) before appending.
    assert_eq!(report.new_leader_epoch, LeaderEpoch(14));
    let mut aborted = report.aborted_producers.clone();
    aborted.sort();
    assert_eq!(aborted, vec![7, 8]);
    let log = dest.read();
    assert_eq!(
        log.producer_state().producer_count(),
        0,
        "MIRROR_PID_RESET forgot every producer"
    );
    assert_eq!(
        log.last_stable_offset(),
        log.log_end_offset(),
        "no open transaction remains"
    );
    let r = log
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, false)
        .unwrap();
    let aborted_list = r.aborted_transactions.unwrap();
    assert_eq!(
        aborted_list.len(),
        2,
        "READ_COMMITTED consumers skip both partial transactions"
    );
    assert!(!log.is_read_only());
    drop(log);
    // Writable for local producers now, at the new epoch, with producer ids that may collide
    // with the source's.
    let local = BatchBuilder::new()
        .producer(ProducerId(7), ProducerEpoch(0), Sequence(0))
        .record(TimestampMs(T0), None, Some(b"local"))
        .build();
    dest.write()
        .append_as_leader(
            local.into_bytes(),
            report.new_leader_epoch,
            LeaderOrigin::Client,
        )
        .unwrap();
}

#[test]
fn a_late_commit_after_the_stop_changes_nothing_as30() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, txn(7, 0, 3), 1, LeaderOrigin::Client);
    sync(&src, &dest);
    stop_partition(&dest, "source-cluster", T0).unwrap();
    let (lso, aborted) = {
        let log = dest.read();
        (
            log.last_stable_offset(),
            log.collect_aborted_txns(Offset(0), log.log_end_offset())
                .unwrap(),
        )
    };
    // The source's coordinator retries its COMMIT for producer 7 after the failover.
    {
        let mut log = dest.write();
        log.append_as_leader(
            marker(7, true, 0),
            LeaderEpoch(2),
            LeaderOrigin::Coordinator,
        )
        .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
    }
    let log = dest.read();
    assert_eq!(log.producer_state().ongoing_txns().count(), 0);
    assert_eq!(
        log.collect_aborted_txns(Offset(0), log.log_end_offset())
            .unwrap(),
        aborted,
        "aborted list unchanged"
    );
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
    assert!(
        log.last_stable_offset() > lso,
        "only the marker itself was added"
    );
    let r = log
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, false)
        .unwrap();
    assert_eq!(
        r.aborted_transactions.unwrap().len(),
        1,
        "READ_COMMITTED still skips the transaction"
    );
}

#[test]
fn divergence_after_an_unclean_election_on_the_source_truncates_and_continues() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    for _ in 0..4 {
        produce(&src, data(5, Compression::None), 1, LeaderOrigin::Client); // 0..19 at epoch 1
    }
    sync(&src, &dest);
    // Unclean election on the source: it loses 10..19 and continues at epoch 2.
    {
        let mut log = src.write();
        log.truncate_to(Offset(10)).unwrap();
        log.assign_leader_epoch(LeaderEpoch(2)).unwrap();
    }
    produce(&src, data(3, Compression::None), 2, LeaderOrigin::Client); // 10..12 at epoch 2
    let (offset, d) = fetch(&src, &dest);
    assert_eq!(offset, Offset(20));
    let out = apply_fetched(&dest, offset, &d).unwrap();
    let FetchOutcome::Diverged {
        truncate_to,
        completed,
        ..
    } = out
    else {
        panic!("{out:?}")
    };
    assert!(completed);
    assert_eq!(truncate_to, Offset(10));
    dest.write().truncate_to(truncate_to).unwrap();
    sync(&src, &dest);
    assert_eq!(log_bytes(&dest), log_bytes(&src));
}

#[test]
fn below_the_source_log_start_the_mirror_starts_over_there() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    for _ in 0..4 {
        produce(&src, data(5, Compression::None), 0, LeaderOrigin::Client);
    }
    src.write()
        .maybe_increment_log_start_offset(Offset(12))
        .unwrap();
    let (offset, d) = fetch(&src, &dest);
    assert_eq!(
        apply_fetched(&dest, offset, &d).unwrap(),
        FetchOutcome::BelowSourceLogStart {
            source_log_start: Offset(12)
        }
    );
    dest.write()
        .truncate_fully_and_start_at(Offset(12))
        .unwrap();
    // From 12 the source serves the batch holding 12 (10..14). As a Kafka follower does, the
    // empty destination restarts its log at that batch's base and takes it whole; its log start
    // then follows the source's.
    let (offset, d) = fetch(&src, &dest);
    assert!(matches!(
        apply_fetched(&dest, offset, &d).unwrap(),
        FetchOutcome::Appended { .. }
    ));
    sync(&src, &dest);
    let log = dest.read();
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset()),
        (Offset(12), Offset(20))
    );
    drop(log);
    // A straddling batch into a non-empty log is a real disagreement.
    let (_d2, dest2) = side(true);
    dest2
        .write()
        .append_as_follower(
            replica_batch(0, 12),
            mirrorlog_engine::log::ReplicaOrigin::Mirror,
        )
        .unwrap();
    let (offset, d) = fetch(&src, &dest2);
    assert_eq!(offset, Offset(12));
    assert!(
        matches!(apply_fetched(&dest2, offset, &d).unwrap(), FetchOutcome::Fatal(m) if m.contains("straddles"))
    );
}

fn replica_batch(base: i64, n: usize) -> Bytes {
    let mut b = BatchBuilder::new().base_offset(Offset(base));
    for _ in 0..n {
        b.append(TimestampMs(T0), None, Some(b"x"), &[]);
    }
    b.build().into_bytes()
}

#[test]
fn a_corrupt_batch_from_the_source_fails_the_partition_and_writes_nothing() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, data(5, Compression::None), 0, LeaderOrigin::Client);
    let (offset, mut d) = fetch(&src, &dest);
    let mut bytes = d.records.to_vec();
    let n = bytes.len();
    bytes[n - 2] ^= 0x40;
    d.records = bytes.into();
    assert!(
        matches!(apply_fetched(&dest, offset, &d).unwrap(), FetchOutcome::Fatal(m) if m.contains("corrupt"))
    );
    assert_eq!(dest.read().log_end_offset(), Offset(0));
}

/// A CRC-valid ABORT marker whose value does not parse (3 bytes; Kafka's needs 6) after good
/// batches: the whole fetch is refused before anything is written (Kafka's follower throws
/// `InvalidRecordException` from its producer-state check, before the segment append), and the
/// partition fails with the reason, instead of a log that recovery would have to cut.
#[test]
fn a_source_marker_that_does_not_parse_fails_the_partition_and_writes_nothing() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, data(5, Compression::None), 0, LeaderOrigin::Client);
    let (offset, mut d) = fetch(&src, &dest);
    let bad = BatchBuilder::control(
        mirrorlog_segment::batch::ControlRecordType::Abort,
        &[0, 0, 0],
        TimestampMs(T0),
    )
    .producer(ProducerId(9), ProducerEpoch(0), Sequence::NONE)
    .transactional(true)
    .base_offset(Offset(5))
    .build()
    .into_bytes();
    let mut bytes = d.records.to_vec();
    bytes.extend_from_slice(&bad);
    d.records = bytes.into();
    d.high_watermark = Offset(6);
    assert!(matches!(apply_fetched(&dest, offset, &d).unwrap(),
            FetchOutcome::Fatal(m) if m.contains("end transaction marker value is 3 bytes")),);
    assert_eq!(dest.read().log_end_offset(), Offset(0));
    assert!(dest.check_online().is_ok());
}

#[test]
fn log_alignment_truncates_to_the_end_of_the_last_mirror_epoch() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, data(5, Compression::None), 3, LeaderOrigin::Client); // 0..4 epoch 3
    sync(&src, &dest);
    let report = stop_partition(&dest, "src", T0).unwrap(); // LME 3, then epoch 14
    assert_eq!(report.new_leader_epoch, LeaderEpoch(14));
    dest.write()
        .append_as_leader(
            data(4, Compression::None),
            report.new_leader_epoch,
            LeaderOrigin::Client,
        )
        .unwrap();
    // Failback: the destination becomes a mirror again of a source whose LME for us is 3.
    let end = align_to_last_mirror_epoch(&dest, report.last_mirror_epoch).unwrap();
    assert_eq!(end, Offset(5), "everything written after the failover goes");
    assert_eq!(
        align_to_last_mirror_epoch(&dest, LeaderEpoch::NONE).unwrap(),
        Offset(0)
    );
}

#[test]
fn a_batch_epoch_above_the_destination_epoch_bumps_it_before_the_append() {
    let (_s, src) = side(false);
    let (_d, dest) = side(true);
    produce(&src, data(3, Compression::None), 4, LeaderOrigin::Client);
    let (offset, d) = fetch(&src, &dest);
    // The destination has no epoch yet; the batch's epoch 4 is above it: bumped to 14 first.
    match apply_fetched(&dest, offset, &d).unwrap() {
        FetchOutcome::Appended { epoch_bump, .. } => assert_eq!(epoch_bump, Some(LeaderEpoch(14))),
        other => panic!("{other:?}"),
    }
    {
        let log = dest.read();
        assert_eq!(log.leader_epoch(), LeaderEpoch(14));
        // The cache keeps the source's epochs, so divergence detection still speaks its language.
        assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(4)));
        assert_eq!(fetch_position(&dest), (Offset(3), LeaderEpoch(4)));
    }
    // Batches well below the bumped epoch append without another bump.
    produce(&src, data(2, Compression::None), 9, LeaderOrigin::Client);
    let (offset, d) = fetch(&src, &dest);
    match apply_fetched(&dest, offset, &d).unwrap() {
        FetchOutcome::Appended { epoch_bump, .. } => assert_eq!(epoch_bump, None),
        other => panic!("{other:?}"),
    }
    // Within 3 of it (proactive): bumped again, before the append.
    produce(&src, data(2, Compression::None), 12, LeaderOrigin::Client);
    let (offset, d) = fetch(&src, &dest);
    match apply_fetched(&dest, offset, &d).unwrap() {
        FetchOutcome::Appended { epoch_bump, .. } => assert_eq!(epoch_bump, Some(LeaderEpoch(22))),
        other => panic!("{other:?}"),
    }
    assert_eq!(log_bytes(&dest), log_bytes(&src));
    // The stop draws its line above the bumped epoch, not just above the mirrored ones.
    let report = stop_partition(&dest, "src", T0).unwrap();
    assert_eq!(report.last_mirror_epoch, LeaderEpoch(12));
    assert_eq!(report.new_leader_epoch, LeaderEpoch(23));
    assert_eq!(dest.read().leader_epoch(), LeaderEpoch(23));
}
