//! Kafka answers a batch larger than the partition's fetch limit whole only in the first
//! partition of the answer that has data (KIP-74; `ReplicaManager.readFromLog`'s
//! `minOneMessage`); later partitions get at most their limit, so no whole batch. Kafka's
//! fetchers move the partitions they got data for to the end of the next request
//! (`PartitionStates.updateAndMoveToEnd`); the mirror asked in the same order every round, so a
//! busy partition earlier in that order kept a later one's large batch out for as long as it
//! had data. Driven by hand, one fetch round at a time.

mod common;

use common::{Dest, T0, manager, orders, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, TopicId};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use std::sync::Arc;

#[test]
fn a_large_batch_behind_a_busy_partition_is_fetched() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    for p in 0..2 {
        src.create(&orders(p), TopicId([1; 16]), LogConfig::default())
            .unwrap();
    }
    // One batch of 20 records of 200 bytes: above the 1024-byte partition limit.
    produce_to(&src, &orders(1), &[b'x'; 200], 20);
    let mut config = MirrorConfig::new("m");
    config.partition_fetch_max_bytes = 1024;
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        config,
        EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    let end = |p| dst.get(&orders(p)).unwrap().read().log_end_offset();
    // Partition 0 has new records at every round.
    for round in 0..4 {
        produce_to(&src, &orders(0), b"v", 1);
        mirror.fetch_round(0);
        assert_eq!(end(0), Offset(round + 1), "partition 0 keeps up");
    }
    assert_eq!(end(1), Offset(20), "partition 1's batch was never fetched");
}
