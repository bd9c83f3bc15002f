//! Kafka creates a new partition's `leader-epoch-checkpoint` with its log: the `CheckpointFile`
//! constructor behind `LeaderEpochCheckpointFile` creates the file, 0 bytes, when it is missing
//! (an empty file reads as no entries). Here a new partition had none until its first epoch was
//! recorded, so its directory differed from Kafka's. Now `create` writes the empty file through
//! the storage, durably and before `partition.metadata` (which marks a finished create), so a
//! crash at any point of the create leaves no partition or one with its checkpoint; opening the
//! partition again still leaves the file as it is.

use crate::common;

use common::*;
use mirrorlog_index::TopicId;
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::path::{Path, PathBuf};

fn checkpoint(dir: &Path) -> PathBuf {
    dir.join(orders(0).to_string())
        .join("leader-epoch-checkpoint")
}

#[test]
fn create_writes_an_empty_epoch_checkpoint_that_a_crash_keeps() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = sim_manager(&sim, d.path());
    mgr.create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    assert!(
        !checkpoint(d.path()).exists(),
        "written through the storage"
    );
    assert_eq!(sim.file_bytes(&checkpoint(d.path())), Some(vec![]));
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert_eq!(crashed.file_bytes(&checkpoint(d.path())), Some(vec![]));
    let mgr = sim_manager(&crashed, d.path());
    let h = mgr
        .get(&orders(0))
        .expect("the partition survives the crash");
    assert!(h.read().epoch_cache().is_empty());
    // The open reads the empty file as no entries and leaves it as it is.
    assert_eq!(crashed.file_bytes(&checkpoint(d.path())), Some(vec![]));
}

#[test]
fn a_crash_at_every_sync_of_create_keeps_no_partition_or_its_checkpoint() {
    for k in 0.. {
        let d = tempfile::tempdir().unwrap();
        let sim = SimStorage::new();
        let mgr = sim_manager(&sim, d.path());
        sim.halt_after_syncs(sim.syncs_completed() + k);
        let created = mgr
            .create(&orders(0), TopicId([7; 16]), small_config())
            .is_ok();
        let crashed = sim.crash(TornTail::None);
        drop(mgr);
        let mgr = sim_manager(&crashed, d.path());
        if mgr.get(&orders(0)).is_some() {
            assert_eq!(
                crashed.file_bytes(&checkpoint(d.path())),
                Some(vec![]),
                "power cut after {k} syncs of create: the partition has no epoch checkpoint"
            );
        }
        if created {
            break;
        }
    }
}
