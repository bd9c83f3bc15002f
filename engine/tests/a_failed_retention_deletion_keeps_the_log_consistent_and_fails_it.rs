//! Retention (`delete_old_segments`) that a storage error stops part-way leaves the log
//! consistent in memory and fails it, on a bare `PartitionLog` too (a log manager's `maintain`
//! also takes the data directory offline): the segment whose deletion failed is no longer
//! listed, the log start is at the first segment still listed (never above it), and the log
//! refuses reads, appends, truncations and further log-start moves until it is reopened.
//!
//! A deleted log refuses retention and log-start moves: its directory is being removed.
//!
//! Retention used to return at the failed deletion with the segment unlisted but the log start
//! still below it (reads there found no segment), and the log in use; a log-start move was
//! accepted on a deleted log.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

/// A bare log over `sim` with offsets 0..10, 10..20 and 20..30, one segment each, below the
/// high watermark, and `retention.bytes` 0: retention deletes both sealed segments.
fn three_segments(sim: &SimStorage, dir: &std::path::Path) -> PartitionLog {
    let mut config = small_config();
    config.retention_bytes = 0;
    let mut log = open_with(
        Arc::new(sim.clone()),
        dir,
        config,
        clock(),
        Shutdown::Clean,
        OpenOffsets::default(),
    );
    for s in 0..3 {
        if s > 0 {
            let leo = log.log_end_offset();
            log.roll(leo).unwrap();
        }
        for i in 0..10 {
            log.append_as_leader(
                keyed_batch(&format!("s{s}-{i}")),
                LeaderEpoch(0),
                LeaderOrigin::Client,
            )
            .unwrap();
        }
    }
    log.update_high_watermark(Offset(30));
    log.flush().unwrap();
    assert_eq!(
        log.segment_base_offsets(),
        vec![Offset(0), Offset(10), Offset(20)]
    );
    log
}

fn assert_failed(log: &mut PartitionLog) {
    assert!(log.failure().is_some(), "the log did not fail");
    assert!(matches!(
        log.read(Offset(20), 1 << 20, FetchIsolation::HighWatermark, true),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.append_as_leader(keyed_batch("after"), LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.truncate_to(Offset(25)),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.maybe_increment_log_start_offset(Offset(25)),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        log.delete_old_segments(),
        Err(EngineError::LogDirOffline { .. })
    ));
}

#[test]
fn a_failed_segment_removal_in_retention_moves_the_log_start_past_it_and_fails_the_log() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mut log = three_segments(&sim, d.path());
    // A deletion renames the files `.deleted` first (`file.delete.delay.ms`).
    sim.inject(Fault::new(IoOp::Rename, FaultKind::Eio).on_path("00000000000000000010.log"));
    log.delete_old_segments()
        .expect_err("the second segment's deletion fails");
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    assert_eq!(log.segment_base_offsets(), vec![Offset(20)]);
    assert_eq!(
        log.log_start_offset(),
        Offset(20),
        "the log start is not at the first segment listed"
    );
    assert_eq!(log.log_end_offset(), Offset(30));
    assert_eq!(log.high_watermark(), Offset(30));
    assert_failed(&mut log);
}

#[test]
fn a_failed_directory_sync_in_retention_fails_the_log() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mut log = three_segments(&sim, d.path());
    // The first segment's `.log` is renamed `.deleted`, the directory sync that makes it durable
    // fails.
    sim.inject(Fault::new(IoOp::SyncDir, FaultKind::Eio));
    log.delete_old_segments()
        .expect_err("the first removal's directory sync fails");
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    assert_eq!(log.segment_base_offsets(), vec![Offset(10), Offset(20)]);
    assert_eq!(log.log_start_offset(), Offset(10));
    assert_failed(&mut log);
}

#[test]
fn a_deleted_log_refuses_retention_and_log_start_moves() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mut log = three_segments(&sim, d.path());
    log.mark_deleted();
    assert!(matches!(
        log.maybe_increment_log_start_offset(Offset(25)),
        Err(EngineError::PartitionDeleted(_))
    ));
    assert!(matches!(
        log.delete_old_segments(),
        Err(EngineError::PartitionDeleted(_))
    ));
    assert_eq!(log.log_start_offset(), Offset(0));
    assert_eq!(log.segment_count(), 3);
}
