//! A garbled `leader-epoch-checkpoint` or `partition.metadata` in one partition takes that
//! partition's data directory offline at start, and the other directories are served, as Kafka
//! does: both files are read through a failure handler whose `IOException` (a malformed line is
//! one) goes to the `LogDirFailureChannel` (`CheckpointFileWithFailureHandler`,
//! `PartitionMetadataFile.read`).
//!
//! Either file failing to parse failed `LogManager::open` as a whole: one damaged file on one
//! disk kept every partition of every healthy disk from being served (the garbled offset
//! checkpoints were fixed the same way before).

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn garbled_file_in_one_dir_leaves_the_other_served(file: &str, garbage: &[u8]) {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let open = || {
        let mut cfg = LogManagerConfig::new(d1.path());
        cfg.data_dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
        cfg.default_log_config = small_config();
        let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
        LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
    };
    let mgr = open().unwrap();
    let tps: Vec<TopicPartition> = (0..2).map(orders).collect();
    for (i, tp) in tps.iter().enumerate() {
        let h = mgr
            .create(tp, TopicId([i as u8 + 1; 16]), small_config())
            .unwrap();
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let in_d1 = |tp: &&TopicPartition| mgr.get(tp).unwrap().data_dir() == d1.path();
    let healthy = tps.iter().find(in_d1).unwrap().clone();
    let damaged = tps.iter().find(|tp| !in_d1(tp)).unwrap().clone();
    mgr.shutdown().unwrap();
    let path = Path::new(d2.path()).join(damaged.to_string()).join(file);
    assert!(path.exists(), "{} was not written", path.display());
    std::fs::write(&path, garbage).unwrap();

    let mgr = open().unwrap_or_else(|e| panic!("garbled {file}: the start failed: {e}"));
    assert_eq!(
        mgr.get(&healthy).unwrap().read().log_end_offset(),
        Offset(2)
    );
    assert!(mgr.get(&damaged).is_none());
    assert_eq!(mgr.offline_dirs().len(), 1);
    assert_eq!(mgr.offline_dirs()[0].0, d2.path());
}

#[test]
fn a_garbled_leader_epoch_checkpoint() {
    garbled_file_in_one_dir_leaves_the_other_served("leader-epoch-checkpoint", b"0\n1\n0\n");
}

#[test]
fn a_garbled_partition_metadata() {
    garbled_file_in_one_dir_leaves_the_other_served("partition.metadata", b"version: 0\n");
}
