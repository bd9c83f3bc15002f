//! The clean-shutdown marker (`.kafka_cleanshutdown`) is created, synced, checked and removed
//! through the manager's `Storage`, its name made durable by a sync of the data directory, so
//! that the simulated storage's crashes decide whether it survives.
//!
//! It was a plain file written with `std::fs` beside the simulated `.log` files: a simulated
//! crash never lost it, nor brought back one removed at open. Now: a crash after a clean
//! shutdown keeps it (the next start skips recovery); a shutdown whose marker could not be
//! synced leaves none after a crash (the next start recovers); a crash after an open removed it
//! does not bring it back.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{
    CLEAN_SHUTDOWN_FILE, LogManager, LogManagerConfig, ManagerLoadReport,
};
use mirrorlog_index::TopicId;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn open(sim: &SimStorage, dir: &Path) -> (LogManager, ManagerLoadReport) {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clock()).unwrap()
}

/// A manager in `dir` with `orders-0`.
fn manager_with_partition(sim: &SimStorage, dir: &Path) -> LogManager {
    let (mgr, _) = open(sim, dir);
    mgr.create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    mgr
}

#[test]
fn a_crash_after_a_clean_shutdown_keeps_the_marker() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    manager_with_partition(&sim, d.path()).shutdown().unwrap();
    let marker = d.path().join(CLEAN_SHUTDOWN_FILE);
    assert!(!marker.exists(), "the marker is a real file");
    let crashed = sim.crash(TornTail::None);
    assert!(crashed.exists(&marker), "the crash lost the marker");
    let (mgr, report) = open(&crashed, d.path());
    assert_eq!(report.unclean_logs, 0, "the clean shutdown was not seen");
    // Removed at open, durably: a crash now does not bring it back.
    let again = crashed.crash(TornTail::None);
    drop(mgr);
    assert!(
        !again.exists(&marker),
        "the marker removed at open came back"
    );
    let (_, report) = open(&again, d.path());
    assert_eq!(
        report.unclean_logs, 1,
        "a crash after the open is recovered"
    );
}

#[test]
fn a_shutdown_whose_marker_is_not_synced_is_recovered_after_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager_with_partition(&sim, d.path());
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path(CLEAN_SHUTDOWN_FILE));
    assert!(mgr.shutdown().is_err(), "the marker's failed sync");
    let crashed = sim.crash(TornTail::None);
    let marker = d.path().join(CLEAN_SHUTDOWN_FILE);
    assert!(
        !crashed.exists(&marker),
        "an unsynced marker survived the crash"
    );
    let (_, report) = open(&crashed, d.path());
    assert_eq!(
        report.unclean_logs, 1,
        "the failed shutdown was taken as clean"
    );
}
