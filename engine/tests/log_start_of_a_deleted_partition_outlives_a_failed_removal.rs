//! A partition deleted, then created again under the same name, must not inherit the deleted
//! log's log start from the data dir's `log-start-offset-checkpoint`.
//!
//! `LogManager::delete` rewrote the checkpoints only after the renamed directory was removed:
//! when a removal failed, the checkpoint kept the deleted log's entry. A new partition of that
//! name (placed in the same dir, its offsets from 0) then had, until the next periodic
//! checkpoint, a checkpointed log start far above its records: a crash in that window restarted
//! it empty at the stale log start (a checkpointed log start above the recovered end is read as
//! a lost tail), losing records acknowledged as durable. As Kafka's `asyncDelete`, the
//! checkpoints are written once the directory is renamed, before anything is removed. (A failed
//! removal now takes the dir offline, as Kafka's `UnifiedLog.delete`; the partition is created
//! again after a restart brings it back.)

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, TornTail};
use std::sync::Arc;

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "m".into(),
        partition: 0,
    }
}

fn append_durable(mgr: &LogManager, n: usize, tag: &str) {
    let h = mgr.get(&tp()).unwrap();
    for i in 0..n {
        h.append_as_leader_durable(
            keyed_batch(&format!("{tag}{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
}

#[test]
fn a_recreated_partition_keeps_its_durable_records_after_a_failed_removal_and_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    // With a `file.delete.delay.ms` of 0 the renamed directory is removed within the delete.
    let mut cfg = LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    cfg.default_log_config.file_delete_delay_ms = 0;
    let mgr = LogManager::open(cfg, Arc::new(sim.clone()), clock())
        .unwrap()
        .0;
    mgr.create(&tp(), TopicId([7; 16]), small_config()).unwrap();
    append_durable(&mgr, 30, "old");
    {
        let h = mgr.get(&tp()).unwrap();
        let mut log = h.write();
        log.update_high_watermark(Offset(30));
        assert!(log.maybe_increment_log_start_offset(Offset(20)).unwrap());
    }
    mgr.checkpoint().unwrap();

    // The rename succeeds; removing the renamed directory's files fails.
    sim.inject(Fault {
        path_contains: Some("-delete".into()),
        ..Fault::new(IoOp::Remove, FaultKind::Eio)
    });
    assert!(mgr.delete(&tp()).is_err());
    assert_eq!(
        mgr.offline_dirs().len(),
        1,
        "as Kafka's `UnifiedLog.delete`"
    );
    let stale = checkpointed_log_start(&sim, d.path(), &tp());
    assert_eq!(
        stale, None,
        "the deleted log's log start is still checkpointed"
    );

    // A crash; the restart brings the dir back (its `-delete` directory queued again).
    let sim = sim.crash(TornTail::None);
    drop(mgr);
    let mgr = sim_manager(&sim, d.path());
    mgr.create(&tp(), TopicId([8; 16]), small_config()).unwrap();
    append_durable(&mgr, 5, "new");
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    let mgr = sim_manager(&crashed, d.path());
    let h = mgr.get(&tp()).unwrap();
    let log = h.read();
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset()),
        (Offset(0), Offset(5)),
        "durable records of the new partition were lost"
    );
}
