//! DeleteRecords moves the log start and nothing else: Kafka's `maybeIncrementLogStartOffset`
//! trims the epoch cache and producer state, and the segments wholly below the new log start
//! stay until the next retention check (`deleteOldSegments` →
//! `deleteLogStartOffsetBreachedSegments`). The engine deleted them at once. Meanwhile nothing
//! below the log start is served: a read there is out of range, ListOffsets EARLIEST is the log
//! start and MAX_TIMESTAMP looks only at what is left, and a restart after a crash keeps the
//! checkpointed log start.

use crate::common;

use common::*;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OffsetLookup};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

const INITIAL_TASK_DELAY_MS: i64 = 30_000;

fn manager(sim: &SimStorage, data: &Path, clk: Arc<ManualClock>) -> LogManager {
    let mut cfg = LogManagerConfig::new(data);
    cfg.default_log_config = small_config();
    cfg.initial_task_delay_ms = INITIAL_TASK_DELAY_MS;
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clk).unwrap().0
}

fn deleted_files(sim: &SimStorage, dir: &Path) -> usize {
    sim.list_dir(dir)
        .unwrap()
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".deleted"))
        .count()
}

/// What a client sees of the log with its start at `start`.
fn check_served_from(h: &PartitionHandle, start: Offset) {
    let log = h.read();
    assert_eq!(log.log_start_offset(), start);
    let below = log.read(
        Offset(start.get() - 1),
        1 << 20,
        FetchIsolation::HighWatermark,
        true,
    );
    assert!(
        matches!(below, Err(EngineError::OffsetOutOfRange { .. })),
        "{below:?}"
    );
    assert!(
        log.read(start, 1 << 20, FetchIsolation::HighWatermark, true)
            .unwrap()
            .records
            .is_some()
    );
    let earliest = log.fetch_offset(OffsetLookup::Earliest).unwrap().unwrap();
    assert_eq!(earliest.0, start);
    // The segments below the log start hold the largest timestamps; what is left has `T0`.
    let max = log
        .fetch_offset(OffsetLookup::MaxTimestamp)
        .unwrap()
        .unwrap();
    assert_eq!((max.0, max.1), (start, TimestampMs(T0)));
    let by_time = log
        .fetch_offset(OffsetLookup::Timestamp(TimestampMs(T0)))
        .unwrap()
        .unwrap();
    assert_eq!(by_time.0, start);
}

#[test]
fn the_segments_below_the_new_log_start_go_at_the_next_retention_check() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let clk = clock();
    let mgr = manager(&sim, d.path(), clk.clone());
    let h = mgr
        .create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    let pdir = d.path().join("orders-0");
    let append = |ts: i64| {
        h.append_as_leader_durable(client_batch(3, ts), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    };
    while h.read().segment_count() < 3 {
        append(T0 + 1_000);
    }
    while h.read().segment_count() < 5 {
        append(T0);
    }
    let bases = h.read().segment_base_offsets();
    let start = Offset(bases[3].get() + 1);
    {
        let mut log = h.write();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        assert!(log.maybe_increment_log_start_offset(start).unwrap());
        assert_eq!(
            log.segment_base_offsets(),
            bases,
            "the segments below the log start stay until the retention check"
        );
    }
    assert_eq!(deleted_files(&sim, &pdir), 0, "nothing renamed `.deleted`");
    check_served_from(&h, start);
    mgr.maintain().unwrap();
    assert_eq!(
        h.read().segment_base_offsets(),
        bases,
        "not before the first retention check"
    );

    // A crash before the retention check: the log start is the checkpoint's.
    let crashed = sim.crash(TornTail::None);
    drop(h);
    drop(mgr);
    let mgr = manager(&crashed, d.path(), clk.clone());
    let h = mgr.get(&orders(0)).unwrap();
    assert_eq!(h.read().segment_base_offsets(), bases);
    check_served_from(&h, start);

    clk.advance(INITIAL_TASK_DELAY_MS);
    assert_eq!(mgr.maintain().unwrap(), 3, "the three segments below it");
    assert_eq!(h.read().segment_base_offsets(), bases[3..].to_vec());
    assert!(deleted_files(&crashed, &pdir) > 0, "renamed `.deleted`");
    check_served_from(&h, start);
}
