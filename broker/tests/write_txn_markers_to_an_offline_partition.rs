//! Bug: WriteTxnMarkers (API 27) for a partition whose data directory went offline before its
//! log was loaded answered UNKNOWN_TOPIC_OR_PARTITION (the partition simply had no log); Kafka
//! answers KAFKA_STORAGE_ERROR for a replica in an offline log dir, as this broker's Produce,
//! Fetch and ListOffsets do, and the Admin client's `abortTransaction` reports the disk, not a
//! missing topic.

use crate::common;

use common::txn::{NoGroups, abort_marker};
use kafka_protocol::ResponseError;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

fn open(dirs: &[&Path], sim: &SimStorage, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    let mut config = LogManagerConfig::new(dirs[0]);
    config.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.recovery_threads = 1;
    let (logs, _) = LogManager::open(config, Arc::new(sim.clone()), clock.clone()).unwrap();
    Arc::new(logs)
}

fn close(logs: Arc<LogManager>) {
    Arc::try_unwrap(logs)
        .map_err(|_| "log manager still shared")
        .unwrap()
        .shutdown()
        .unwrap();
}

#[test]
fn a_marker_for_a_partition_of_an_offline_dir_is_a_storage_error() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let clock = ManualClock::new(1_700_000_000_000);
    // `__transaction_state` goes to d1 alone, so that d2 failing leaves the coordinator whole.
    let logs = open(&[d1.path()], &sim, &clock);
    let txn = TxnCoordinator::open(
        logs.clone(),
        Arc::new(NoGroups),
        clock.clone(),
        TxnConfig::default(),
    )
    .unwrap();
    drop(txn);
    close(logs);

    let logs = open(&[d1.path(), d2.path()], &sim, &clock);
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = logs
        .create(&tp, TopicId([3; 16]), LogConfig::default())
        .unwrap();
    assert_eq!(h.data_dir(), d2.path(), "the emptier directory");
    drop(h);
    close(logs);

    let bad = d2.path().join("orders-0");
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let logs = open(&[d1.path(), d2.path()], &sim, &clock);
    assert!(logs.get(&tp).is_none(), "its load failed");
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();
    assert_eq!(
        abort_marker(&txn, "orders", 42, 0),
        ResponseError::KafkaStorageError.code()
    );
    assert_eq!(
        abort_marker(&txn, "nope", 42, 0),
        ResponseError::UnknownTopicOrPartition.code(),
        "a partition no directory holds is still unknown"
    );
}
