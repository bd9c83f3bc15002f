//! A checkpoint write that fails with an I/O error takes its data directory offline, as Kafka's
//! `CheckpointFileWithFailureHandler` hands any `IOException` to the `LogDirFailureChannel`, and
//! the other directories are still checkpointed. Running out of space keeps the directory
//! online (its previous checkpoint is intact; the next round writes it again), as a full disk
//! does for appends.
//!
//! Before, the first failing directory ended `LogManager::checkpoint`: the directories after it
//! were not checkpointed, and the failing one stayed online.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn a_failed_checkpoint_takes_only_its_dir_offline() {
    let dirs = TwoDirSim::new();
    let (mgr, _) = dirs.open();
    // One partition in each directory.
    let a = mgr
        .create(&orders(0), TopicId([7; 16]), small_config())
        .unwrap();
    let b = mgr
        .create(&orders(1), TopicId([7; 16]), small_config())
        .unwrap();
    assert_ne!(a.data_dir(), b.data_dir());
    let (first, second) = if a.data_dir() == dirs.d1.path() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    for h in [first, second] {
        h.append_as_leader_durable(keyed_batch("x"), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    // What the second directory's high-watermark checkpoint says of its partition.
    let second_hw = second.data_dir().join("replication-offset-checkpoint");
    let hw_line = |hw: i64| format!("orders {} {hw}\n", second.topic_partition().partition);
    let checkpointed = |line: &str| {
        dirs.sim
            .file_bytes(&second_hw)
            .is_some_and(|b| String::from_utf8_lossy(&b).contains(line))
    };
    second.write().maybe_increment_high_watermark(Offset(1));
    assert!(!checkpointed(&hw_line(1)));

    // Out of space in the first directory: an error, both stay online, the second is written.
    let first_dir = first.data_dir().to_string_lossy().into_owned();
    dirs.sim
        .inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path(first_dir.clone()));
    assert!(mgr.checkpoint().is_err());
    assert_eq!(dirs.sim.pending_faults(), 0, "the fault did not fire");
    assert!(
        first.check_online().is_ok(),
        "a full disk took the dir offline"
    );
    assert!(
        checkpointed(&hw_line(1)),
        "the second dir was not checkpointed"
    );

    // A failed sync in the first directory: it goes offline, the second is still written.
    second
        .append_as_leader_durable(keyed_batch("y"), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    second.write().maybe_increment_high_watermark(Offset(2));
    dirs.sim
        .inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(first_dir));
    assert!(mgr.checkpoint().is_err());
    assert_eq!(dirs.sim.pending_faults(), 0, "the fault did not fire");
    assert!(
        first.check_online().is_err(),
        "a failed checkpoint sync left the dir online"
    );
    assert!(second.check_online().is_ok());
    assert!(
        checkpointed(&hw_line(2)),
        "the second dir was not checkpointed"
    );
    // From now on the offline directory is skipped.
    mgr.checkpoint().unwrap();
}
