//! The `leader-epoch-checkpoint` is written, read and removed through the log's `Storage`, with
//! Kafka's `CheckpointFile` discipline (`.tmp` written and synced, renamed over the file, the
//! partition directory synced), so that the simulated storage's crashes decide which version
//! survives.
//!
//! It was a plain file written with `std::fs` beside the simulated `.log` files: a simulated
//! crash never lost or reverted it, so the crash tests could not catch a missing sync or a lost
//! rename there. Now: a crash after the write returned keeps the new entries; a crash before
//! the new file's rename is durable keeps the old entries intact.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{EpochEntry, LeaderEpoch, Offset};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn open_sim(sim: &SimStorage, dir: &Path, shutdown: Shutdown) -> PartitionLog {
    open_with(
        Arc::new(sim.clone()),
        dir,
        small_config(),
        clock(),
        shutdown,
        OpenOffsets::default(),
    )
}

fn checkpoint(dir: &Path) -> PathBuf {
    dir.join("leader-epoch-checkpoint")
}

/// The checkpoint's text in `sim`, if the file is there.
fn text(sim: &SimStorage, dir: &Path) -> Option<String> {
    sim.file_bytes(&checkpoint(dir))
        .map(|b| String::from_utf8(b).unwrap())
}

fn append(log: &mut PartitionLog, epoch: i32) -> mirrorlog_engine::error::EngineResult<()> {
    log.append_as_leader(
        client_batch(1, T0),
        LeaderEpoch(epoch),
        LeaderOrigin::Client,
    )
    .map(drop)
}

/// A log with one record at offset 0 in epoch 3, flushed.
fn log_in_epoch_3(sim: &SimStorage, dir: &Path) -> PartitionLog {
    let mut log = open_sim(sim, dir, Shutdown::Clean);
    append(&mut log, 3).unwrap();
    log.flush().unwrap();
    log
}

#[test]
fn an_epoch_written_before_a_crash_is_kept_by_the_crash() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let log = log_in_epoch_3(&sim, &dir);
    assert!(
        !checkpoint(&dir).exists(),
        "the checkpoint is a real file beside the simulated storage"
    );
    let crashed = sim.crash(TornTail::None);
    assert_eq!(
        text(&crashed, &dir).as_deref(),
        Some("0\n1\n3 0\n"),
        "the crash did not keep the checkpoint written before it"
    );
    drop(log);
    // Opened without recovery (recovery point at the log end), the cache is the file's.
    let (log, _) = PartitionLog::open(
        Arc::new(crashed),
        &dir,
        "t-0",
        small_config(),
        clock(),
        Shutdown::Unclean,
        OpenOffsets {
            recovery_point: Offset(1),
            ..OpenOffsets::default()
        },
    )
    .unwrap();
    assert_eq!(
        log.epoch_cache().entries(),
        &[EpochEntry {
            epoch: LeaderEpoch(3),
            start_offset: Offset(0)
        }]
    );
}

#[test]
fn a_crash_between_the_tmp_write_and_the_rename_keeps_the_old_epochs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = log_in_epoch_3(&sim, &dir);
    // The power fails before the new `.tmp` is synced: the write fails before any rename.
    sim.halt_after_syncs(sim.syncs_completed());
    assert!(append(&mut log, 5).is_err(), "the failed checkpoint write");
    assert_eq!(text(&sim, &dir).as_deref(), Some("0\n1\n3 0\n"));
    drop(log);
    let crashed = sim.crash(TornTail::None);
    assert_eq!(text(&crashed, &dir).as_deref(), Some("0\n1\n3 0\n"));
    let log = open_sim(&crashed, &dir, Shutdown::Unclean);
    assert_eq!(log.log_end_offset(), Offset(1));
    assert_eq!(log.epoch_cache().latest_epoch(), Some(LeaderEpoch(3)));
}

#[test]
fn a_crash_before_the_rename_is_synced_keeps_the_old_epochs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = log_in_epoch_3(&sim, &dir);
    // The power fails right after the new `.tmp` is synced: the rename lands in the live view,
    // the directory sync that would make it durable fails.
    sim.halt_after_syncs(sim.syncs_completed() + 1);
    assert!(append(&mut log, 5).is_err(), "the failed checkpoint write");
    assert_eq!(
        text(&sim, &dir).as_deref(),
        Some("0\n2\n3 0\n5 1\n"),
        "the rename happened (live)"
    );
    drop(log);
    let crashed = sim.crash(TornTail::None);
    assert_eq!(
        text(&crashed, &dir).as_deref(),
        Some("0\n1\n3 0\n"),
        "the unsynced rename was not undone by the crash, or the old file was damaged"
    );
}
