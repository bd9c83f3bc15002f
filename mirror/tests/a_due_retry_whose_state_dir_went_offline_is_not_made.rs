//! A partition FAILED (retryable, persisted) before its `__mirror_state` partition's data
//! directory went offline: when its retry falls due, the retry cannot be recorded. It is not
//! made, and the partition stays FAILED in memory only, not retryable, naming the directory —
//! rather than keep its due retry and try it, refused, on every `drive` pass.

use crate::common;

use common::{T0, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_mirror::manager::{MirrorManager, PartitionStatus};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
use std::sync::Arc;

fn produce(m: &LogManager, p: i32, n: usize) {
    common::produce_to(m, &tp(p), b"v", n);
}

fn status(m: &MirrorManager, p: i32) -> PartitionStatus {
    m.describe().into_iter().find(|s| s.partition == p).unwrap()
}

#[test]
fn a_due_retry_whose_state_dir_went_offline_is_not_made() {
    // One data dir: every `__mirror_state` partition lives beside the mirrored ones.
    let common::SimWorld {
        src_dir: _a,
        dst_dir: b,
        src,
        sim,
        dst,
    } = common::sim_world();
    let clock = ManualClock::new(T0);
    let mirror = common::started_mirror(
        &src,
        &dst,
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        clock.clone(),
    );

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
