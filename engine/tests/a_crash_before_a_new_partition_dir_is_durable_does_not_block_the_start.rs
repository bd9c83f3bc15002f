//! A crash of the simulated storage before a new partition directory's creation is durable does
//! not stop the next start: the directory `create` made on disk, which the storage lost, is an
//! interrupted create and is removed.
//!
//! The start took the failure to list the directory in the storage (`NotFound`) as "it may hold
//! segments", kept the directory and failed the whole start on its missing `partition.metadata`.

use crate::common;

use common::*;
use mirrorlog_index::TopicId;
use mirrorlog_segment::io::{SimStorage, TornTail};

#[test]
fn a_partition_dir_lost_by_the_storage_is_removed_at_the_next_start() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = sim_manager(&sim, d.path());
    // The power fails before the data directory's sync that makes the new directory durable.
    sim.halt_after_syncs(sim.syncs_completed());
    assert!(
        mgr.create(&orders(0), TopicId([7; 16]), small_config())
            .is_err()
    );
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    let mut cfg = mirrorlog_engine::manager::LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    let storage: std::sync::Arc<dyn mirrorlog_segment::io::Storage> = std::sync::Arc::new(crashed);
    let (mgr, _) = mirrorlog_engine::manager::LogManager::open(cfg, storage, clock())
        .expect("the start fails on the directory the crash lost");
    assert!(mgr.get(&orders(0)).is_none());
    assert!(!d.path().join(orders(0).to_string()).exists());
}
