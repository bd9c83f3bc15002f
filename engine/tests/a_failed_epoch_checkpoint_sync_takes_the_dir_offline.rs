//! A failed sync of the `leader-epoch-checkpoint` while an append records a new epoch takes the
//! partition's data directory offline, as a failed sync of its `.log` does (Kafka's
//! `LogDirFailureChannel` takes any `IOException` of a checkpoint file).
//!
//! The checkpoint's write failures came back as the index crate's `Io` errors, which the manager
//! did not count as storage failures: the append failed, yet the directory stayed online with a
//! batch in its segment whose epoch the cache never recorded, and later appends were accepted.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::LeaderEpoch;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn a_failed_epoch_checkpoint_sync_takes_the_dir_offline() {
    let (_d, sim, _mgr, h) = sim_orders();
    h.append_as_leader_durable(keyed_batch("a"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path("leader-epoch-checkpoint"));
    assert!(
        h.append_as_leader_durable(keyed_batch("b"), LeaderEpoch(1), LeaderOrigin::Client)
            .is_err(),
        "the append whose epoch could not be checkpointed"
    );
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    assert!(
        h.check_online().is_err(),
        "a failed sync of the epoch checkpoint left the data dir online"
    );
    assert!(matches!(
        h.append_as_leader_durable(keyed_batch("c"), LeaderEpoch(1), LeaderOrigin::Client),
        Err(EngineError::LogDirOffline { .. })
    ));
}
