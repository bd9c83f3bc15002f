//! Bug: an I/O error while loading one partition makes `LogManager::open` fail as a whole, so
//! one bad disk keeps every data directory — and every partition on the healthy disks — from
//! being served. Kafka's `LogManager.loadLogs` handles an `IOException` from a log's load by
//! taking that log's directory offline (`handleIOException`, `LogDirFailureChannel`) and loads
//! the other directories; the module docs here promise the same for I/O failures at run time.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::sync::Arc;

#[test]
fn an_io_error_loading_one_dir_leaves_the_other_dir_served() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let open = |sim: &Arc<SimStorage>| {
        let mut cfg = LogManagerConfig::new(d1.path());
        cfg.data_dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
        cfg.default_log_config = small_config();
        let storage: Arc<dyn Storage> = sim.clone();
        LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
    };
    let mgr = open(&sim).unwrap();
    let tps: Vec<TopicPartition> = (0..2)
        .map(|p| TopicPartition {
            topic: "orders".into(),
            partition: p,
        })
        .collect();
    for (i, tp) in tps.iter().enumerate() {
        let h = mgr
            .create(tp, TopicId([i as u8 + 1; 16]), small_config())
            .unwrap();
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let in_d1: Vec<TopicPartition> = tps
        .iter()
        .filter(|tp| mgr.get(tp).unwrap().data_dir() == d1.path())
        .cloned()
        .collect();
    let in_d2: Vec<TopicPartition> = tps
        .iter()
        .filter(|tp| mgr.get(tp).unwrap().data_dir() == d2.path())
        .cloned()
        .collect();
    assert_eq!((in_d1.len(), in_d2.len()), (1, 1));
    mgr.shutdown().unwrap();

    // The disk of d2 fails reading its partition.
    let bad = d2.path().join(in_d2[0].to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let mgr = open(&sim).expect("the healthy data dir is still opened");
    assert_eq!(
        mgr.get(&in_d1[0]).unwrap().read().log_end_offset(),
        Offset(2)
    );
    assert!(
        mgr.offline_dirs().iter().any(|(p, _)| p == d2.path()),
        "the failed dir is offline"
    );
}
