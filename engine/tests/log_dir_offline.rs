//! Scenario: a failed `fdatasync` takes its whole data directory offline, as Kafka's
//! `LogDirFailureChannel` does — no append in that directory is acknowledged afterwards (a later
//! successful sync could not prove the dropped pages were written), the other directory keeps
//! working, nothing is checkpointed or marked clean there, and a restart recovers every
//! acknowledged batch. Running out of space while writing, by contrast, leaves the directory
//! online and the partition appendable once space returns.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{CLEAN_SHUTDOWN_FILE, LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn tp(topic: &str, p: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition: p,
    }
}

fn manager(sim: &SimStorage, dirs: &[&Path]) -> LogManager {
    let mut cfg = LogManagerConfig::new(dirs[0]);
    cfg.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clock()).unwrap().0
}

fn append(mgr: &LogManager, t: &TopicPartition) -> Result<Offset, EngineError> {
    mgr.get(t)
        .unwrap()
        .append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .map(|i| i.first_offset)
}

#[test]
fn a_failed_sync_takes_the_whole_data_dir_offline_and_a_restart_recovers_it() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager(&sim, &[d1.path(), d2.path()]);
    // Placement alternates: a-0 and a-2 in d1, a-1 and a-3 in d2.
    for p in 0..4 {
        mgr.create(&tp("a", p), TopicId([p as u8 + 1; 16]), small_config())
            .unwrap();
    }
    let in_d1: Vec<i32> = (0..4)
        .filter(|p| mgr.get(&tp("a", *p)).unwrap().data_dir() == d1.path())
        .collect();
    let in_d2: Vec<i32> = (0..4).filter(|p| !in_d1.contains(p)).collect();
    assert_eq!((in_d1.len(), in_d2.len()), (2, 2));
    for p in 0..4 {
        assert_eq!(append(&mgr, &tp("a", p)).unwrap(), Offset(0));
    }

    let broken = tp("a", in_d1[0]);
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(broken.to_string()));
    let err = append(&mgr, &broken).unwrap_err();
    assert!(matches!(err, EngineError::LogDirOffline { .. }), "{err}");
    // Another partition in the same directory: refused before it writes anything.
    let sibling = tp("a", in_d1[1]);
    let err = append(&mgr, &sibling).unwrap_err();
    assert!(
        matches!(&err, EngineError::LogDirOffline { path, reason }
            if path == d1.path() && reason.contains("sync failed")),
        "{err}"
    );
    assert!(mgr.get(&sibling).unwrap().check_online().is_err());
    // The other directory is unaffected.
    assert_eq!(append(&mgr, &tp("a", in_d2[0])).unwrap(), Offset(2));
    assert_eq!(
        mgr.offline_dirs()
            .into_iter()
            .map(|(p, _)| p)
            .collect::<Vec<_>>(),
        vec![d1.path().to_path_buf()]
    );
    // No new partition lands in the offline directory.
    for p in 0..2 {
        let h = mgr
            .create(&tp("b", p), TopicId([9 + p as u8; 16]), small_config())
            .unwrap();
        assert_eq!(h.data_dir(), d2.path());
    }

    // A clean shutdown marks only the online directory clean.
    mgr.shutdown().unwrap();
    assert!(!sim.exists(&d1.path().join(CLEAN_SHUTDOWN_FILE)));
    assert!(sim.exists(&d2.path().join(CLEAN_SHUTDOWN_FILE)));

    // Restart (keeping only synced bytes): d1 is recovered, every acknowledged batch is there
    // and nothing that was refused.
    let sim = sim.crash(TornTail::None);
    let mgr = manager(&sim, &[d1.path(), d2.path()]);
    assert!(mgr.offline_dirs().is_empty());
    for p in 0..4 {
        let h = mgr.get(&tp("a", p)).unwrap();
        let want = if in_d2[0] == p { 4 } else { 2 };
        assert_eq!(h.read().log_end_offset(), Offset(want), "a-{p}");
    }
    assert_eq!(append(&mgr, &broken).unwrap(), Offset(2));
}

#[test]
fn running_out_of_space_while_writing_keeps_the_dir_online() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager(&sim, &[d.path()]);
    let t = tp("full", 0);
    mgr.create(&t, TopicId([1; 16]), small_config()).unwrap();
    assert_eq!(append(&mgr, &t).unwrap(), Offset(0));
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path(".log"));
    let err = append(&mgr, &t).unwrap_err();
    assert!(
        matches!(&err, EngineError::Segment(_)) && err.to_string().contains("write_at"),
        "{err}"
    );
    assert!(mgr.offline_dirs().is_empty());
    // Space is back: the same offsets are assigned, nothing was half-written.
    assert_eq!(append(&mgr, &t).unwrap(), Offset(2));
    let h = mgr.get(&t).unwrap();
    assert_eq!(h.read().log_end_offset(), Offset(4));
}
