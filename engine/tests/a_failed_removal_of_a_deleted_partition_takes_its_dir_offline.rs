//! A deleted partition's `-delete` directory whose removal fails takes its data directory
//! offline, as Kafka's `UnifiedLog.delete` runs under `maybeHandleIOException` (any
//! `IOException` goes to the `LogDirFailureChannel`) and `LogManager.deleteLogs` has already
//! taken the log off its queue: it is not tried again until the next start finds the directory.
//!
//! Before, the failure was logged, the data directory stayed online and the removal was tried
//! again at every upkeep.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, TopicId};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn manager(
    sim: &SimStorage,
    dir: &Path,
    delay_ms: i64,
    clk: Arc<mirrorlog_engine::clock::ManualClock>,
) -> LogManager {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    cfg.default_log_config.file_delete_delay_ms = delay_ms;
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clk).unwrap().0
}

/// Two partitions of one data directory, each with a record.
fn two_partitions(mgr: &LogManager) {
    for p in 0..2 {
        mgr.create(&orders(p), TopicId([7; 16]), small_config())
            .unwrap()
            .append_as_leader_durable(keyed_batch("x"), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
}

#[test]
fn a_failed_removal_at_the_upkeep_takes_the_dir_offline() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let clk = clock();
    let mgr = manager(&sim, d.path(), 60_000, clk.clone());
    two_partitions(&mgr);
    mgr.delete(&orders(0)).unwrap();
    sim.inject(Fault::new(IoOp::Remove, FaultKind::Eio).on_path("-delete"));
    clk.advance(60_000);
    assert!(mgr.maintain().is_err(), "the failure is reported");
    let offline = mgr.offline_dirs();
    assert_eq!(
        offline.len(),
        1,
        "the data directory is offline: {offline:?}"
    );
    assert_eq!(offline[0].0, d.path());
    assert!(
        mgr.get(&orders(1)).unwrap().check_online().is_err(),
        "its other partitions with it"
    );
    // Nothing is removed from an offline directory: the next start finds it.
    let _ = mgr.maintain();
    let renamed = std::fs::read_dir(d.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with("-delete")
        })
        .count();
    assert_eq!(renamed, 1, "the directory stays for the next start");
}

#[test]
fn a_failed_removal_with_no_delay_takes_the_dir_offline() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager(&sim, d.path(), 0, clock());
    two_partitions(&mgr);
    sim.inject(Fault::new(IoOp::Remove, FaultKind::Eio).on_path("-delete"));
    assert!(mgr.delete(&orders(0)).is_err());
    assert_eq!(mgr.offline_dirs().len(), 1);
    assert!(mgr.get(&orders(1)).unwrap().check_online().is_err());
}
