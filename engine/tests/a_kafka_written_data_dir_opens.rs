//! The data directory a real Kafka broker wrote (`shared/kafka-fixtures/kraft-combined-logs`, see
//! its README) opens through the log manager on the real storage, as it must for a broker
//! replacing Kafka on its disks: `partition.metadata`, `leader-epoch-checkpoint` and the producer
//! snapshots Kafka wrote are read through the storage, and what the manager writes back (its
//! offset checkpoints, the clean-shutdown marker) opens again.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::fs;
use std::path::Path;
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

fn open(dir: &Path) -> LogManager {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).unwrap().0
}

#[test]
fn a_data_dir_kafka_wrote_opens_and_reopens_after_our_shutdown() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("kraft-combined-logs");
    copy_tree(Path::new(KAFKA_LOGS), &dir);
    let foo = TopicPartition {
        topic: "foo".into(),
        partition: 0,
    };
    // No clean-shutdown marker in the fixture: the first open recovers.
    let mgr = open(&dir);
    assert_eq!(
        mgr.offline_dirs(),
        vec![],
        "the Kafka-written dir went offline"
    );
    let check = |mgr: &LogManager| {
        let h = mgr.get(&foo).expect("foo-0 is loaded");
        let log = h.read();
        assert_eq!(log.log_start_offset(), Offset(0));
        assert_eq!(log.log_end_offset(), Offset(1));
        assert_eq!(log.leader_epoch(), LeaderEpoch(0));
        assert_eq!(
            log.epoch_cache().epoch_for_offset(Offset(0)),
            Some(LeaderEpoch(0))
        );
    };
    check(&mgr);
    mgr.shutdown().unwrap();
    assert!(dir.join(".kafka_cleanshutdown").exists());
    for name in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
    ] {
        assert!(dir.join(name).exists(), "{name} not written");
    }
    let mgr = open(&dir);
    assert_eq!(mgr.offline_dirs(), vec![]);
    check(&mgr);
    mgr.shutdown().unwrap();
}

/// Kafka's foo-0 is a one-batch segment that Kafka closed cleanly: its `.index` is empty and
/// trimmed (0 bytes) and its `.timeindex` holds only the entry its close wrote (the batch's max
/// timestamp at offset 0 — the first batch never gets an interval entry). Recovered and closed
/// by us, the same segment must end with the same bytes, so the directory goes back to Kafka as
/// Kafka left it. It ended with both indexes at their preallocated length, the time index
/// without that entry.
#[test]
fn a_kafka_segment_we_recover_and_close_keeps_kafkas_index_bytes() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("kraft-combined-logs");
    copy_tree(Path::new(KAFKA_LOGS), &dir);
    let kafka = Path::new(KAFKA_LOGS).join("foo-0");
    let ours = dir.join("foo-0");
    // No clean-shutdown marker in the fixture: the open recovers foo-0's only segment.
    open(&dir).shutdown().unwrap();
    for name in [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        assert_eq!(
            fs::read(ours.join(name)).unwrap(),
            fs::read(kafka.join(name)).unwrap(),
            "{name}: our bytes, then Kafka's"
        );
    }
}
