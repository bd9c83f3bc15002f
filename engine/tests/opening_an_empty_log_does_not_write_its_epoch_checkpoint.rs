//! A log that holds no record has an empty leader-epoch cache, and opening it changes nothing
//! in it: Kafka writes `leader-epoch-checkpoint` only when the cache changes. Here the open of
//! a directory without segments (a new partition, or one whose segments a crash lost) wrote the
//! empty cache out all the same — a `.tmp` written and synced, renamed, the directory synced:
//! a durable write per partition created, and a storage failure there failed an open that had
//! nothing to write. Every write to the checkpoint is armed to fail: an open that does not
//! write it cannot notice. A reopen of an empty log (its empty active segment is found) wrote
//! nothing already; the second test keeps it so, after a clean and after an unclean shutdown.

use crate::common;

use common::*;
use mirrorlog_engine::log::{OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{EpochEntry, LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

const CHECKPOINT: &str = "leader-epoch-checkpoint";

fn open_sim(sim: &SimStorage, dir: &Path, shutdown: Shutdown, log_start: i64) -> PartitionLog {
    PartitionLog::open(
        Arc::new(sim.clone()),
        dir,
        "t-0",
        small_config(),
        clock(),
        shutdown,
        OpenOffsets {
            log_start_offset: Offset(log_start),
            recovery_point: Offset(log_start),
            high_watermark: Offset(log_start),
        },
    )
    .expect("the open writes no checkpoint")
    .0
}

/// Arms a failure of the checkpoint's `.tmp` creation, its write and its rename.
fn arm_every_checkpoint_write(sim: &SimStorage) -> usize {
    let ops = [IoOp::Create, IoOp::WriteAt, IoOp::Rename];
    for op in ops {
        sim.inject(Fault::new(op, FaultKind::Eio).on_path(CHECKPOINT));
    }
    ops.len()
}

#[test]
fn a_new_empty_log_opens_without_writing_its_epoch_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let armed = arm_every_checkpoint_write(&sim);
    let log = open_sim(&sim, &dir, Shutdown::Clean, 0);
    assert!(log.epoch_cache().is_empty());
    assert_eq!(sim.pending_faults(), armed);
    assert_eq!(sim.file_bytes(&dir.join(CHECKPOINT)), None);
    log.close().unwrap();
}

#[test]
fn reopening_an_empty_log_leaves_its_epoch_checkpoint_alone() {
    for shutdown in [Shutdown::Clean, Shutdown::Unclean] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let sim = SimStorage::new();
        open_sim(&sim, &dir, Shutdown::Clean, 5).close().unwrap();
        let armed = arm_every_checkpoint_write(&sim);
        let log = open_sim(&sim, &dir, shutdown, 5);
        assert!(log.epoch_cache().is_empty());
        assert_eq!(log.log_end_offset(), Offset(5));
        assert_eq!(
            sim.pending_faults(),
            armed,
            "{shutdown:?}: the reopen wrote the checkpoint"
        );
        log.close().unwrap();
    }
}

#[test]
fn a_log_without_segments_still_drops_the_entries_its_checkpoint_kept() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean, 0);
    log.append_as_leader(
        client_batch(1, T0),
        LeaderEpoch(3),
        mirrorlog_engine::log::LeaderOrigin::Client,
    )
    .unwrap();
    log.close().unwrap();
    assert_eq!(
        sim.file_bytes(&dir.join(CHECKPOINT)).as_deref(),
        Some(&b"0\n1\n3 0\n"[..])
    );
    // The segments are gone (as a crash can lose them); the checkpoint still names epoch 3.
    let logs: Vec<_> = sim
        .list_dir(&dir)
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert!(!logs.is_empty());
    for p in logs {
        sim.remove(&p).unwrap();
    }
    let log = open_sim(&sim, &dir, Shutdown::Unclean, 0);
    assert_eq!(log.epoch_cache().entries(), &[] as &[EpochEntry]);
    assert_eq!(
        sim.file_bytes(&dir.join(CHECKPOINT)).as_deref(),
        Some(&b"0\n0\n"[..])
    );
}
