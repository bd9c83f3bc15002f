//! An I/O error reading a data directory's `log-start-offset-checkpoint` (or
//! `recovery-point-offset-checkpoint`) at start takes that directory offline, as Kafka's
//! `CheckpointFileWithFailureHandler.read` reports it to the `LogDirFailureChannel` (so does a
//! file that reads but does not parse: `corrupt_offset_checkpoint_blocks_startup.rs`).
//!
//! The I/O error was ignored like a garbled file: the partitions opened with their log start at
//! their first segment, so records removed by DeleteRecords were served again, and the start's
//! own checkpoint then wrote that lower log start over the good file — one transient read error
//! undid the deletion for good.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::LOG_START_CHECKPOINT;
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn a_log_start_checkpoint_that_fails_to_read_takes_its_dir_offline_and_is_kept() {
    let (d, sim, mgr, h) = sim_orders();
    for i in 0..10 {
        h.append_as_leader_durable(
            keyed_batch(&format!("v{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    {
        let mut log = h.write();
        log.update_high_watermark(Offset(10));
        assert!(log.maybe_increment_log_start_offset(Offset(6)).unwrap());
    }
    drop(h);
    mgr.shutdown().unwrap();

    sim.inject(Fault::new(IoOp::ReadAt, FaultKind::Eio).on_path(LOG_START_CHECKPOINT));
    let mgr = sim_manager(&sim, d.path());
    assert_eq!(sim.pending_faults(), 0, "the checkpoint was not read");
    assert!(
        mgr.get(&orders(0)).is_none(),
        "the partition was served with log start {}",
        mgr.get(&orders(0)).unwrap().read().log_start_offset()
    );
    assert_eq!(mgr.offline_dirs().len(), 1, "the data dir stayed online");
    drop(mgr);

    // The storage reads again: the log start DeleteRecords set is still there.
    let mgr = sim_manager(&sim, d.path());
    assert_eq!(
        mgr.get(&orders(0)).unwrap().read().log_start_offset(),
        Offset(6)
    );
}
