//! A durable append whose wait comes after a truncation of its log is not acknowledged.
//!
//! The scenario (found in review): append A is written into the active segment, its sync not
//! run yet; a truncation below A (a failback's log alignment, a follower's divergence) deletes
//! that segment and makes an older one active again; B is appended at the offset A had. A's wait
//! used to sync the deleted file and mark A's offsets flushed, lifting the recovery point above
//! B's unsynced bytes; B's wait then found itself below the recovery point and returned without
//! a sync, and a crash lost B although it had been acknowledged as durable. Now A's wait fails
//! with `TruncatedBeforeDurable` (A may be gone) and leaves the recovery point alone, and B's
//! wait syncs B.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn manager(sim: &SimStorage, dir: &Path) -> LogManager {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    LogManager::open(cfg, storage, clock()).unwrap().0
}

fn batch(value: &str) -> Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(T0), Some(b"k"), Some(value.as_bytes()), &[]);
    b.build().into_bytes()
}

#[test]
fn a_wait_after_a_truncation_fails_and_the_reappended_batch_is_synced() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager(&sim, d.path());
    let t = TopicPartition {
        topic: "a".into(),
        partition: 0,
    };
    mgr.create(&t, TopicId([1; 16]), small_config()).unwrap();
    let h = mgr.get(&t).unwrap();
    for i in 0..10 {
        h.append_as_leader_durable(
            batch(&format!("old{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    // Segment 0 sealed (synced), segment 10 active.
    h.write().roll(Offset(10)).unwrap();
    // A: written into segment 10, its sync not run yet.
    let (ia, pa) = h
        .append_as_leader_unsynced(batch("A"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(ia.first_offset, Offset(10));
    // A truncation into segment 0 (segment 10 deleted, segment 0 active again), then new appends.
    h.write().truncate_to(Offset(5)).unwrap();
    let (ib, pb) = h
        .append_as_leader_unsynced(
            batch("B-must-survive"),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    assert_eq!(ib.first_offset, Offset(5));
    for i in 0..10 {
        h.append_as_leader_unsynced(
            batch(&format!("c{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    assert_eq!(h.read().log_end_offset(), Offset(16));
    let rp = h.read().recovery_point();
    match h.wait_durable(pa.unwrap()) {
        Err(EngineError::TruncatedBeforeDurable { last_offset, .. }) => {
            assert_eq!(last_offset, Offset(10))
        }
        other => panic!("A was truncated away; its wait must not succeed: {other:?}"),
    }
    assert_eq!(
        h.read().recovery_point(),
        rp,
        "a failed wait leaves the recovery point alone"
    );
    let syncs = sim.syncs_completed();
    h.wait_durable(pb.unwrap()).unwrap();
    assert!(sim.syncs_completed() > syncs, "B's wait ran a sync");
    // "Returned Ok means the batch survives a crash".
    let sim2 = sim.crash(TornTail::None);
    drop(h);
    drop(mgr);
    let mgr = manager(&sim2, d.path());
    let h = mgr.get(&t).unwrap();
    let got = values(&h.read(), Offset(5));
    assert!(
        got.first()
            .is_some_and(|(o, v)| *o == 5 && v == "B-must-survive"),
        "B was acknowledged durable; after the crash offset 5 holds {:?} (log end {})",
        got.first(),
        h.read().log_end_offset()
    );
}
