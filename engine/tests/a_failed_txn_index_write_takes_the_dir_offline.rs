//! A failed write of an aborted transaction's `.txnindex` entry — a full disk included — is a
//! storage failure of the data directory, as in Kafka (`UnifiedLog.append` turns the
//! `IOException` of `LogSegment.updateTxnIndex` into a log-dir failure): the entry is written
//! after the ABORT marker is in the segment, so the log and its index no longer agree.
//!
//! The entry was written with `std::fs`, and running out of space there came back as an index
//! error the manager let pass like a full disk under a `.log` write (which the segment undoes):
//! the directory stayed online, later appends and flushes were accepted, the recovery point could
//! pass the marker, and READ_COMMITTED fetches never listed the transaction, so consumers read
//! its records as committed. Now the segment refuses every later append, flush and roll, the
//! directory goes offline, and the next open's recovery (from a recovery point below the marker)
//! writes the entry.
//!
//! The full disk is `/dev/full` behind the `.txnindex` path (a symlink): every write to it fails
//! with `ENOSPC`, for root too.

use crate::common;

use common::pwrite_manager as manager;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{AbortedTxn, LeaderEpoch, Offset, ProducerId, TopicId};
use mirrorlog_segment::segment::SegmentError;
use std::path::Path;

const TXN_INDEX: &str = "00000000000000000000.txnindex";

/// The disk is full for `partition_dir`'s first transaction index.
fn fill_txn_index_disk(partition_dir: &Path) {
    std::os::unix::fs::symlink("/dev/full", partition_dir.join(TXN_INDEX)).unwrap();
}

/// Space is back.
fn free_txn_index_disk(partition_dir: &Path) {
    std::fs::remove_file(partition_dir.join(TXN_INDEX)).unwrap();
}

/// Producer 1's transaction (offsets 0 and 1) was aborted by the marker at offset 2.
fn the_aborted_txn() -> AbortedTxn {
    AbortedTxn {
        producer_id: ProducerId(1),
        first_offset: Offset(0),
        last_offset: Offset(2),
        last_stable_offset: Offset(3),
    }
}

/// The aborted transactions a READ_COMMITTED fetch of the whole log lists.
fn aborted_read_committed(log: &mut PartitionLog) -> Vec<AbortedTxn> {
    let leo = log.log_end_offset();
    read_committed_aborted(log, leo).unwrap_or_default()
}

fn is_txn_index_failure(e: &EngineError) -> bool {
    matches!(e, EngineError::Segment(SegmentError::TxnIndexAppend { .. }))
}

#[test]
fn a_full_disk_under_the_txn_index_takes_the_dir_offline_and_a_restart_rebuilds_the_entry() {
    let d = tempfile::tempdir().unwrap();
    let tp = orders(0);
    let partition_dir = d.path().join("orders-0");
    {
        let mgr = manager(d.path());
        let h = mgr.create(&tp, TopicId([7; 16]), small_config()).unwrap();
        let e = LeaderEpoch(0);
        h.append_as_leader_durable(
            producer_batch(1, 0, 0, 2, true, T0),
            e,
            LeaderOrigin::Client,
        )
        .unwrap();
        fill_txn_index_disk(&partition_dir);
        let err = h
            .append_as_leader_durable(marker(1, 0, false, T0), e, LeaderOrigin::Coordinator)
            .expect_err("the ABORT marker whose transaction-index entry could not be written");
        // The broker answers any `EngineError::Segment` with KAFKA_STORAGE_ERROR.
        assert!(is_txn_index_failure(&err), "{err:?}");
        assert!(
            h.check_online().is_err(),
            "a full disk under the transaction index left the data dir online: {err}"
        );
        assert_eq!(mgr.offline_dirs().len(), 1);
        assert!(matches!(
            h.append_as_leader_durable(keyed_batch("b"), e, LeaderOrigin::Client),
            Err(EngineError::LogDirOffline { .. })
        ));
        // Nothing makes the marker look durable: a flush is refused and the recovery point
        // stays below the marker, so the next start scans it again.
        let mut log = h.write();
        assert!(log.flush().is_err(), "a flush passed the missing entry");
        assert!(
            log.recovery_point() <= Offset(2),
            "{}",
            log.recovery_point()
        );
        drop(log);
        drop(h);
        mgr.shutdown().unwrap();
    }
    free_txn_index_disk(&partition_dir);

    let mgr = manager(d.path());
    assert!(mgr.offline_dirs().is_empty(), "{:?}", mgr.offline_dirs());
    let h = mgr.lookup(&tp).unwrap().expect("the partition");
    let mut log = h.write();
    assert_eq!(log.log_end_offset(), Offset(3), "the marker is in the log");
    assert_eq!(
        aborted_read_committed(&mut log),
        vec![the_aborted_txn()],
        "recovery did not rebuild the missing entry"
    );
}

#[test]
fn a_bare_log_refuses_appends_flushes_and_rolls_after_a_failed_txn_index_write() {
    let d = tempfile::tempdir().unwrap();
    let e = LeaderEpoch(0);
    let mut log = open(d.path(), small_config(), clock(), Shutdown::Clean);
    log.append_as_leader(
        producer_batch(1, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    fill_txn_index_disk(d.path());
    let err = log
        .append_as_leader(marker(1, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap_err();
    assert!(is_txn_index_failure(&err), "{err:?}");
    assert!(
        log.append_as_leader(keyed_batch("b"), e, LeaderOrigin::Client)
            .is_err(),
        "an append after the failed entry write was accepted"
    );
    assert!(log.flush().is_err(), "a flush passed the missing entry");
    let leo = log.log_end_offset();
    assert!(log.roll(leo).is_err(), "the poisoned segment was rolled");
    assert_eq!(log.segment_base_offsets(), vec![Offset(0)]);
    assert!(
        log.append_as_leader(keyed_batch("c"), e, LeaderOrigin::Client)
            .is_err(),
        "an append after the refused roll was accepted"
    );
    let recovery_point = log.recovery_point();
    assert!(recovery_point <= Offset(2), "{recovery_point}");
    drop(log);
    free_txn_index_disk(d.path());

    let (mut log, _) = reopen_unclean(
        d.path(),
        clock(),
        OpenOffsets {
            recovery_point,
            ..OpenOffsets::default()
        },
    );
    assert_eq!(log.log_end_offset(), Offset(3));
    assert_eq!(aborted_read_committed(&mut log), vec![the_aborted_txn()]);
}

/// The mirror appends under the partition's write guard rather than through the handle's append
/// methods (the source's ABORT markers, a stop's own): the poisoned segment takes the directory
/// offline when the guard is released, before a fetch can read the log without the entry.
#[test]
fn a_failed_txn_index_write_under_the_write_guard_takes_the_dir_offline() {
    let d = tempfile::tempdir().unwrap();
    let mgr = manager(d.path());
    let h = mgr
        .create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    let e = LeaderEpoch(0);
    h.append_as_leader_durable(
        producer_batch(1, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    fill_txn_index_disk(&d.path().join("orders-0"));
    let err = h
        .write()
        .append_as_leader(marker(1, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap_err();
    assert!(is_txn_index_failure(&err), "{err:?}");
    assert!(
        h.check_online().is_err(),
        "the data dir stayed online after a failed entry write under the write guard"
    );
}
