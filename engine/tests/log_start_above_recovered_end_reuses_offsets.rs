//! Bug: when the checkpointed log start is above the log end found on open (the tail past it
//! was lost in a crash: the high watermark, and so DeleteRecords, may run ahead of the recovery
//! point), `PartitionLog::open` lowers the log start to the log end (log/mod.rs: "A checkpointed
//! log start can be above the end ... log_start.min(log_end)"). New records then get offsets
//! below the old log start — offsets consumers already committed past — so they are never
//! consumed. Kafka's `LogLoader.recoverLog` (`deleteSegmentsIfLogStartGreaterThanLogEnd`)
//! deletes every segment and starts an empty log at the checkpointed log start instead.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn a_log_start_above_the_recovered_end_starts_an_empty_log_there() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for _ in 0..10 {
        log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    assert_eq!(log.log_end_offset(), Offset(20));
    log.close().unwrap();

    // The log-start checkpoint says 30: records up to 30 were consumed and deleted before the
    // crash that lost the tail from 20 on.
    let (mut log, _) = reopen_unclean(
        dir.path(),
        clock,
        OpenOffsets {
            log_start_offset: Offset(30),
            recovery_point: Offset(0),
            high_watermark: Offset(30),
        },
    );
    assert_eq!(log.log_start_offset(), Offset(30), "log start kept");
    assert_eq!(
        log.log_end_offset(),
        Offset(30),
        "log restarts at the log start"
    );
    let info = log
        .append_as_leader(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(
        info.first_offset,
        Offset(30),
        "no offset below the log start is reused"
    );
}

/// The same through a log manager: DeleteRecords checkpoints a log start inside a tail that was
/// never synced (the high watermark runs ahead of the recovery point), and a crash loses it.
#[test]
fn deleted_records_lost_in_a_crash_are_not_handed_out_again() {
    use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
    use mirrorlog_index::{TopicId, TopicPartition};
    use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
    use std::sync::Arc;

    let d = tempfile::tempdir().unwrap();
    let open = |sim: &SimStorage| {
        let mut cfg = LogManagerConfig::new(d.path());
        cfg.default_log_config = small_config();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        LogManager::open(cfg, storage, clock()).unwrap().0
    };
    let tp = TopicPartition {
        topic: "d".into(),
        partition: 0,
    };
    let sim = SimStorage::new();
    let mgr = open(&sim);
    let h = mgr.create(&tp, TopicId([3; 16]), small_config()).unwrap();
    for _ in 0..5 {
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    for _ in 0..10 {
        h.append_as_leader_unsynced(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    {
        let mut log = h.write();
        log.update_high_watermark(Offset(30));
        assert!(log.maybe_increment_log_start_offset(Offset(25)).unwrap());
    }
    // The broker's DeleteRecords checkpoints the new log start.
    mgr.checkpoint().unwrap();
    let crashed = sim.crash(TornTail::None);
    drop(h);
    drop(mgr);

    let mgr = open(&crashed);
    let h = mgr.get(&tp).unwrap();
    assert_eq!(h.read().log_start_offset(), Offset(25), "log start kept");
    assert_eq!(
        h.read().log_end_offset(),
        Offset(25),
        "log restarts at the log start"
    );
    let info = h
        .append_as_leader_durable(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(
        info.first_offset,
        Offset(25),
        "no offset below the log start is reused"
    );
}
