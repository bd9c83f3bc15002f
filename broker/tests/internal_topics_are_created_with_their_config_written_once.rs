//! The coordinators pin their internal topics' retention (`keep_every_record`: `retention.ms`
//! and `retention.bytes` −1 as the topic's own settings). They created each partition with the
//! values but not as the topic's own settings, then pinned it: a second `topic.config` write,
//! two syncs more, on every `__consumer_offsets` and `__transaction_state` partition of every
//! fresh broker's start (32 of the ~140 syncs before a new broker answered; on a disk, each
//! costs a flush). Now each partition is created pinned, so a coordinator's first open syncs
//! exactly what creating its partitions does, and the topic still keeps every record.
//!
//! Counted on simulated storage, which counts completed syncs.

use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnOffsetsSink};
use mirrorlog_engine::clock::{Clock, ManualClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{SimStorage, Storage};
use std::sync::Arc;

struct NoOffsets;

impl TxnOffsetsSink for NoOffsets {
    fn partition_for(&self, _group_id: &str) -> i32 {
        0
    }
    fn complete_txn(&self, _producer_id: i64, _epoch: i16, _commit: bool, _partitions: &[i32]) {}
}

fn sim_logs(dir: &std::path::Path) -> (SimStorage, Arc<LogManager>, Arc<ManualClock>) {
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let clock = ManualClock::new(1_700_000_000_000);
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let (logs, _) = LogManager::open(LogManagerConfig::new(dir), storage, dyn_clock).unwrap();
    (sim, Arc::new(logs), clock)
}

/// Opens a coordinator (`open`) twice over, each on fresh simulated storage: once with
/// `topic`'s `n` partitions created beforehand, pinned, by the test, once with nothing. The
/// coordinator's own writes (a record it stores at every open) cost the same in both; the
/// creation of the partitions must cost the second open exactly what it cost the test.
fn assert_a_fresh_open_syncs_only_the_creation(
    topic: &str,
    n: i32,
    open: impl Fn(Arc<LogManager>, Arc<ManualClock>),
) {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sim, logs, clock) = sim_logs(dirs.0.path());
    let before = sim.syncs_completed();
    let pinned = LogConfig::default().keeping_every_record().unwrap();
    for p in 0..n {
        let tp = TopicPartition {
            topic: topic.into(),
            partition: p,
        };
        logs.create(&tp, TopicId([9; 16]), pinned.clone()).unwrap();
    }
    let creating = sim.syncs_completed() - before;
    let before = sim.syncs_completed();
    open(logs, clock);
    let own = sim.syncs_completed() - before;
    let (sim, logs, clock) = sim_logs(dirs.1.path());
    let before = sim.syncs_completed();
    open(logs.clone(), clock);
    let fresh = sim.syncs_completed() - before;
    assert_eq!(
        fresh,
        creating + own,
        "a fresh open synced {fresh} times: creating {n} partitions costs {creating}, the \
         coordinator's own writes {own}"
    );
    assert_pinned(&logs, topic, n);
}

/// Every partition of `topic` on `logs` keeps every record as the topic's own setting.
fn assert_pinned(logs: &LogManager, topic: &str, n: i32) {
    for p in 0..n {
        let h = logs
            .get(&TopicPartition {
                topic: topic.into(),
                partition: p,
            })
            .unwrap();
        let c = h.read().config().clone();
        assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1), "{topic}-{p}");
        for k in ["retention.ms", "retention.bytes"] {
            assert!(c.overrides.contains(k), "{topic}-{p}: {k} not its own");
        }
    }
}

#[test]
fn a_fresh_offsets_topic_costs_the_syncs_of_creating_its_partitions() {
    let n = GroupConfig::default().offsets_topic_partitions;
    assert_a_fresh_open_syncs_only_the_creation("__consumer_offsets", n, |logs, clock| {
        drop(GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap());
    });
}

#[test]
fn a_fresh_transaction_state_topic_costs_the_syncs_of_creating_its_partitions() {
    let n = TxnConfig::default().transaction_state_partitions;
    assert_a_fresh_open_syncs_only_the_creation("__transaction_state", n, |logs, clock| {
        let txns =
            TxnCoordinator::open(logs, Arc::new(NoOffsets), clock, TxnConfig::default()).unwrap();
        drop(txns);
    });
}
