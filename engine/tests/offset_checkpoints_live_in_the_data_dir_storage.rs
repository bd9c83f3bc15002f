//! The log manager's `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
//! `replication-offset-checkpoint` are written and read through the manager's `Storage`, with
//! Kafka's `CheckpointFile` discipline (`.tmp` written and synced, renamed over the file, the
//! data directory synced), so that the simulated storage's crashes decide which version
//! survives.
//!
//! They were plain files written with `std::fs` beside the simulated `.log` files: a simulated
//! crash never lost or reverted one, so the crash tests could not catch a missing sync or an
//! unsynced rename there. Now: a crash after `checkpoint` returned keeps the new offsets; a crash
//! before a new file's rename is durable keeps the old file intact.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{
    HIGH_WATERMARK_CHECKPOINT, LOG_START_CHECKPOINT, LogManager, RECOVERY_POINT_CHECKPOINT,
};
use mirrorlog_index::checkpoint::decode_offset_checkpoint;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::collections::BTreeMap;
use std::path::Path;

const FILES: [&str; 3] = [
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_CHECKPOINT,
    HIGH_WATERMARK_CHECKPOINT,
];

/// `orders-0`'s offset in the checkpoint `name` of `dir` as `sim` holds it (`None`: no file or
/// no entry).
fn checkpointed(sim: &SimStorage, dir: &Path, name: &str) -> Option<Offset> {
    let path = dir.join(name);
    let bytes = sim.file_bytes(&path)?;
    let offsets: BTreeMap<_, _> = decode_offset_checkpoint(&path, &bytes).unwrap();
    offsets.get(&orders(0)).copied()
}

/// Appends `n` records durably to `orders-0` and moves its high watermark to its log end.
fn append(mgr: &LogManager, n: usize) {
    let h = mgr.get(&orders(0)).unwrap();
    for i in 0..n {
        h.append_as_leader_durable(
            keyed_batch(&format!("v{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    let mut log = h.write();
    let end = log.log_end_offset();
    log.update_high_watermark(end);
}

/// A manager in `dir` with `orders-0` holding 5 durable records, its checkpoints written.
fn manager_with_5_records(sim: &SimStorage, dir: &Path) -> LogManager {
    let mgr = sim_manager(sim, dir);
    mgr.create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    append(&mgr, 5);
    mgr.checkpoint().unwrap();
    mgr
}

#[test]
fn checkpoints_written_before_a_crash_are_kept_by_the_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager_with_5_records(&sim, d.path());
    for name in FILES {
        assert!(
            !d.path().join(name).exists(),
            "{name} is a real file beside the simulated storage"
        );
    }
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert_eq!(
        checkpointed(&crashed, d.path(), RECOVERY_POINT_CHECKPOINT),
        Some(Offset(5))
    );
    assert_eq!(
        checkpointed(&crashed, d.path(), LOG_START_CHECKPOINT),
        Some(Offset(0))
    );
    assert_eq!(
        checkpointed(&crashed, d.path(), HIGH_WATERMARK_CHECKPOINT),
        Some(Offset(5))
    );
    // The reopened manager reads them back through the storage.
    let mgr = sim_manager(&crashed, d.path());
    let h = mgr.get(&orders(0)).unwrap();
    let log = h.read();
    assert_eq!(log.log_end_offset(), Offset(5));
    assert_eq!(
        log.high_watermark(),
        Offset(5),
        "the checkpointed high watermark"
    );
}

/// Appends 3 more records, cuts the power after `syncs_allowed` more syncs, checkpoints (which
/// fails) and crashes: every checkpoint still holds its old offsets.
fn failed_checkpoint_keeps_the_old_files(syncs_allowed: u64) {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager_with_5_records(&sim, d.path());
    append(&mgr, 3);
    sim.halt_after_syncs(sim.syncs_completed() + syncs_allowed);
    assert!(
        mgr.checkpoint().is_err(),
        "the checkpoint write did not fail"
    );
    if syncs_allowed == 1 {
        assert_eq!(
            checkpointed(&sim, d.path(), RECOVERY_POINT_CHECKPOINT),
            Some(Offset(8)),
            "the new recovery point's rename happened (live)"
        );
    }
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert_eq!(
        checkpointed(&crashed, d.path(), RECOVERY_POINT_CHECKPOINT),
        Some(Offset(5)),
        "the crash did not keep the old recovery point intact"
    );
    assert_eq!(
        checkpointed(&crashed, d.path(), LOG_START_CHECKPOINT),
        Some(Offset(0))
    );
    assert_eq!(
        checkpointed(&crashed, d.path(), HIGH_WATERMARK_CHECKPOINT),
        Some(Offset(5)),
        "the crash did not keep the old high watermark"
    );
    let mgr = sim_manager(&crashed, d.path());
    assert_eq!(
        mgr.get(&orders(0)).unwrap().read().high_watermark(),
        Offset(5)
    );
}

#[test]
fn a_crash_between_the_tmp_write_and_the_rename_keeps_the_old_checkpoints() {
    // The `.tmp`'s sync fails: no rename happens.
    failed_checkpoint_keeps_the_old_files(0);
}

#[test]
fn a_crash_before_the_rename_is_synced_keeps_the_old_checkpoints() {
    // The `.tmp` is synced and renamed over the file; the data directory's sync fails.
    failed_checkpoint_keeps_the_old_files(1);
}
