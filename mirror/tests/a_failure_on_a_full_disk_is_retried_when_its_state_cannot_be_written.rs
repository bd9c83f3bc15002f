//! A full disk under the destination, where the `__mirror_state` partitions live too: the
//! mirror's append fails with ENOSPC, and so does the write of the FAILED state that records it.
//! A full disk keeps the data directory online (nothing else is wrong with it), so space may
//! return at any moment: the partition is FAILED in memory, retried with backoff as any failure,
//! its reason naming the storage error; a retry whose own state write is refused is one more
//! failed attempt, with a longer backoff. Once space returns, the retry is recorded over the
//! stored state and the partition mirrors on, byte for byte.
//!
//! It used to stay MIRRORING with no failure shown (the failure was recorded only if persisted),
//! fetched again at once, every round, each append refused; and a retry whose state write was
//! refused was made again at every `drive` pass (every 50 ms), never counted.

use crate::common;

use common::{T0, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_mirror::manager::PartitionStatus;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
use std::sync::Arc;

fn partition0(mirror: &mirrorlog_mirror::manager::MirrorManager) -> PartitionStatus {
    mirror
        .describe()
        .into_iter()
        .find(|s| s.partition == 0)
        .unwrap()
}

#[test]
fn a_failure_on_a_full_disk_is_retried_when_its_state_cannot_be_written() {
    // One data dir: the `__mirror_state` partitions live beside the mirrored ones.
    let common::SimWorld {
        src_dir: _a,
        dst_dir: _b,
        src,
        sim,
        dst,
    } = common::sim_world();
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let clock = ManualClock::new(T0);
    let mirror = common::started_mirror(&src, &dst, store.clone(), clock.clone());
    let key = PartitionMirrorState::new("m", [1; 16], 0).key();
    let stored_before = store.get(&key).unwrap();
    assert_eq!(stored_before.state, S::Mirroring);

    // The source moves on; the disk is full for the append and for the state write after it.
    common::produce_to(&src, &tp(0), b"more", 5);
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("orders-0/"));
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("__mirror_state"));
    mirror.fetch_round(0);
    assert_eq!(sim.pending_faults(), 0, "a fault did not fire");

    let failed = partition0(&mirror);
    assert_eq!(failed.state, S::Failed, "{failed:?}");
    let reason = failed.failure.as_deref().unwrap();
    assert!(
        reason.contains("No space left on device") && reason.contains("could not be persisted"),
        "the reason names neither the storage error nor the lost write: {reason}"
    );
    assert_eq!(failed.retry_attempt, 1, "retried automatically: {failed:?}");
    assert_eq!(
        store.get(&key).unwrap(),
        stored_before,
        "nothing was stored"
    );
    // FAILED: not fetched meanwhile.
    assert_eq!(mirror.fetch_round(0), 0);

    // The retry is due, and its state write is refused too: one more failed attempt, with a
    // longer backoff — not a retry at every pass.
    clock.set(T0 + 60_000);
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("__mirror_state"));
    mirror.drive();
    assert_eq!(sim.pending_faults(), 0, "the retry wrote no state");
    let again = partition0(&mirror);
    assert_eq!(again.state, S::Failed, "{again:?}");
    assert_eq!(again.retry_attempt, 2, "{again:?}");
    assert!(
        again
            .failure
            .as_deref()
            .unwrap()
            .contains("No space left on device"),
        "{again:?}"
    );
    mirror.drive();
    assert_eq!(
        partition0(&mirror).state,
        S::Failed,
        "retried again before its backoff"
    );

    // Space returns: the next retry is recorded over the stored state and the partition
    // catches up, byte for byte.
    clock.set(T0 + 120_000);
    common::catch_up(&mirror);
    let done = partition0(&mirror);
    assert_eq!(done.state, S::Mirroring, "{done:?}");
    assert_eq!(done.failure, None, "{done:?}");
    assert_eq!(store.get(&key).unwrap().state, S::Mirroring);
    assert_eq!(
        common::log_bytes(&dst.get(&tp(0)).unwrap()),
        common::log_bytes(&src.get(&tp(0)).unwrap())
    );
    mirror.shutdown();
}
