//! Bug: `LogManager::maintain` works on a snapshot of the partitions and does not skip a log
//! that `LogManager::delete` marked deleted meanwhile. Retention then removes segment files at
//! their old paths (the directory was renamed `-delete` and removed), the removal fails with
//! ENOENT, and `maintain` treats that as a storage failure: the whole data directory goes
//! offline (every partition in it refuses appends with KAFKA_STORAGE_ERROR) because a topic was
//! deleted while the periodic upkeep ran.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A hang guard only, never a verdict.
const HANG_GUARD: Duration = Duration::from_secs(120);

#[test]
fn deleting_a_partition_during_maintenance_keeps_the_dir_online() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    // Retention at this first upkeep.
    cfg.initial_task_delay_ms = 0;
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let (mgr, _) = LogManager::open(cfg, storage, clock()).unwrap();
    let tp = |t: &str| TopicPartition {
        topic: t.into(),
        partition: 0,
    };
    let a = mgr
        .create(&tp("a"), TopicId([1; 16]), small_config())
        .unwrap();
    let mut retained = small_config();
    retained.retention_bytes = 1;
    let b = mgr.create(&tp("b"), TopicId([2; 16]), retained).unwrap();
    for _ in 0..100 {
        b.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    {
        let mut log = b.write();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        assert!(log.segment_count() >= 3, "segments for retention to delete");
    }
    drop(b);

    std::thread::scope(|s| {
        // `maintain` takes its snapshot of [a, b], then waits for a's lock ...
        let guard = a.write();
        let upkeep = s.spawn(|| mgr.maintain());
        std::thread::sleep(Duration::from_millis(300));
        // ... while b is deleted: renamed and removed (its final checkpoint then waits for a).
        let deletion = s.spawn(|| mgr.delete(&tp("b")));
        // Wait for the rename on a condition, not a fixed pause: on a loaded CI machine the
        // deletion thread may not have run at all after a few hundred milliseconds.
        let start = Instant::now();
        while d.path().join("b-0").exists() {
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: b-0 was never renamed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(guard);
        deletion.join().unwrap().unwrap();
        let _ = upkeep.join().unwrap();
    });
    assert_eq!(mgr.offline_dirs(), vec![], "the data dir stays online");
    a.append_as_leader_durable(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .expect("the other partition still takes appends");
}
