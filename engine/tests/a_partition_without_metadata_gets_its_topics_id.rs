//! A partition directory with log files but no `partition.metadata` (not left by our own crash:
//! `create` writes the file, durably, before any log data; a data directory of a Kafka older
//! than 2.8, or a file lost) no longer fails the whole start. Its topic id is decided, written
//! (durably) and logged:
//!
//! - another partition of the topic with `partition.metadata`: that partition's id (the
//!   registry takes a topic's id from its lowest partition, so partitions with different ids
//!   would be one topic with two ids);
//! - none: a new id, the same for every partition of the topic that lacks the file;
//! - none, and the topic is a mirror topic (read-only): no id is invented. Its id is its source
//!   topic's and keys its `__mirror_state` records; under a new id the mirror would skip them at
//!   its restart and leave the topic read-only with nothing to mirror it. The partition's data
//!   directory goes offline (as for a garbled `partition.metadata`) with a reason naming the
//!   fix, and the other directories are served.
//!
//! Kafka (KRaft) opens such a log with no topic id and then, at its first metadata image, finds
//! it stray (`isStrayKraftReplica`: no topic id) and sets it aside as `-stray`, recreating the
//! replica from the controller's metadata; a single node here has no controller to recreate it
//! from, so the log is kept and served under the topic's id.

use crate::common;

use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{Offset, PartitionMetadata, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn open(dirs: &[&Path]) -> Result<LogManager, EngineError> {
    let mut cfg = LogManagerConfig::new(dirs[0]);
    cfg.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
}

fn create_with_records(mgr: &LogManager, tp: &TopicPartition, id: TopicId, config: LogConfig) {
    let h = mgr.create(tp, id, config).unwrap();
    h.write()
        .append_as_follower(
            replica_batch(0, 2, 0, mirrorlog_segment::Compression::None, T0),
            mirrorlog_engine::log::ReplicaOrigin::Replication,
        )
        .unwrap();
}

fn metadata_path(mgr: &LogManager, tp: &TopicPartition) -> std::path::PathBuf {
    PartitionMetadata::path_in(&mgr.get(tp).unwrap().data_dir().join(tp.to_string()))
}

fn metadata_id(path: &Path) -> TopicId {
    let text = std::fs::read_to_string(path).unwrap();
    PartitionMetadata::decode(path, &text).unwrap().topic_id
}

#[test]
fn a_partition_without_metadata_takes_the_id_of_its_topics_other_partitions() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let dirs = [d1.path(), d2.path()];
    let mgr = open(&dirs).unwrap();
    let orders_id = TopicId([7; 16]);
    for p in 0..3 {
        create_with_records(&mgr, &orders(p), orders_id, small_config());
    }
    // Two partitions of `solo`, both to lose the file, and no other.
    for p in 0..2 {
        create_with_records(&mgr, &tp("solo", p), TopicId([9; 16]), small_config());
    }
    let lost: Vec<_> = [orders(0), orders(2), tp("solo", 0), tp("solo", 1)]
        .iter()
        .map(|tp| (tp.clone(), metadata_path(&mgr, tp)))
        .collect();
    mgr.shutdown().unwrap();
    for (_, path) in &lost {
        std::fs::remove_file(path).unwrap();
    }

    let mgr = open(&dirs).unwrap_or_else(|e| panic!("the start failed: {e}"));
    assert!(mgr.offline_dirs().is_empty());
    for p in 0..3 {
        let h = mgr.get(&orders(p)).unwrap();
        assert_eq!(h.topic_id(), orders_id, "orders-{p}");
        assert_eq!(h.read().log_end_offset(), Offset(2));
    }
    let solo = mgr.get(&tp("solo", 0)).unwrap().topic_id();
    assert_ne!(solo, TopicId([0; 16]));
    assert_ne!(solo, TopicId([9; 16]), "the lost id cannot be known");
    assert_eq!(
        mgr.get(&tp("solo", 1)).unwrap().topic_id(),
        solo,
        "one id per topic"
    );
    // Written, so the next start reads the same ids.
    for (tp, path) in &lost {
        assert_eq!(metadata_id(path), mgr.get(tp).unwrap().topic_id(), "{tp}");
    }
    mgr.shutdown().unwrap();
    let mgr = open(&dirs).unwrap();
    assert_eq!(mgr.get(&tp("solo", 1)).unwrap().topic_id(), solo);
}

#[test]
fn a_mirror_partition_without_metadata_takes_only_its_dir_offline() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let dirs = [d1.path(), d2.path()];
    let mgr = open(&dirs).unwrap();
    let mirror_config = LogConfig {
        read_only: true,
        ..small_config()
    };
    let mirrored = tp("mirrored", 0);
    create_with_records(&mgr, &mirrored, TopicId([5; 16]), mirror_config);
    // The next create goes to the other directory (the one with fewer partitions).
    create_with_records(&mgr, &orders(0), TopicId([7; 16]), small_config());
    let damaged_dir = mgr.get(&mirrored).unwrap().data_dir().to_path_buf();
    assert_ne!(mgr.get(&orders(0)).unwrap().data_dir(), damaged_dir);
    let path = metadata_path(&mgr, &mirrored);
    mgr.shutdown().unwrap();
    std::fs::remove_file(&path).unwrap();

    let mgr = open(&dirs).unwrap_or_else(|e| panic!("the start failed: {e}"));
    assert_eq!(
        mgr.get(&orders(0)).unwrap().read().log_end_offset(),
        Offset(2)
    );
    assert!(mgr.get(&mirrored).is_none());
    let offline = mgr.offline_dirs();
    assert_eq!(offline.len(), 1);
    assert_eq!(offline[0].0, damaged_dir);
    assert!(
        offline[0].1.contains("partition.metadata") && offline[0].1.contains("mirror"),
        "{}",
        offline[0].1
    );
    assert!(matches!(
        mgr.lookup(&mirrored),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(!path.exists(), "no id is invented for a mirror topic");
}
