//! A storage failure in LOG_ALIGNMENT's truncation (a topic started again after a stop, copied
//! from scratch) is a failure of the destination's data directory, as Kafka treats an
//! `IOException` in a truncation: the directory goes offline, the partition does not go on to
//! MIRRORING, and no partition of that directory is written by the mirror afterwards.
//!
//! The truncation's error used to fail the partition only: the directory stayed online, the
//! half-truncated log kept its high watermark above its end, and the other partitions of the
//! directory went on appending (the mirror appends through the log's write guard, which knows
//! nothing of its directory; it now looks first).

use crate::common;

use common::{T0, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId};
use mirrorlog_mirror::manager::MirrorManager;
use mirrorlog_mirror::partition::{align_to_last_mirror_epoch, apply_fetched};
use mirrorlog_mirror::source::PartitionData;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::sync::Arc;

fn produce(m: &LogManager, p: i32, n: usize) {
    common::produce_to(m, &tp(p), b"v", n);
}

#[test]
fn a_failed_log_alignment_truncation_takes_the_dir_offline() {
    let common::SimWorld {
        src_dir: _a,
        dst_dir: _b,
        src,
        sim,
        dst,
    } = common::sim_world();
    let mirror = common::started_mirror(
        &src,
        &dst,
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        ManualClock::new(T0),
    );
    // Failover, then the topic is mirrored again: LOG_ALIGNMENT copies it from scratch (no last
    // mirror epoch), truncating each partition fully. Partition 0's records are gone by the time
    // its emptied epoch cache is written.
    common::fail_a_realignment(&mirror, &sim);
    let d0 = dst.get(&tp(0)).unwrap();
    assert!(
        d0.check_online().is_err(),
        "a failed LOG_ALIGNMENT truncation left the data dir online"
    );
    {
        let log = d0.read();
        assert!(log.high_watermark() <= log.log_end_offset());
        assert!(log.epoch_cache().is_empty());
    }
    let state0 = |m: &MirrorManager| {
        m.describe()
            .into_iter()
            .find(|s| s.partition == 0)
            .unwrap()
            .state
    };
    assert_ne!(state0(&mirror), S::Mirroring);

    // Nothing more is written into the offline directory, by either partition.
    let ends = || {
        (0..2)
            .map(|p| dst.get(&tp(p)).unwrap().read().log_end_offset())
            .collect::<Vec<Offset>>()
    };
    let before = ends();
    for p in 0..2 {
        produce(&src, p, 3);
    }
    for _ in 0..3 {
        mirror.drive();
        mirror.fetch_round(0);
    }
    assert_eq!(ends(), before, "the mirror wrote into an offline data dir");
    assert_ne!(state0(&mirror), S::Mirroring);
    mirror.shutdown();
}

#[test]
fn no_fetched_batch_is_appended_into_a_dir_a_failed_alignment_took_offline() {
    let b = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let dst = LogManager::open(
        LogManagerConfig::new(b.path()),
        storage,
        ManualClock::new(T0),
    )
    .unwrap()
    .0;
    let read_only = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    for p in 0..2 {
        dst.create(&tp(p), TopicId([1; 16]), read_only.clone())
            .unwrap();
    }
    let batch = |base: i64| {
        BatchBuilder::new()
            .base_offset(Offset(base))
            .partition_leader_epoch(LeaderEpoch(0))
            .record(TimestampMs(T0), None, Some(b"v"))
            .build()
            .into_bytes()
    };
    let data = |base: i64| PartitionData {
        current_leader: None,
        topic: "orders".into(),
        partition: 1,
        error: 0,
        high_watermark: Offset(base + 1),
        log_start_offset: Offset(0),
        diverging_epoch: None,
        records: batch(base),
    };
    let (d0, d1) = (dst.get(&tp(0)).unwrap(), dst.get(&tp(1)).unwrap());
    let mut p0 = PartitionData {
        partition: 0,
        ..data(0)
    };
    for base in 0..3 {
        p0.records = batch(base);
        apply_fetched(&d0, Offset(base), &p0).unwrap();
    }
    apply_fetched(&d1, Offset(0), &data(0)).unwrap();
    assert_eq!(d1.read().log_end_offset(), Offset(1));

    sim.inject(
        Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path("orders-0/leader-epoch-checkpoint"),
    );
    assert!(align_to_last_mirror_epoch(&d0, LeaderEpoch::NONE).is_err());
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    assert!(d1.check_online().is_err());
    assert!(apply_fetched(&d1, Offset(1), &data(1)).is_err());
    assert_eq!(
        d1.read().log_end_offset(),
        Offset(1),
        "a fetched batch was appended into an offline data dir"
    );
}
