//! `file.delete.delay.ms` for a deleted partition: Kafka's `asyncDelete` renames the directory
//! `<tp>.<id>-delete` and queues it; `deleteLogs` removes it once the broker's
//! `file.delete.delay.ms` has passed since, and a `-delete` directory found at start is queued
//! at the load and removed the delay after it. The engine removed the renamed directory at
//! once (and one found at start before loading anything), so a fetch that had just read the
//! partition lost nothing, but the files were gone before the delay Kafka users count on.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn delete_dirs(data: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-delete"))
        .collect();
    v.sort();
    v
}

fn manager(data: &Path, clk: Arc<mirrorlog_engine::clock::ManualClock>) -> LogManager {
    let mut cfg = LogManagerConfig::new(data);
    cfg.default_log_config = small_config();
    assert_eq!(
        cfg.default_log_config.file_delete_delay_ms, 60_000,
        "Kafka's default"
    );
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clk).unwrap().0
}

#[test]
fn the_renamed_directory_is_removed_only_after_file_delete_delay_and_a_restart_waits_too() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mgr = manager(d.path(), clk.clone());
    let h = mgr
        .create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    h.append_as_leader_durable(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    h.write().update_high_watermark(Offset(3));
    let slice = h
        .read()
        .read(Offset(0), 1 << 20, FetchIsolation::HighWatermark, true)
        .unwrap()
        .records
        .unwrap()
        .slice;
    let expected = slice.read_all().unwrap();
    drop(h);

    mgr.delete(&orders(0)).unwrap();
    assert!(mgr.get(&orders(0)).is_none());
    let renamed = delete_dirs(d.path());
    assert_eq!(renamed.len(), 1, "renamed `-delete`");
    assert!(
        renamed[0].join(format!("{:020}.log", 0)).exists(),
        "its files stay for file.delete.delay.ms"
    );
    clk.advance(59_999);
    mgr.maintain().unwrap();
    assert_eq!(delete_dirs(d.path()), renamed, "not before the delay");
    clk.advance(1);
    mgr.maintain().unwrap();
    assert!(delete_dirs(d.path()).is_empty(), "removed once it passed");
    assert_eq!(slice.read_all().unwrap(), expected, "the fetch reads on");

    // Deleted, then a restart before the delay passed: removed the delay after the start.
    let h = mgr
        .create(&orders(1), TopicId([7; 16]), small_config())
        .unwrap();
    h.append_as_leader_durable(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    drop(h);
    mgr.delete(&orders(1)).unwrap();
    mgr.shutdown().unwrap();
    clk.advance(30_000);
    let mgr = manager(d.path(), clk.clone());
    assert!(mgr.get(&orders(1)).is_none(), "deleted stays deleted");
    let renamed = delete_dirs(d.path());
    assert_eq!(renamed.len(), 1, "still there after the start");
    clk.advance(59_999);
    mgr.maintain().unwrap();
    assert_eq!(
        delete_dirs(d.path()),
        renamed,
        "the delay runs from the start"
    );
    clk.advance(1);
    mgr.maintain().unwrap();
    assert!(delete_dirs(d.path()).is_empty());
}

#[test]
fn a_broker_delay_of_zero_removes_the_directory_at_once() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    cfg.default_log_config.file_delete_delay_ms = 0;
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mgr = LogManager::open(cfg, storage, clock()).unwrap().0;
    mgr.create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    mgr.delete(&orders(0)).unwrap();
    assert!(delete_dirs(d.path()).is_empty());
}
