//! Kafka answers a batch larger than the partition's fetch limit whole only in the first
//! partition of the answer that has data (KIP-74; `ReplicaManager.readFromLog`'s
//! `minOneMessage`); later partitions get at most their limit, so no whole batch. Kafka's
//! fetchers move the partitions they got data for to the end of the next request
//! (`PartitionStates.updateAndMoveToEnd`); the mirror asked in the same order every round, so a
//! busy partition earlier in that order kept a later one's large batch out for as long as it
//! had data. Driven by hand, one fetch round at a time.

mod common;

use common::{Hooks, hooked_world, orders, produce_to};
use mirrorlog_index::Offset;
use mirrorlog_mirror::manager::MirrorConfig;

#[test]
fn a_large_batch_behind_a_busy_partition_is_fetched() {
    let mut config = MirrorConfig::new("m");
    config.partition_fetch_max_bytes = 1024;
    let w = hooked_world(2, config, Hooks::default());
    // One batch of 20 records of 200 bytes: above the 1024-byte partition limit.
    produce_to(&w.src, &orders(1), &[b'x'; 200], 20);
    let end = |p| w.dst.get(&orders(p)).unwrap().read().log_end_offset();
    // Partition 0 has new records at every round.
    for round in 0..4 {
        produce_to(&w.src, &orders(0), b"v", 1);
        w.mirror.fetch_round(0);
        assert_eq!(end(0), Offset(round + 4), "partition 0 keeps up");
    }
    assert_eq!(end(1), Offset(20), "partition 1's batch was never fetched");
}
