//! A data directory taken over from a Kafka broker in KRaft combined mode holds the broker's
//! metadata log, `__cluster_metadata-0`. Kafka's `LogManager.loadLogs` never loads it as a
//! partition (the Raft layer owns it); neither does the log manager: it is left untouched — not
//! served as a topic, not subject to retention, not rewritten by a shutdown — so that the
//! directory can still go back to Kafka.
//!
//! It was loaded as partition 0 of a topic `__cluster_metadata` like any other directory. A
//! partition of that name cannot be created either (Kafka's CreateTopics refuses the name), as
//! the next start would leave it unloaded.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const KAFKA_LOGS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/kafka-fixtures/kraft-combined-logs"
);

/// A writable copy of the directory tree `src` under `dst` (the fixture is read-only).
fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for entry in fs::read_dir(src).expect("shared/kafka-fixtures beside the checkout") {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            fs::write(&to, fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn the_metadata_log_of_a_kraft_data_dir_is_neither_loaded_nor_touched() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("kraft-combined-logs");
    copy_tree(Path::new(KAFKA_LOGS), &dir);
    let metadata_dir = dir.join("__cluster_metadata-0");
    let before = contents(&metadata_dir);
    let mut cfg = LogManagerConfig::new(&dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let (mgr, _) = LogManager::open(cfg, storage, clock()).unwrap();
    let metadata = TopicPartition {
        topic: "__cluster_metadata".into(),
        partition: 0,
    };
    assert!(
        mgr.get(&metadata).is_none(),
        "Kafka's metadata log was loaded as a partition"
    );
    assert!(mgr.offline_partitions().is_empty());
    let foo = TopicPartition {
        topic: "foo".into(),
        partition: 0,
    };
    assert!(mgr.get(&foo).is_some(), "the user topic is loaded");
    // Nor can one be created under that name: the next start would not load it.
    assert!(
        mgr.create(&metadata, mirrorlog_index::TopicId([7; 16]), small_config())
            .is_err()
    );
    mgr.shutdown().unwrap();
    assert_eq!(
        contents(&metadata_dir),
        before,
        "the metadata log was changed"
    );
}
