//! Bug: `LogManager::open` failed when `recovery-point-offset-checkpoint` or
//! `log-start-offset-checkpoint` did not parse, so one garbled file stopped the whole broker.
//!
//! Then the garbled file was ignored and its directory kept online, on the word of
//! `LogManager.loadLogs`' warning ("resetting to the base offset of the first segment"): the
//! partitions opened with their log start at their first segment and served the records
//! DeleteRecords had removed, and the start's own checkpoint wrote that lower log start over
//! the file. Kafka reads both files through `CheckpointFileWithFailureHandler`, for which a
//! malformed line is an `IOException` of the directory: that directory goes offline (the other
//! directories are still served), and the file stays as it is.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{
    LOG_START_CHECKPOINT, LogManager, LogManagerConfig, RECOVERY_POINT_CHECKPOINT,
};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

fn open(dir: &std::path::Path) -> mirrorlog_engine::error::EngineResult<LogManager> {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
}

fn check(file: &str) {
    let d = tempfile::tempdir().unwrap();
    let mgr = open(d.path()).unwrap();
    let a = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = mgr.create(&a, TopicId([1; 16]), small_config()).unwrap();
    for _ in 0..10 {
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    {
        // DeleteRecords removes the first 6 records.
        let mut log = h.write();
        log.update_high_watermark(Offset(20));
        assert!(log.maybe_increment_log_start_offset(Offset(6)).unwrap());
    }
    drop(h);
    mgr.checkpoint().unwrap();
    drop(mgr); // crash
    // A garbled checkpoint (a disk error, a half-written file from another tool).
    let garbled = b"0\n1\norders 0\n";
    std::fs::write(d.path().join(file), garbled).unwrap();

    let mgr = open(d.path()).expect("the broker starts with a garbled offset checkpoint");
    assert!(
        mgr.get(&a).is_none(),
        "the partition was served, with log start {}",
        mgr.get(&a).unwrap().read().log_start_offset()
    );
    assert_eq!(mgr.offline_dirs().len(), 1, "the data dir stayed online");
    assert_eq!(
        std::fs::read(d.path().join(file)).unwrap(),
        garbled,
        "the garbled file is left for the operator"
    );
}
#[test]
fn a_garbled_recovery_point_checkpoint_takes_its_dir_offline() {
    check(RECOVERY_POINT_CHECKPOINT);
}

#[test]
fn a_garbled_log_start_checkpoint_takes_its_dir_offline() {
    check(LOG_START_CHECKPOINT);
}
