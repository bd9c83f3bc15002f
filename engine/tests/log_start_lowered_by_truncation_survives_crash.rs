//! A truncation that lowers the log start of a managed log (a mirror starting over at its
//! source's lower log start, a follower truncating below it) must leave the lowered value in the
//! data dir's `log-start-offset-checkpoint` before anything can be appended after it.
//!
//! It used to lower the log start in memory only: the checkpoint kept the older, higher value
//! until the next periodic checkpoint, so a crash in between reopened the log with a log start
//! above records appended (durably) after the truncation. Recovery then either hid them below
//! the log start (`min(log start, log end)`) or, with Kafka's rule of restarting a log whose end
//! is below its checkpointed log start at that log start, deleted them and skipped offsets a
//! mirror still had to copy (engine simulation seed 1592590383).

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::path::Path;

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "m".into(),
        partition: 0,
    }
}

/// A log with records 0..30 (durable, high watermark 30), its log start raised to `start` by
/// DeleteRecords and checkpointed.
fn log_with_deleted_records(sim: &SimStorage, dir: &Path, start: i64) -> LogManager {
    let mgr = sim_manager(sim, dir);
    mgr.create(&tp(), TopicId([7; 16]), small_config()).unwrap();
    let h = mgr.get(&tp()).unwrap();
    for i in 0..30 {
        h.append_as_leader_durable(
            keyed_batch(&format!("old{i}")),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    {
        let mut log = h.write();
        log.update_high_watermark(Offset(30));
        assert!(log.maybe_increment_log_start_offset(Offset(start)).unwrap());
    }
    mgr.checkpoint().unwrap();
    assert_eq!(checkpointed_log_start(sim, dir, &tp()), Some(Offset(start)));
    mgr
}

/// Appends `new0..new{n}` durably, crashes (unsynced bytes lost, no clean shutdown) and reopens;
/// returns the reopened manager.
fn append_crash_reopen(sim: &SimStorage, dir: &Path, mgr: LogManager, n: usize) -> LogManager {
    let h = mgr.get(&tp()).unwrap();
    for i in 0..n {
        h.append_as_leader_durable(
            keyed_batch(&format!("new{i}")),
            LeaderEpoch(1),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    let crashed = sim.crash(TornTail::None);
    drop(h);
    drop(mgr);
    sim_manager(&crashed, dir)
}

#[test]
fn records_appended_after_a_full_truncation_below_the_log_start_survive_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = log_with_deleted_records(&sim, d.path(), 20);
    // A mirror starts over at its source's log start, 5, below ours (20).
    mgr.get(&tp())
        .unwrap()
        .write()
        .truncate_fully_and_start_at(Offset(5))
        .unwrap();
    assert_eq!(
        checkpointed_log_start(&sim, d.path(), &tp()),
        Some(Offset(5)),
        "the lowered log start is checkpointed before the truncation returns"
    );
    let mgr = append_crash_reopen(&sim, d.path(), mgr, 8);
    let h = mgr.get(&tp()).unwrap();
    let log = h.read();
    assert_eq!(
        log.log_start_offset(),
        Offset(5),
        "log start after the crash"
    );
    assert_eq!(log.log_end_offset(), Offset(13), "log end after the crash");
    let want: Vec<(i64, String)> = (0..8).map(|i| (5 + i, format!("new{i}"))).collect();
    assert_eq!(
        values(&log, Offset(5)),
        want,
        "records appended after the truncation"
    );
}

#[test]
fn records_appended_after_a_truncation_below_the_log_start_survive_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    // The log start inside the first segment: a truncation to 15 keeps records 0..15.
    let mgr = log_with_deleted_records(&sim, d.path(), 20);
    let h = mgr.get(&tp()).unwrap();
    assert_eq!(h.read().segment_base_offsets().first(), Some(&Offset(0)));
    h.write().truncate_to(Offset(15)).unwrap();
    assert_eq!(h.read().log_start_offset(), Offset(15));
    assert_eq!(
        checkpointed_log_start(&sim, d.path(), &tp()),
        Some(Offset(15)),
        "the lowered log start is checkpointed before the truncation returns"
    );
    drop(h);
    let mgr = append_crash_reopen(&sim, d.path(), mgr, 8);
    let h = mgr.get(&tp()).unwrap();
    let log = h.read();
    assert_eq!(
        log.log_start_offset(),
        Offset(15),
        "log start after the crash"
    );
    assert_eq!(log.log_end_offset(), Offset(23), "log end after the crash");
    let want: Vec<(i64, String)> = (0..8).map(|i| (15 + i, format!("new{i}"))).collect();
    assert_eq!(
        values(&log, Offset(15)),
        want,
        "records appended after the truncation"
    );
}
