//! Bug: `LogManager::create` makes the partition directory, then writes `partition.metadata`.
//! A crash between the two (or while the metadata's `.tmp` is being written) leaves a partition
//! directory without `partition.metadata`, and every later `LogManager::open` then fails
//! ("partition.metadata is missing"): the broker cannot start until someone removes the
//! directory by hand. Kafka loads a log without `partition.metadata` (the topic id is written
//! later, when known); an empty partition dir never stops a data dir from opening.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

fn open(dir: &std::path::Path) -> mirrorlog_engine::error::EngineResult<LogManager> {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
}

#[test]
fn a_partition_dir_left_by_a_crash_mid_create_does_not_stop_the_open() {
    let d = tempfile::tempdir().unwrap();
    let mgr = open(d.path()).unwrap();
    let a = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    mgr.create(&a, TopicId([1; 16]), small_config()).unwrap();
    mgr.shutdown().unwrap();
    // What `create` of orders-1 leaves when the process dies right after `create_dir_all`
    // (or during the metadata's atomic write: only its `.tmp` exists).
    let b = d.path().join("orders-1");
    std::fs::create_dir(&b).unwrap();
    std::fs::write(b.join("partition.metadata.tmp"), b"version: 0\n").unwrap();

    let mgr = open(d.path()).expect("the data dir opens after a crash mid-create");
    assert!(mgr.get(&a).is_some(), "the existing partition is served");
}
