//! A log opened on a directory that does not exist yet creates the directory; its flushed
//! records must survive a crash.
//!
//! `PartitionLog::open` created its directory with `Storage::create_dir_all` and never synced
//! the parent: the first segment's `.log` name was synced into the new directory, but the
//! directory's own name was not durable, so a crash could lose the whole log (flushed records
//! included). `LogManager::create` synced the data directory itself, but with a plain `fsync`
//! outside the `Storage` trait, and an embedder opening a log directly got no sync at all. Now
//! `open` creates its directory with `create_dir_all_durably` (a sync of each new directory's
//! parent through `Storage::sync_dir`; nothing when the directory exists).

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{SimStorage, TornTail, create_dir_all_durably};
use std::sync::Arc;

#[test]
fn flushed_records_of_a_log_in_a_new_directory_survive_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_with(
        Arc::new(sim.clone()),
        &dir,
        small_config(),
        clock(),
        Shutdown::Clean,
        OpenOffsets::default(),
    );
    log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    log.flush().unwrap();
    let crashed = sim.crash(TornTail::None);
    drop(log);
    let log = open_with(
        Arc::new(crashed),
        &dir,
        small_config(),
        clock(),
        Shutdown::Unclean,
        OpenOffsets::default(),
    );
    assert_eq!(log.log_end_offset(), Offset(3), "flushed records were lost");
}

#[test]
fn a_partition_created_by_the_manager_keeps_its_durable_records_after_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    // The data directory itself is durable: only the partition directory is in question.
    create_dir_all_durably(&sim, d.path()).unwrap();
    let mgr = sim_manager(&sim, d.path());
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = mgr.create(&tp, TopicId([1; 16]), small_config()).unwrap();
    for _ in 0..4 {
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let crashed = sim.crash(TornTail::None);
    drop(h);
    drop(mgr);
    let mgr = sim_manager(&crashed, d.path());
    assert_eq!(
        mgr.get(&tp).unwrap().read().log_end_offset(),
        Offset(8),
        "records acknowledged as durable were lost"
    );
}
