//! Bug: `LogManager::open` now shrugs off a garbled recovery-point or log-start checkpoint, but
//! still fails as a whole on a garbled `replication-offset-checkpoint` of any one data dir
//! (manager.rs: `OffsetCheckpoint::new(..HIGH_WATERMARK_CHECKPOINT).read()?`): one damaged file on
//! one disk keeps every partition of every healthy disk from being served. Kafka reads it
//! through `CheckpointFileWithFailureHandler`, whose `IOException` (a malformed line is one)
//! takes only that log dir offline.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{HIGH_WATERMARK_CHECKPOINT, LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

#[test]
fn a_garbled_hw_checkpoint_in_one_dir_leaves_the_other_dir_served() {
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
    let healthy = tps
        .iter()
        .find(|tp| mgr.get(tp).unwrap().data_dir() == d1.path())
        .unwrap()
        .clone();
    mgr.shutdown().unwrap();
    std::fs::write(
        d2.path().join(HIGH_WATERMARK_CHECKPOINT),
        b"0\n1\norders 1\n",
    )
    .unwrap();

    let mgr = open().expect("the healthy data dir is still opened");
    assert_eq!(
        mgr.get(&healthy).unwrap().read().log_end_offset(),
        Offset(2)
    );
}
