//! Bug: `LogManager::open` fails when `recovery-point-offset-checkpoint` or
//! `log-start-offset-checkpoint` does not parse. Kafka's `LogManager.loadLogs` catches the read
//! error, warns and goes on ("resetting the recovery checkpoint to 0" / "resetting to the base
//! offset of the first segment"): the recovery point only decides how much is scanned, so a
//! lost checkpoint costs a longer recovery, not the broker.

mod common;

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
    drop(h);
    mgr.checkpoint().unwrap();
    drop(mgr); // crash
    // A garbled checkpoint (a disk error, a half-written file from another tool).
    std::fs::write(d.path().join(file), b"0\n1\norders 0\n").unwrap();

    let mgr = open(d.path()).expect("the data dir opens with a garbled offset checkpoint");
    assert_eq!(mgr.get(&a).unwrap().read().log_end_offset(), Offset(20));
}

#[test]
fn garbled_recovery_point_checkpoint_resets_to_zero() {
    check(RECOVERY_POINT_CHECKPOINT);
}

#[test]
fn garbled_log_start_checkpoint_resets_to_first_segment() {
    check(LOG_START_CHECKPOINT);
}
