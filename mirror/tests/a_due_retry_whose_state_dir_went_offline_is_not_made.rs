//! A partition FAILED (retryable, persisted) before its `__mirror_state` partition's data
//! directory went offline: when its retry falls due, the retry cannot be recorded. It is not
//! made, and the partition stays FAILED in memory only, not retryable, naming the directory —
//! rather than keep its due retry and try it, refused, on every `drive` pass.

mod common;

use common::{Dest, T0, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager, PartitionStatus};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition: p,
    }
}

fn produce(m: &LogManager, p: i32, n: usize) {
    let mut b = BatchBuilder::new().compression(Compression::None);
    for i in 0..n {
        b.append(TimestampMs(T0 + i as i64), None, Some(b"v"), &[]);
    }
    let h = m.get(&tp(p)).unwrap();
    let mut log = h.write();
    log.append_as_leader(b.build().into_bytes(), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn status(m: &MirrorManager, p: i32) -> PartitionStatus {
    m.describe().into_iter().find(|s| s.partition == p).unwrap()
}

#[test]
fn a_due_retry_whose_state_dir_went_offline_is_not_made() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    // One data dir: every `__mirror_state` partition lives beside the mirrored ones.
    let dst = Arc::new(
        LogManager::open(
            LogManagerConfig::new(b.path()),
            storage,
            ManualClock::new(T0),
        )
        .unwrap()
        .0,
    );
    for p in 0..2 {
        src.create(&tp(p), TopicId([1; 16]), LogConfig::default())
            .unwrap();
        produce(&src, p, 5);
    }
    let clock = ManualClock::new(T0);
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        clock.clone(),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    common::catch_up(&mirror);

    // Partition 0 runs out of space appending: FAILED, retryable, persisted (the dir stays
    // online).
    produce(&src, 0, 3);
    sim.inject(
        Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("orders-0/00000000000000000000.log"),
    );
    mirror.fetch_round(0);
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    let failed = status(&mirror, 0);
    assert_eq!(failed.state, S::Failed, "{failed:?}");
    assert!(failed.retry_attempt > 0, "{failed:?}");
    assert!(dst.get(&tp(0)).unwrap().check_online().is_ok());

    // Then an I/O error appending to partition 1 takes the dir offline, `__mirror_state` with it.
    produce(&src, 1, 3);
    sim.inject(
        Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path("orders-1/00000000000000000000.log"),
    );
    mirror.fetch_round(0);
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    assert!(dst.get(&tp(1)).unwrap().check_online().is_err());

    // Partition 0's retry falls due: it cannot be recorded, so it is given up.
    clock.set(T0 + 3_600_000);
    mirror.drive();
    let given_up = status(&mirror, 0);
    assert_eq!(given_up.state, S::Failed, "{given_up:?}");
    assert_eq!(given_up.retry_attempt, -1, "still retried: {given_up:?}");
    let reason = given_up.failure.clone().unwrap();
    assert!(
        reason.contains(&b.path().display().to_string())
            && reason.contains("could not be persisted"),
        "{reason}"
    );
    for hour in 2..=4 {
        clock.set(T0 + hour * 3_600_000);
        mirror.drive();
        mirror.fetch_round(0);
    }
    assert_eq!(status(&mirror, 0), given_up, "partition 0 was driven again");
    mirror.shutdown();
}
