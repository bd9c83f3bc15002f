//! A storage failure that takes a data directory offline while the `__mirror_state` partition
//! holding a mirror partition's state lives in that same directory: the FAILED state cannot be
//! written. The partition is FAILED all the same — in memory only, not retried, naming the
//! directory and saying the state could not be persisted — as a restart leaves a partition whose
//! state partition is offline; operator actions on its topic answer the storage error.
//!
//! It used to stay in LOG_ALIGNMENT (the failure was recorded only if persisted), and every
//! `drive` pass tried the alignment again, each time refused.

use crate::common;

use common::{T0, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::error::EngineError;
use mirrorlog_mirror::manager::{MirrorError, PartitionStatus};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState};
use std::sync::Arc;

fn sorted(mut v: Vec<PartitionStatus>) -> Vec<PartitionStatus> {
    v.sort_by_key(|s| s.partition);
    v
}

#[test]
fn a_failure_whose_state_dir_went_offline_is_failed_in_memory() {
    // One data dir: every `__mirror_state` partition lives beside the mirrored ones.
    let common::SimWorld {
        src_dir: _a,
        dst_dir: b,
        src,
        sim,
        dst,
    } = common::sim_world();
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let clock = ManualClock::new(T0);
    let mirror = common::started_mirror(&src, &dst, store.clone(), clock.clone());
    // Failed over, then mirrored again: LOG_ALIGNMENT truncates each partition fully.
    // Partition 0's truncation fails writing its emptied epoch cache: the dir goes offline,
    // and with it every `__mirror_state` partition.
    common::fail_a_realignment(&mirror, &sim);
    assert!(dst.get(&tp(0)).unwrap().check_online().is_err());
    // Partition 1 either was aligned before (MIRRORING: its next fetch cannot be appended) or
    // failed its own alignment in the offline dir.
    mirror.fetch_round(0);

    let dir = b.path().display().to_string();
    let failed = sorted(mirror.describe());
    for s in &failed {
        assert_eq!(
            s.state,
            S::Failed,
            "partition {} is not FAILED: {s:?}",
            s.partition
        );
        let reason = s.failure.as_deref().unwrap();
        assert!(
            reason.contains(&dir) && reason.contains("could not be persisted"),
            "the reason names neither the offline dir nor the lost write: {reason}"
        );
        assert_eq!(s.retry_attempt, -1, "retried automatically: {s:?}");
    }
    // The store still holds what it last wrote: FAILED is in memory only.
    let stored = store
        .get(&PartitionMirrorState::new("m", [1; 16], 0).key())
        .unwrap();
    assert_ne!(stored.state, S::Failed);

    // No pass tries again, however long it waits.
    for hour in 1..=3 {
        clock.set(T0 + hour * 3_600_000);
        mirror.drive();
        mirror.fetch_round(0);
    }
    let later = sorted(mirror.describe());
    for (before, after) in failed.iter().zip(&later) {
        assert_eq!(after.state, S::Failed);
        assert_eq!(
            after.state_epoch, before.state_epoch,
            "partition {} was driven again",
            before.partition
        );
    }

    // Operator actions on the topic answer the storage error, as for a state partition
    // offline at start.
    for r in [
        mirror.stop_topic("orders"),
        mirror.recover_topic("orders").map(|_| ()),
    ] {
        assert!(
            matches!(
                r,
                Err(MirrorError::Engine(EngineError::LogDirOffline { .. }))
            ),
            "{r:?}"
        );
    }
    mirror.shutdown();
}
