//! A truncation (`truncate_to`, `truncate_fully_and_start_at`) or a log-start move that a
//! storage error stops part-way, whoever holds the log's write guard (the broker's handlers and
//! the mirror truncate through it, not through a `PartitionHandle` method):
//!
//! - never leaves the high watermark, recovery point, last stable offset or log start above the
//!   new end, nor epoch-cache entries past it (`OffsetForLeaderEpoch` would answer an offset the
//!   log no longer has);
//! - takes the data directory offline (Kafka: an `IOException` in a truncation is a log-dir
//!   failure), out of space included, and the log refuses further use;
//! - a log-start move that only runs out of space writing the epoch checkpoint is consistent
//!   (the stale entries the file keeps are below the log start, which the next open trims) and
//!   keeps the directory online, its epoch cache trimmed in memory.
//!
//! The truncation used to return at the failed step with the offsets and the epoch cache above
//! the new end and the directory online.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, PartitionLog, ReplicaOrigin};
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, TornTail};
use std::sync::Arc;

/// A managed log in a directory of its own on simulated storage, with offsets 0..10 in epoch 0,
/// 10..20 in epoch 1 and 20..30 in epoch 2, one segment each, all durable and below the high
/// watermark.
fn three_epochs() -> (
    tempfile::TempDir,
    SimStorage,
    LogManager,
    Arc<PartitionHandle>,
) {
    let (d, sim, mgr, h) = sim_orders();
    for epoch in 0..3 {
        if epoch > 0 {
            let mut log = h.write();
            let leo = log.log_end_offset();
            log.roll(leo).unwrap();
        }
        for i in 0..10 {
            h.append_as_leader_durable(
                keyed_batch(&format!("e{epoch}-{i}")),
                LeaderEpoch(epoch),
                LeaderOrigin::Client,
            )
            .unwrap();
        }
    }
    {
        let mut log = h.write();
        log.update_high_watermark(Offset(30));
        log.flush().unwrap();
        assert_eq!(log.segment_count(), 3);
        assert_eq!(log.recovery_point(), Offset(30));
    }
    (d, sim, mgr, h)
}

/// The epoch cache's entries as (epoch, start offset) pairs.
fn epoch_entries(log: &PartitionLog) -> Vec<(i32, i64)> {
    log.epoch_cache()
        .entries()
        .iter()
        .map(|e| (e.epoch.get(), e.start_offset.get()))
        .collect()
}

/// `r` is the error of the one fault injected into `sim`, which fired.
fn failed_by_the_fault<T: std::fmt::Debug>(sim: &SimStorage, r: Result<T, EngineError>) {
    assert!(r.is_err());
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
}

/// Nothing the log claims in memory is at or past `bound`, nor past its end.
fn assert_nothing_claimed_past(h: &PartitionHandle, bound: Offset) {
    let log = h.read();
    let end = log.log_end_offset().min(bound);
    assert!(
        log.high_watermark() <= end,
        "high watermark {} above {end}",
        log.high_watermark()
    );
    assert!(
        log.recovery_point() <= end,
        "recovery point {} above {end}",
        log.recovery_point()
    );
    assert!(
        log.last_stable_offset() <= end,
        "LSO {} above {end}",
        log.last_stable_offset()
    );
    assert!(
        log.log_start_offset() <= end,
        "log start {} above {end}",
        log.log_start_offset()
    );
    for e in log.epoch_cache().entries() {
        assert!(
            e.start_offset < end.max(Offset(1)),
            "epoch entry {e:?} at or past {end}"
        );
    }
    // (A removal stopped half done may leave the log end itself above `bound`, the failed
    // log's reads refused: the cache is asked with the bound as the end.)
    for epoch in 0..4 {
        let (_, answer) = log.epoch_cache().end_offset_for(LeaderEpoch(epoch), end);
        assert!(
            answer <= end,
            "OffsetForLeaderEpoch({epoch}) answers {answer}, past {end}"
        );
    }
}

/// The directory is offline and the log refuses appends, truncations and reads through its
/// guard too.
fn assert_offline(h: &PartitionHandle) {
    assert!(h.check_online().is_err(), "the data dir stayed online");
    let mut log = h.write();
    assert!(matches!(
        log.append_as_follower(
            replica_batch(40, 1, 3, mirrorlog_segment::Compression::None, T0),
            ReplicaOrigin::Mirror
        ),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.truncate_to(Offset(5)),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.read(
            Offset(0),
            1 << 20,
            mirrorlog_engine::log::FetchIsolation::HighWatermark,
            true
        ),
        Err(EngineError::LogDirOffline { .. })
    ));
}

fn epoch_checkpoint_write_fails(sim: &SimStorage, kind: FaultKind) {
    sim.inject(Fault::new(IoOp::WriteAt, kind).on_path("leader-epoch-checkpoint"));
}

#[test]
fn an_eio_writing_the_epoch_checkpoint_mid_truncation_clamps_the_offsets_and_takes_the_dir_offline()
{
    let (_d, sim, _mgr, h) = three_epochs();
    epoch_checkpoint_write_fails(&sim, FaultKind::Eio);
    // The segments after 15 are gone by the time the epoch checkpoint is written.
    failed_by_the_fault(&sim, h.write().truncate_to(Offset(15)));
    assert_eq!(h.read().log_end_offset(), Offset(15));
    assert_nothing_claimed_past(&h, Offset(15));
    assert_offline(&h);
}

#[test]
fn running_out_of_space_trimming_the_epoch_cache_leaves_no_entry_past_the_end() {
    let (_d, sim, _mgr, h) = three_epochs();
    epoch_checkpoint_write_fails(&sim, FaultKind::NoSpace);
    failed_by_the_fault(&sim, h.write().truncate_to(Offset(15)));
    // Epoch 1 is the latest the log holds now: it ends at the log end, not where epoch 2 began.
    assert_eq!(
        h.read()
            .epoch_cache()
            .end_offset_for(LeaderEpoch(1), Offset(15)),
        (LeaderEpoch(1), Offset(15))
    );
    assert_nothing_claimed_past(&h, Offset(15));
    // The checkpoint file keeps epoch 2's entry, and the state after the truncation cannot be
    // vouched for: offline, out of space or not.
    assert_offline(&h);
}

#[test]
fn a_failed_segment_removal_in_a_truncation_clamps_the_offsets_and_takes_the_dir_offline() {
    let (_d, sim, _mgr, h) = three_epochs();
    // The last segment's `.log` is removed, the directory sync that makes it durable fails:
    // the removal of the segments after 5 stops half done.
    sim.inject(Fault::new(IoOp::SyncDir, FaultKind::Eio).on_path("orders-0"));
    failed_by_the_fault(&sim, h.write().truncate_to(Offset(5)));
    assert_nothing_claimed_past(&h, Offset(5));
    assert_offline(&h);
}

#[test]
fn a_failed_full_truncation_clamps_the_offsets_and_takes_the_dir_offline() {
    let (_d, sim, _mgr, h) = three_epochs();
    // Deleting a segment renames its files `.deleted` first (`file.delete.delay.ms`).
    sim.inject(Fault::new(IoOp::Rename, FaultKind::Eio).on_path("00000000000000000010.log"));
    failed_by_the_fault(&sim, h.write().truncate_fully_and_start_at(Offset(3)));
    assert_nothing_claimed_past(&h, Offset(3));
    assert!(h.read().epoch_cache().is_empty());
    assert_offline(&h);
}

#[test]
fn a_failed_truncation_recovers_consistently_after_a_restart() {
    let (d, sim, mgr, h) = three_epochs();
    epoch_checkpoint_write_fails(&sim, FaultKind::Eio);
    assert!(h.write().truncate_to(Offset(15)).is_err());
    drop(h);
    drop(mgr);
    let crashed = sim.crash(TornTail::None);
    let mgr = sim_manager(&crashed, d.path());
    let h = mgr.get(&orders(0)).unwrap();
    h.check_online().unwrap();
    let log = h.read();
    // The segment cut is not synced: the restart keeps the durable bytes, 15 or all 30 records,
    // with an epoch cache that matches them.
    let end = log.log_end_offset();
    assert!(end == Offset(15) || end == Offset(30), "end {end}");
    assert_eq!(log.log_start_offset(), Offset(0));
    let entries = epoch_entries(&log);
    if end == Offset(15) {
        assert_eq!(entries, vec![(0, 0), (1, 10)]);
    } else {
        assert_eq!(entries, vec![(0, 0), (1, 10), (2, 20)]);
    }
}

#[test]
fn a_log_start_move_out_of_space_for_the_epoch_checkpoint_trims_the_cache_and_stays_online() {
    let (_d, sim, _mgr, h) = three_epochs();
    epoch_checkpoint_write_fails(&sim, FaultKind::NoSpace);
    failed_by_the_fault(&sim, h.write().maybe_increment_log_start_offset(Offset(25)));
    {
        let log = h.read();
        assert_eq!(log.log_start_offset(), Offset(25));
        let entries = epoch_entries(&log);
        assert_eq!(entries, vec![(2, 25)]);
    }
    h.check_online().unwrap();
    // The next retention pass deletes the segments below the new log start.
    h.append_as_leader_durable(keyed_batch("after"), LeaderEpoch(2), LeaderOrigin::Client)
        .unwrap();
}

#[test]
fn a_log_start_move_whose_segment_removal_fails_takes_the_dir_offline() {
    let (_d, sim, _mgr, h) = three_epochs();
    // The move leaves the segments below it to the next retention check (as Kafka's).
    h.write()
        .maybe_increment_log_start_offset(Offset(25))
        .unwrap();
    // Deleting a segment renames its files `.deleted` first (`file.delete.delay.ms`).
    sim.inject(Fault::new(IoOp::Rename, FaultKind::Eio).on_path("00000000000000000000.log"));
    failed_by_the_fault(&sim, h.write().delete_old_segments());
    assert_eq!(h.read().log_start_offset(), Offset(25));
    assert_offline(&h);
}
