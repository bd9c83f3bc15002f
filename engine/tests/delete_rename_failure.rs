//! Scenario: the rename that deletes a partition fails (here its `-delete` name is taken by a
//! non-empty directory). The partition is already out of the manager, but its files are still
//! there: as Kafka's `maybeHandleIOException` does, the data directory goes offline instead of
//! the broker going on as if the partition were gone while it would come back at the next start.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

#[test]
fn a_failed_delete_rename_takes_the_data_dir_offline() {
    let d = tempfile::tempdir().unwrap();
    let cfg = LogManagerConfig::new(d.path());
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mgr = LogManager::open(cfg, storage, clock()).unwrap().0;
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    let id = TopicId([7; 16]);
    mgr.create(&tp, id, small_config()).unwrap();
    let taken = d.path().join(format!("t-0.{id}-delete"));
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("x"), b"x").unwrap();

    assert!(mgr.delete(&tp).is_err());
    let offline = mgr.offline_dirs();
    assert_eq!(offline.len(), 1, "{offline:?}");
    assert!(offline[0].1.contains("deleting t-0"), "{offline:?}");
}
