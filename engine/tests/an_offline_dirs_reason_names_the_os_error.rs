//! The reason a data directory goes offline names the operating system's error, and so does the
//! error every later use of the directory answers (which the broker logs and passes on).
//!
//! A checkpoint or index file's failure is the index crate's `Io` error, whose message names the
//! call and the file and keeps the OS error as its source only; the reasons were written with
//! `{e}` and read "I/O error during write_at of …/leader-epoch-checkpoint.tmp" with no cause (a
//! destination restarted on a full disk went offline with exactly that message).

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

/// The OS error text of `errno`, as the standard library renders it.
fn os_error(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// The one offline directory's reason.
fn offline_reason(mgr: &LogManager) -> String {
    let dirs = mgr.offline_dirs();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].1.clone()
}

#[test]
fn an_eio_syncing_the_epoch_checkpoint_is_named_in_the_offline_reason() {
    let (_d, sim, mgr, h) = sim_orders();
    h.append_as_leader_durable(keyed_batch("a"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path("leader-epoch-checkpoint"));
    assert!(
        h.append_as_leader_durable(keyed_batch("b"), LeaderEpoch(1), LeaderOrigin::Client)
            .is_err()
    );
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    let eio = os_error(5);
    let reason = offline_reason(&mgr);
    assert!(reason.contains("leader-epoch-checkpoint"), "{reason}");
    assert!(
        reason.contains(&eio),
        "the reason does not name {eio:?}: {reason}"
    );
    match h.append_as_leader_durable(keyed_batch("c"), LeaderEpoch(1), LeaderOrigin::Client) {
        Err(e @ EngineError::LogDirOffline { .. }) => {
            assert!(e.to_string().contains(&eio), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_full_disk_writing_the_epoch_checkpoint_mid_truncation_is_named_in_the_offline_reason() {
    let (_d, sim, mgr, h) = sim_orders();
    h.append_as_leader_durable(keyed_batch("a"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    h.append_as_leader_durable(keyed_batch("b"), LeaderEpoch(1), LeaderOrigin::Client)
        .unwrap();
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path("leader-epoch-checkpoint"));
    // Removing epoch 1's entry rewrites the checkpoint.
    assert!(h.write().truncate_to(Offset(1)).is_err());
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    let enospc = os_error(28);
    let reason = offline_reason(&mgr);
    assert!(reason.contains("leader-epoch-checkpoint"), "{reason}");
    assert!(
        reason.contains(&enospc),
        "the reason does not name {enospc:?}: {reason}"
    );
}
