//! A full disk while an append records a new leader epoch in `leader-epoch-checkpoint` fails
//! the append with nothing of it applied, and the data directory stays online (a full disk is
//! the one storage failure it survives): once space returns, the retried batch is appended
//! once, at the offset the failed one would have had, with its epoch in the cache.
//!
//! The epoch was recorded after the batch reached the segment, so a write of the checkpoint that
//! failed with ENOSPC left the batch in the log — readable, its offset taken — while the epoch
//! cache lacked its epoch and the producer state never saw it: the producer's retry was
//! appended a second time, and the cache put the epoch's start at the retry. Kafka records the
//! epoch first (`UnifiedLog.append`: `maybeAssignEpochStartOffset` before the segment append).

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, ReplicaOrigin};
use mirrorlog_index::{EpochEntry, LeaderEpoch, Offset};
use mirrorlog_segment::Compression;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};

fn entry(epoch: i32, start: i64) -> EpochEntry {
    EpochEntry {
        epoch: LeaderEpoch(epoch),
        start_offset: Offset(start),
    }
}

fn no_space_on_the_epoch_checkpoint(sim: &SimStorage) {
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("leader-epoch-checkpoint"));
}

#[test]
fn a_leader_append_refused_for_a_full_disk_at_a_new_epoch_is_appended_once_on_retry() {
    let (_d, sim, _mgr, h) = sim_orders();
    h.append_as_leader_durable(
        producer_batch(1, 0, 0, 1, false, T0),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    no_space_on_the_epoch_checkpoint(&sim);
    let retried = producer_batch(1, 0, 1, 1, false, T0);
    assert!(
        h.append_as_leader_durable(retried.clone(), LeaderEpoch(1), LeaderOrigin::Client)
            .is_err(),
        "the append whose epoch could not be checkpointed"
    );
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    h.check_online()
        .expect("a full disk keeps the data dir online");
    {
        let log = h.read();
        assert_eq!(
            log.log_end_offset(),
            Offset(1),
            "the refused batch is not in the log: {:?}",
            values(&log, Offset(0))
        );
        assert_eq!(log.epoch_cache().entries(), &[entry(0, 0)]);
    }
    // Space is back: the producer retries.
    let info = h
        .append_as_leader_durable(retried, LeaderEpoch(1), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(info.first_offset, Offset(1));
    assert!(!info.duplicate, "the refused batch was never appended");
    let log = h.read();
    assert_eq!(
        values(&log, Offset(0)),
        vec![(0, "p1-0".to_string()), (1, "p1-1".to_string())]
    );
    assert_eq!(log.epoch_cache().entries(), &[entry(0, 0), entry(1, 1)]);
    assert_eq!(log.epoch_at(Offset(1)), Some(LeaderEpoch(1)));
}

#[test]
fn a_replica_append_refused_for_a_full_disk_at_a_new_epoch_keeps_only_whole_earlier_epochs() {
    let (_d, sim, _mgr, h) = sim_orders();
    h.write()
        .append_as_follower(
            replica_batch(0, 2, 0, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    // One fetch: more of epoch 0, then the first batches of epoch 1.
    let fetched = [
        replica_batch(2, 2, 0, Compression::None, T0),
        replica_batch(4, 2, 1, Compression::None, T0),
        replica_batch(6, 2, 1, Compression::None, T0),
    ]
    .concat();
    no_space_on_the_epoch_checkpoint(&sim);
    let r = h
        .write()
        .append_as_follower(fetched.clone().into(), ReplicaOrigin::Replication);
    assert!(
        r.is_err(),
        "the append whose epoch could not be checkpointed"
    );
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    h.check_online()
        .expect("a full disk keeps the data dir online");
    {
        let log = h.read();
        // Every batch in the log has its epoch in the cache; none of epoch 1 was written.
        assert_eq!(log.epoch_cache().entries(), &[entry(0, 0)]);
        assert_eq!(log.log_end_offset(), Offset(4));
    }
    // The follower fetches again from its log end.
    h.write()
        .append_as_follower(
            bytes::Bytes::from(fetched)
                .slice(replica_batch(2, 2, 0, Compression::None, T0).len()..),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    let log = h.read();
    assert_eq!(log.log_end_offset(), Offset(8));
    assert_eq!(log.epoch_cache().entries(), &[entry(0, 0), entry(1, 4)]);
    for o in 0..8 {
        assert_eq!(
            log.epoch_at(Offset(o)),
            Some(LeaderEpoch(if o < 4 { 0 } else { 1 })),
            "offset {o}"
        );
    }
}
