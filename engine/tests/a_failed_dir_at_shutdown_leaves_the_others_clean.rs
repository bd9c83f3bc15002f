//! Bug: a storage failure in one data directory during a clean shutdown (a log's last flush
//! failing there) stopped the whole shutdown at that log: no other directory had its
//! checkpoints written or its clean-shutdown marker, and the logs not yet closed wrote no
//! producer snapshot, so the next start recovered every log of every directory. Kafka's
//! `LogManager.shutdown` runs each directory's logs apart: the failed directory goes offline
//! (and is recovered at the next start), the others are marked clean.

mod common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{CLEAN_SHUTDOWN_FILE, LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn manager(sim: &SimStorage, dirs: &[&Path]) -> LogManager {
    let mut cfg = LogManagerConfig::new(dirs[0]);
    cfg.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clock()).unwrap().0
}

#[test]
fn a_sync_failing_in_one_dir_at_shutdown_leaves_the_other_dir_clean() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager(&sim, &[d1.path(), d2.path()]);
    for p in 0..4 {
        let h = mgr
            .create(&orders(p), TopicId([7; 16]), small_config())
            .unwrap();
        // Not synced: the shutdown's flush is the first sync of these records.
        h.write()
            .append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let in_d1: Vec<i32> = (0..4)
        .filter(|p| mgr.get(&orders(*p)).unwrap().data_dir() == d1.path())
        .collect();
    assert_eq!(in_d1.len(), 2);
    // Every partition of d1 fails its next sync: whichever is flushed first takes d1 offline.
    for p in &in_d1 {
        sim.inject(
            Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(orders(*p).to_string()),
        );
    }
    assert!(mgr.shutdown().is_err(), "the failure is reported");
    assert!(!sim.exists(&d1.path().join(CLEAN_SHUTDOWN_FILE)));
    assert!(
        sim.exists(&d2.path().join(CLEAN_SHUTDOWN_FILE)),
        "the directory that did not fail is marked clean"
    );

    let mut cfg = LogManagerConfig::new(d1.path());
    cfg.data_dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
    cfg.default_log_config = small_config();
    // The restart keeps what was made durable (and none of the injected faults).
    let storage: Arc<dyn Storage> = Arc::new(sim.crash(TornTail::None));
    let (mgr, report) = LogManager::open(cfg, storage, clock()).unwrap();
    assert_eq!(report.logs, 4);
    assert_eq!(
        report.unclean_logs, 2,
        "only the failed directory's logs are recovered"
    );
    for p in 0..4 {
        if !in_d1.contains(&p) {
            assert_eq!(
                mgr.get(&orders(p)).unwrap().read().log_end_offset(),
                Offset(2)
            );
        }
    }
}
