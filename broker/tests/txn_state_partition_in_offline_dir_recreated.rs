//! Bug: a `__transaction_state` partition whose data directory went offline while loading was
//! absent from the `LogManager`, so `TxnCoordinator::open` created it anew, empty, in the other
//! data directory: the transactional ids hashing to it lost their state (producer epochs,
//! open transactions), and the next start, the directory repaired, failed on the duplicate
//! partition directories. Kafka never recreates a replica of an offline log dir elsewhere.
//!
//! The engine refuses that `create` (`LogDirOffline`), and the coordinator leaves the partition
//! unloaded and opens (what it then answers: `txn_state_partition_offline_at_start.rs`): this
//! test checks that nothing is created in the other directory and that the next start loads.

use crate::common;

use common::two_dir_logs;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnOffsetsSink};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

struct Sink;

impl TxnOffsetsSink for Sink {
    fn partition_for(&self, _group_id: &str) -> i32 {
        0
    }
    fn complete_txn(&self, _: i64, _: i16, _: bool, _: &[i32]) {}
}

fn config() -> TxnConfig {
    TxnConfig {
        transaction_state_partitions: 4,
        ..TxnConfig::default()
    }
}

fn open_txn(logs: &Arc<LogManager>) -> anyhow::Result<Arc<TxnCoordinator>> {
    TxnCoordinator::open(logs.clone(), Arc::new(Sink), ManualClock::new(T0), config())
}

#[test]
fn a_state_partition_in_an_offline_dir_is_not_created_again_elsewhere() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    drop(open_txn(&logs).unwrap());
    let in_d2: TopicPartition = (0..4)
        .map(|p| TopicPartition {
            topic: "__transaction_state".into(),
            partition: p,
        })
        .find(|tp| logs.get(tp).unwrap().data_dir() == d2.path())
        .expect("a state partition in d2");
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();

    let bad = d2.path().join(in_d2.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    assert!(logs.offline_dirs().iter().any(|(p, _)| p == d2.path()));
    drop(open_txn(&logs).expect("the coordinator opens with a partition offline"));
    assert!(
        !d1.path().join(in_d2.to_string()).exists(),
        "{in_d2} was created again, empty, in the online dir"
    );
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();

    // The disk works again: one copy of each partition, the coordinator opens.
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    assert!(logs.offline_dirs().is_empty());
    drop(open_txn(&logs).unwrap());
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();
}
