//! An I/O failure of a transaction index while a start recovers a log takes that log's data
//! directory offline and the other directories start, as Kafka's `loadLogs` handles an
//! `IOException` of a log.
//!
//! Recovery rebuilds the `.txnindex` of every segment it scans from the ABORT markers there.
//! A failed entry write (or leader-epoch checkpoint write) of that rebuild came back as a
//! "files do not agree" error, not as an I/O failure, so the whole start failed; so did a
//! transaction index that could not be opened.
//!
//! Both failures are made robustly, for root too: a `.txnindex` that is a symlink into a
//! directory that does not exist (opening finds no file, creating it fails), and a directory
//! standing where the `.txnindex` should be.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const TXN_INDEX: &str = "00000000000000000000.txnindex";

fn manager(d1: &Path, d2: &Path) -> LogManager {
    let mut cfg = LogManagerConfig::new(d1);
    cfg.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    cfg.default_log_config = small_config();
    cfg.recovery_threads = 1;
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock())
        .expect("one directory's transaction index stopped the whole start")
        .0
}

/// Two partitions, one per directory, each with an aborted transaction (offsets 0–2), left
/// without a clean shutdown (the next start recovers both). Returns the partition in `d1`, the
/// one in `d2`, and the `.txnindex` path of the first.
fn two_logs_with_an_abort_each(d1: &Path, d2: &Path) -> (TopicPartition, TopicPartition, PathBuf) {
    let mgr = manager(d1, d2);
    for p in 0..2 {
        let h = mgr
            .create(&orders(p), TopicId([p as u8 + 1; 16]), small_config())
            .unwrap();
        for (batch, origin) in aborted_txn() {
            h.append_as_leader_durable(batch, LeaderEpoch(0), origin)
                .unwrap();
        }
    }
    let in_d1 = |p| mgr.get(&orders(p)).unwrap().data_dir() == d1;
    let (a, b) = if in_d1(0) { (0, 1) } else { (1, 0) };
    assert!(!in_d1(b), "both partitions in one directory");
    let txn_index = d1.join(orders(a).to_string()).join(TXN_INDEX);
    assert!(txn_index.is_file());
    // A crash: no clean-shutdown marker.
    drop(mgr);
    (orders(a), orders(b), txn_index)
}

/// `failed`'s directory alone is offline; `healthy` serves its aborted transaction.
fn only_the_failed_dir_is_offline(
    mgr: &LogManager,
    failed: &TopicPartition,
    healthy: &TopicPartition,
) {
    assert_eq!(mgr.offline_dirs().len(), 1, "{:?}", mgr.offline_dirs());
    assert!(matches!(
        mgr.lookup(failed),
        Err(EngineError::LogDirOffline { .. })
    ));
    let h = mgr.lookup(healthy).unwrap().expect("the healthy partition");
    let mut log = h.write();
    let aborted = read_committed_aborted(&mut log, Offset(3)).unwrap();
    assert_eq!(aborted.len(), 1);
}

#[test]
fn a_failed_txn_index_entry_write_during_recovery_takes_only_its_dir_offline() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (failed, healthy, txn_index) = two_logs_with_an_abort_each(d1.path(), d2.path());
    std::fs::remove_file(&txn_index).unwrap();
    std::os::unix::fs::symlink(d1.path().join("no-such-dir").join("x"), &txn_index).unwrap();
    let mgr = manager(d1.path(), d2.path());
    only_the_failed_dir_is_offline(&mgr, &failed, &healthy);
}

#[test]
fn a_txn_index_that_cannot_be_opened_takes_only_its_dir_offline() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (failed, healthy, txn_index) = two_logs_with_an_abort_each(d1.path(), d2.path());
    std::fs::remove_file(&txn_index).unwrap();
    std::fs::create_dir(&txn_index).unwrap();
    let mgr = manager(d1.path(), d2.path());
    only_the_failed_dir_is_offline(&mgr, &failed, &healthy);
}
