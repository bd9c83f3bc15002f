//! Scenario: the log manager across two data directories — create partitions, append durably
//! from many threads (sharing fsyncs), checkpoint, shut down cleanly and reopen without
//! recovery, then crash and reopen with recovery in parallel; delete a partition.

use crate::common;

use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{
    CLEAN_SHUTDOWN_FILE, LogManager, LogManagerConfig, RECOVERY_POINT_CHECKPOINT,
};
use mirrorlog_index::{LeaderEpoch, Offset, OffsetCheckpoint, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

fn tp(topic: &str, p: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition: p,
    }
}

fn manager(
    dirs: &[&std::path::Path],
) -> (LogManager, mirrorlog_engine::manager::ManagerLoadReport) {
    let mut cfg = LogManagerConfig::new(dirs[0]);
    cfg.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).unwrap()
}

#[test]
fn partitions_survive_clean_and_unclean_restarts() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let (mgr, report) = manager(&[d1.path(), d2.path()]);
    assert_eq!(report.logs, 0);
    let mut cfg = small_config();
    cfg.retention_ms = 123_456;
    for p in 0..4 {
        mgr.create(&tp("orders", p), TopicId([p as u8 + 1; 16]), cfg.clone())
            .unwrap();
    }
    // Spread over both data dirs.
    let in_d1 = mgr
        .partitions()
        .iter()
        .filter(|h| h.data_dir() == d1.path())
        .count();
    assert_eq!(in_d1, 2);
    // 8 writers × 4 partitions, every append durable on return.
    std::thread::scope(|s| {
        for w in 0..8 {
            let mgr = &mgr;
            s.spawn(move || {
                for i in 0..25 {
                    let h = mgr.get(&tp("orders", (w + i) % 4)).unwrap();
                    h.append_as_leader_durable(
                        client_batch(2, T0),
                        LeaderEpoch(0),
                        LeaderOrigin::Client,
                    )
                    .unwrap();
                }
            });
        }
    });
    let stats = mgr.group_commit().stats();
    // An append already below the recovery point (another writer's sync, started after it,
    // covered it) asks for no sync of its own, so there may be fewer requests than appends.
    assert!(
        (1..=200).contains(&stats.requests),
        "{} requests",
        stats.requests
    );
    assert!(stats.syncs <= stats.requests);
    for p in 0..4 {
        let h = mgr.get(&tp("orders", p)).unwrap();
        let mut log = h.write();
        assert_eq!(log.log_end_offset(), Offset(100));
        assert_eq!(
            log.recovery_point(),
            Offset(100),
            "durable appends move the recovery point"
        );
        log.update_high_watermark(Offset(100));
    }
    mgr.shutdown().unwrap();
    assert!(d1.path().join(CLEAN_SHUTDOWN_FILE).exists());
    let rp = OffsetCheckpoint::new(d1.path().join(RECOVERY_POINT_CHECKPOINT))
        .read()
        .unwrap();
    assert_eq!(rp.len(), 2);
    assert!(rp.values().all(|o| *o == Offset(100)));

    // Clean reopen: nothing recovered, topic config kept, marker consumed.
    let (mgr, report) = manager(&[d1.path(), d2.path()]);
    assert_eq!((report.logs, report.unclean_logs), (4, 0));
    assert!(!d1.path().join(CLEAN_SHUTDOWN_FILE).exists());
    let h = mgr.get(&tp("orders", 2)).unwrap();
    assert_eq!(h.topic_id(), TopicId([3; 16]));
    assert_eq!(h.read().config().retention_ms, 123_456);
    assert_eq!(h.read().high_watermark(), Offset(100));
    h.append_as_leader_durable(client_batch(1, T0), LeaderEpoch(1), LeaderOrigin::Client)
        .unwrap();
    // Crash: no shutdown.
    drop(h);
    drop(mgr);
    let (mgr, report) = manager(&[d1.path(), d2.path()]);
    assert_eq!((report.logs, report.unclean_logs), (4, 4));
    let h = mgr.get(&tp("orders", 2)).unwrap();
    assert_eq!(h.read().log_end_offset(), Offset(101));
    let r = h
        .read()
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, false)
        .unwrap();
    assert!(r.records.is_some());
    // Delete: gone now and after a restart.
    drop(h);
    mgr.delete(&tp("orders", 2)).unwrap();
    assert!(mgr.get(&tp("orders", 2)).is_none());
    mgr.shutdown().unwrap();
    let (mgr, _) = manager(&[d1.path(), d2.path()]);
    assert_eq!(mgr.partitions().len(), 3);
    assert!(
        mgr.create(&tp("orders", 1), TopicId([9; 16]), LogConfig::default())
            .is_err(),
        "same partition, other topic id"
    );
}

/// Appends waited for one after another (a connection answering its acks=all requests in order)
/// share one sync: the first wait's sync covers every append made before it started, and the
/// later waits find their appends below the recovery point and sync nothing.
#[test]
fn appends_waited_for_in_turn_share_the_first_sync() {
    let d = tempfile::tempdir().unwrap();
    let (mgr, _) = manager(&[d.path()]);
    let p = tp("acks-all", 0);
    mgr.create(&p, TopicId([9; 16]), small_config()).unwrap();
    let h = mgr.get(&p).unwrap();
    let pending: Vec<_> = (0..3)
        .map(|i| {
            let (info, sync) = h
                .append_as_leader_unsynced(
                    client_batch(1, T0 + i),
                    LeaderEpoch(1),
                    LeaderOrigin::Client,
                )
                .unwrap();
            assert!(!info.duplicate);
            sync.expect("a new append has a sync to wait for")
        })
        .collect();
    let before = mgr.group_commit().stats().syncs;
    for p in pending {
        h.wait_durable(p).unwrap();
    }
    assert_eq!(
        mgr.group_commit().stats().syncs - before,
        1,
        "one sync for the three appends"
    );
    assert_eq!(h.read().recovery_point(), Offset(3));
    // A later append still gets its own sync.
    let (_, sync) = h
        .append_as_leader_unsynced(
            client_batch(1, T0 + 3),
            LeaderEpoch(1),
            LeaderOrigin::Client,
        )
        .unwrap();
    h.wait_durable(sync.unwrap()).unwrap();
    assert_eq!(mgr.group_commit().stats().syncs - before, 2);
    assert_eq!(h.read().recovery_point(), Offset(4));
}
