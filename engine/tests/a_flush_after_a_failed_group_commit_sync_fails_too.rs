//! A durable append's group-commit sync fails; before its waiter takes the data directory
//! offline, another syncer of the same `.log` — a flush from `maintain`, a roll's seal — runs.
//! Linux reports a failed write-back once per open file description and drops the pages, so
//! that flush's `fdatasync` could return `Ok`, and the log would take its lost appends as
//! flushed (recovery point raised over them). A failed sync is sticky in the storage file, so
//! the flush fails with the same error.
//!
//! The window is reproduced without timing: the group commit is called directly with the
//! file a durable append syncs (the first half of `wait_durable`), which leaves the directory
//! online, as it is until that waiter returns.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn a_flush_after_a_failed_group_commit_sync_fails_too() {
    let (_d, sim, mgr, h) = sim_orders();
    let (info, pending) = h
        .append_as_leader_unsynced(keyed_batch("lost"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert!(pending.is_some());
    assert_eq!(info.last_offset, Offset(0));
    let file = h.read().active_log_file();
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(".log"));

    let failed = mgr.group_commit().sync(&file).unwrap_err();
    assert!(failed.to_string().contains("sync_data"), "{failed}");
    h.check_online()
        .expect("nothing took the directory offline yet");

    let recovery_point = h.read().recovery_point();
    let flushed = h.write().flush();
    match &flushed {
        Err(e) => assert!(e.to_string().contains("sync_data"), "{e}"),
        Ok(()) => panic!("the flush reported the lost append durable"),
    }
    assert!(!matches!(flushed, Err(EngineError::LogDirOffline { .. })));
    assert_eq!(
        h.read().recovery_point(),
        recovery_point,
        "the recovery point moved over the lost append"
    );
}
