//! Bug: `LogManager::delete` renames `<topic>-<p>` to `<topic>-<p>.<topic id>-delete` without
//! capping its length. Kafka topic names may be 249 characters long; the `-delete` name is then
//! longer than the 255-byte file-name limit, the rename fails (ENAMETOOLONG) — after the
//! partition was already removed from the manager and marked deleted — so the delete fails, the
//! directory stays and the partition comes back at the next start. Kafka caps the topic part of
//! the name (`UnifiedLog.logDirNameWithSuffixCappedLength`: at most 255 characters in all).

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

#[test]
fn a_partition_of_a_249_character_topic_can_be_deleted() {
    let d = tempfile::tempdir().unwrap();
    let open = || {
        let cfg = LogManagerConfig::new(d.path());
        let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
        LogManager::open(cfg, storage, clock()).unwrap().0
    };
    let mgr = open();
    let tp = TopicPartition {
        topic: "t".repeat(249),
        partition: 0,
    };
    mgr.create(&tp, TopicId([7; 16]), small_config()).unwrap();
    mgr.delete(&tp).expect("the delete succeeds");
    mgr.shutdown().unwrap();
    assert!(
        open().get(&tp).is_none(),
        "the deleted partition stays deleted"
    );
}
