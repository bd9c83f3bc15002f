//! Kafka answers a batch larger than the partition's fetch limit whole only in the first
//! partition of the answer that has data (KIP-74; `ReplicaManager.readFromLog`'s
//! `minOneMessage`); later partitions get at most their limit, so no whole batch. Kafka's
//! fetchers move the partitions they got data for to the end of the next request
//! (`PartitionStates.updateAndMoveToEnd`); the mirror asked in the same order every round, so a
//! busy partition earlier in that order kept a later one's large batch out for as long as it
//! had data. Driven by hand, one fetch round at a time.

use crate::common;

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

/// The same with fetchers per source node: each starts its requests at another partition
/// every round of its own, whatever rounds the other node's fetcher makes in between (counted
/// by the mirror for all fetchers, a fetcher alternating with another saw only every other
/// count and started at the same partition every round).
#[test]
fn a_large_batch_is_fetched_whatever_rounds_another_nodes_fetcher_makes() {
    use common::{all_failed, two_nodes};
    use mirrorlog_index::LeaderEpoch;
    use mirrorlog_mirror::source::SourceCluster;
    let mut config = MirrorConfig::new("m");
    config.partition_fetch_max_bytes = 1024;
    let w = hooked_world(
        3,
        config,
        Hooks {
            // Node 1 leads partition 0; node 2 leads partitions 1 and 2.
            metadata: Some(two_nodes(|p| (if p == 0 { 1 } else { 2 }, LeaderEpoch(0)))),
            fetch: Some(Box::new(|inner, node, request| {
                let wrong = request
                    .partitions
                    .iter()
                    .any(|p| (p.partition == 0) != (node == 1));
                if wrong {
                    return Ok(all_failed(request, 6));
                }
                // The engine source is node 1, whichever node this plays.
                inner.fetch(1, request)
            })),
            ..Hooks::default()
        },
    );
    w.mirror.sync().unwrap();
    // One batch of 20 records of 200 bytes: above the 1024-byte partition limit.
    produce_to(&w.src, &orders(2), &[b'x'; 200], 20);
    let end = |p| w.dst.get(&orders(p)).unwrap().read().log_end_offset();
    let mut on_1 = w.mirror.pipelined_fetcher_of(1, 0);
    let mut on_2 = w.mirror.pipelined_fetcher_of(2, 0);
    // Partition 1 has new records at every round; node 1's fetcher makes a round after each
    // of node 2's.
    for _ in 0..6 {
        produce_to(&w.src, &orders(1), b"v", 1);
        let got = w.mirror.fetch_ahead(&mut on_2, 1 << 20);
        w.mirror.apply_ahead(&on_2, got);
        let got = w.mirror.fetch_ahead(&mut on_1, 1 << 20);
        w.mirror.apply_ahead(&on_1, got);
    }
    assert_eq!(end(1), Offset(6), "partition 1 keeps up");
    assert_eq!(end(2), Offset(20), "partition 2's batch was never fetched");
}
