//! A partition deleted before a crash must not come back with its records when a partition of
//! the same name is created after the restart.
//!
//! `LogManager::delete` renames the partition directory to `…-delete` and syncs the data
//! directory, so a crash cannot undo the rename (Kafka's `renameDir` moves it with
//! `atomicMoveWithFallback`, which flushes the parent). That sync was a plain `fsync` outside
//! the `Storage` trait, so the storage holding the `.log` files was never told: on the
//! simulated storage, which makes a rename durable only at a sync of its directory, the crash
//! reverted the rename and the re-created partition found the deleted records. The sync now
//! goes through `Storage::sync_dir`.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{SimStorage, TornTail, create_dir_all_durably};

#[test]
fn a_partition_recreated_after_a_delete_and_a_crash_starts_empty() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    create_dir_all_durably(&sim, d.path()).unwrap();
    let mgr = sim_manager(&sim, d.path());
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = mgr.create(&tp, TopicId([1; 16]), small_config()).unwrap();
    for _ in 0..5 {
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    drop(h);
    mgr.delete(&tp).unwrap();
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    let mgr = sim_manager(&crashed, d.path());
    assert!(mgr.get(&tp).is_none(), "the deleted partition was loaded");
    let h = mgr.create(&tp, TopicId([2; 16]), small_config()).unwrap();
    assert_eq!(
        h.read().log_end_offset(),
        Offset(0),
        "the re-created partition holds the deleted partition's records"
    );
}
